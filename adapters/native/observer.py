"""``Observer``: counts turns and tokens in the store and compacts when a threshold is passed.

::

    observer = Observer(store, ctx, prompt_machine, "Summarize the conversation so far.",
                        30,        # max turns before compaction
                        100_000)   # context compaction token limit
    await observer.turn_complete()
    await observer.try_compaction()
    observer.set_max_turns(10)     # thresholds change at run time

The counters live in the store (``increment_turn``, ``add_tokens``), so they survive a restart: a
resumed session already over a threshold compacts before its first model call. Compaction is
history-preserving (:mod:`.compaction`): the summary is appended with ``is_compaction=True``, the
store's turn and token counts are reset to zero, and ``compaction_start`` / ``compaction_end``
reach the subscribers. The summary call's own events are not streamed.
"""

from __future__ import annotations

import attrs

from .compaction import CompactionConfig, build_summary_message, should_compact
from .context import Context
from .messages import Message, TokenCounter
from .models.base import ModelOptions, ModelResponse, PromptRequest
from .prompt_machine import PromptMachine
from .stores.base import Store
from .subscriber import CompactionEnd, CompactionStart, discard

__all__ = ["Compaction", "Observer"]


@attrs.frozen
class Compaction:
    """What one compaction did: the appended summary and the summary call's reply (its usage)."""

    summary: Message
    response: ModelResponse


class Observer:
    """Glove's observer (see the module docstring). ``MAX_TURNS`` / ``CONTEXT_COMPACTION_LIMIT``
    are the live thresholds (``None``: that trigger is off)."""

    def __init__(
        self,
        store: Store,
        ctx: Context,
        prompt: PromptMachine,
        compaction_instructions: str,
        max_turns: int | None = None,
        context_compaction_limit: int | None = 100_000,
    ) -> None:
        self.store = store
        self.ctx = ctx
        self.prompt = prompt
        self.compaction_instructions = compaction_instructions
        self.max_turns = max_turns
        self.context_compaction_limit = context_compaction_limit

    @property
    def MAX_TURNS(self) -> int | None:
        return self.max_turns

    @property
    def CONTEXT_COMPACTION_LIMIT(self) -> int | None:
        return self.context_compaction_limit

    @classmethod
    def from_config(
        cls, store: Store, ctx: Context, prompt: PromptMachine, config: CompactionConfig
    ) -> Observer:
        return cls(
            store,
            ctx,
            prompt,
            config.compaction_instructions,
            config.max_turns,
            config.compaction_context_limit,
        )

    # -- thresholds (settable at run time) -----------------------------------------------------

    def set_compaction_instructions(self, instruction: str) -> None:
        self.compaction_instructions = instruction

    def set_max_turns(self, new_max: int | None) -> None:
        self.max_turns = new_max

    def set_context_compaction_limit(self, new_limit: int | None) -> None:
        self.context_compaction_limit = new_limit

    # -- counters (in the store) ---------------------------------------------------------------

    async def turn_complete(self) -> None:
        await self.store.increment_turn()

    async def get_current_turns(self) -> int:
        return await self.store.get_turn_count()

    async def add_tokens_consumed(self, count: int | TokenCounter) -> None:
        tokens = count if isinstance(count, TokenCounter) else TokenCounter(tokens_in=count)
        await self.store.add_tokens(tokens)

    async def get_current_token_consumption(self) -> int:
        return await self.store.get_token_count()

    # -- compaction ----------------------------------------------------------------------------

    async def needs_compaction(self) -> bool:
        limit, turns_max = self.context_compaction_limit, self.max_turns
        if limit is None and turns_max is None:
            return False
        tokens = await self.store.get_token_count() if limit is not None else 0
        turns = await self.store.get_turn_count() if turns_max is not None else 0
        return should_compact(turns_max, limit, tokens, turns)

    async def try_compaction(self) -> Compaction | None:
        """Compact if the turns or the tokens passed their threshold; ``None`` if not needed."""
        if not await self.needs_compaction():
            return None
        return await self.run_compaction_now()

    async def run_compaction_now(self) -> Compaction:
        """Summarize now, whatever the thresholds (``force_compaction`` from a hook)."""
        store, notify = self.store, self.prompt.notify
        await notify(CompactionStart(await store.get_token_count()))
        history = list(await self.ctx.get_messages())
        history.append(
            Message(sender="user", text=self.compaction_instructions, is_compaction_request=True)
        )
        request = PromptRequest(
            messages=history, tools=(), max_tokens=self.prompt.max_tokens, options=ModelOptions()
        )
        response = await self.prompt.send(request, discard)
        caps = store.capabilities
        tasks = await store.get_tasks() if caps.tasks else []
        inbox = await store.get_inbox_items() if caps.inbox else []
        summary = build_summary_message(response.text, tasks, inbox)
        await store.append_messages((summary,))
        await store.reset_counters()
        await notify(CompactionEnd(await store.get_token_count(), summary))
        return Compaction(summary, response)
