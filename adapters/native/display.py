"""The display manager (Glove's ``Displaymanager``) on trio: a stack of UI slots tools push.

A tool shows something with :meth:`DisplayManager.push_and_forget` (a receipt) or asks with
:meth:`DisplayManager.push_and_wait` (a clipboard: the tool blocks until a UI calls
:meth:`~DisplayManager.resolve` or :meth:`~DisplayManager.reject`). Listeners subscribed with
:meth:`~DisplayManager.subscribe` are awaited in order with a copy of the stack on *every* change:
a push, a resolve, a reject, a ``remove_slot``, a ``clear_stack`` and a waiter's cancellation.

Renderers (:meth:`~DisplayManager.register_renderer`) name a UI component and carry pydantic
models for its input and its answer; a push to a registered renderer validates the input, a
resolve validates the answer (a bad answer raises :class:`SlotValueError` to the UI and leaves
the slot pending), and :meth:`~DisplayManager.renderer_schemas` gives their JSON schemas to a UI.

Display strategies decide what happens to a slot once it is answered or superseded:

* ``"stay"`` (the default of ``push_and_forget``) — the slot stays on the stack, answered or not,
  until ``remove_slot`` / ``clear_stack``;
* ``"hide-on-complete"`` (the default of ``push_and_wait``, Glove core's behaviour) — the slot
  leaves the stack when it is resolved or rejected;
* ``"hide-on-new"`` — the slot leaves the stack when a newer slot *from the same tool* (or the
  same renderer, for slots pushed outside a tool) is pushed.

Where we differ from Glove, on purpose: a cancelled ``push_and_wait`` (a run aborted while a
question is open) removes its slot and notifies, so an abort never leaves a dead question on the
stack and never hangs; ``clear_stack`` rejects pending waiters instead of leaving them pending
forever; ``resolve``/``reject``/``remove_slot`` notify listeners too (they are ``async``).

:class:`DisplayManagerAdapter` is the protocol (Glove's ``DisplayManagerAdapter``): a Glove, its
tools and its sub-agents accept any object that implements it, so a UI can bring its own display
manager; :class:`DisplayManager` is the built-in implementation.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs
import trio
from pydantic import BaseModel, ValidationError

__all__ = [
    "DisplayManager",
    "DisplayManagerAdapter",
    "DisplayStrategy",
    "Listener",
    "Renderer",
    "Slot",
    "SlotRejectedError",
    "SlotStatus",
    "SlotValueError",
]

DisplayStrategy: TypeAlias = Literal["stay", "hide-on-complete", "hide-on-new"]
SlotStatus: TypeAlias = Literal["shown", "pending", "resolved", "rejected"]
"""``shown``: a ``push_and_forget`` slot; ``pending``: a waiter is blocked on it."""

_NOTIFY_GRACE_S = 1.0


class SlotRejectedError(Exception):
    """The UI rejected a ``push_and_wait`` slot (or the stack was cleared under it)."""


class SlotValueError(ValueError):
    """A slot's input or answer does not match its renderer's schema."""


@attrs.frozen
class Renderer:
    """A named UI component with the models of its input and (optionally) its answer."""

    name: str
    input_model: type[BaseModel] | None = None
    output_model: type[BaseModel] | None = None

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "input": self.input_model.model_json_schema() if self.input_model else None,
            "output": self.output_model.model_json_schema() if self.output_model else None,
        }


@attrs.define
class Slot:
    """One entry of the stack (bottom first). ``value``/``error`` are set once it is answered."""

    id: str
    renderer: str
    input: Any
    strategy: DisplayStrategy = "stay"
    status: SlotStatus = "shown"
    tool_name: str | None = None
    tool_call_id: str | None = None
    created_at: float = attrs.field(factory=time.time)
    value: Any = None
    error: str | None = None


@attrs.define
class _Waiter:
    event: trio.Event = attrs.field(factory=trio.Event)
    value: Any = None
    error: str | None = None


Listener: TypeAlias = Callable[[list[Slot]], Awaitable[None]]


@runtime_checkable
class DisplayManagerAdapter(Protocol):
    """What a display manager must do (Glove's ``DisplayManagerAdapter``); implement it to plug
    your own into a :class:`~.glove.Glove` (``display_manager=``)."""

    @property
    def stack(self) -> list[Slot]:
        """The slots, bottom first."""
        ...

    @property
    def renderers(self) -> dict[str, Renderer]: ...

    def register_renderer(
        self,
        name: str,
        input_model: type[BaseModel] | None = None,
        output_model: type[BaseModel] | None = None,
    ) -> Renderer: ...

    def subscribe(self, listener: Listener) -> Callable[[], None]: ...

    async def notify(self) -> None: ...

    async def push_and_forget(
        self,
        input: Any,
        renderer: str = "generic",
        *,
        strategy: DisplayStrategy = "stay",
        tool_name: str | None = None,
        tool_call_id: str | None = None,
    ) -> str: ...

    async def push_and_wait(
        self,
        input: Any,
        renderer: str = "generic",
        *,
        strategy: DisplayStrategy = "hide-on-complete",
        tool_name: str | None = None,
        tool_call_id: str | None = None,
    ) -> Any: ...

    async def resolve(self, slot_id: str, value: Any) -> bool: ...

    async def reject(self, slot_id: str, error: str) -> bool: ...

    async def remove_slot(self, slot_id: str) -> bool: ...

    async def clear_stack(self) -> None: ...


@attrs.define
class DisplayManager:
    """See the module docstring."""

    stack: list[Slot] = attrs.field(factory=list[Slot])
    listeners: list[Listener] = attrs.field(factory=list[Listener])
    renderers: dict[str, Renderer] = attrs.field(factory=dict[str, Renderer])
    _waiters: dict[str, _Waiter] = attrs.field(factory=dict[str, _Waiter])
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    # -- renderers and listeners ---------------------------------------------------------------

    def register_renderer(
        self,
        name: str,
        input_model: type[BaseModel] | None = None,
        output_model: type[BaseModel] | None = None,
    ) -> Renderer:
        renderer = Renderer(name, input_model, output_model)
        self.renderers[name] = renderer
        return renderer

    def renderer_schemas(self) -> list[dict[str, Any]]:
        """The JSON schemas of every registered renderer (for a UI to build its forms)."""
        return [r.schema() for r in self.renderers.values()]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(stack)`` on every change; returns the unsubscribe function."""
        self.listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self.listeners:
                self.listeners.remove(listener)

        return unsubscribe

    async def notify(self) -> None:
        """Await every listener in order with a copy of the stack."""
        for listener in tuple(self.listeners):
            await listener(list(self.stack))

    # -- pushing -------------------------------------------------------------------------------

    async def push_and_forget(
        self,
        input: Any,
        renderer: str = "generic",
        *,
        strategy: DisplayStrategy = "stay",
        tool_name: str | None = None,
        tool_call_id: str | None = None,
    ) -> str:
        """Show a slot; returns its id. It stays until its strategy or the host removes it."""
        slot = self._new_slot(input, renderer, strategy, "shown", tool_name, tool_call_id)
        await self.notify()
        return slot.id

    async def push_and_wait(
        self,
        input: Any,
        renderer: str = "generic",
        *,
        strategy: DisplayStrategy = "hide-on-complete",
        tool_name: str | None = None,
        tool_call_id: str | None = None,
    ) -> Any:
        """Show a slot and wait for the UI's answer (raises :class:`SlotRejectedError` on a
        reject). A cancel (e.g. the run is aborted) removes the slot and notifies, shielded
        for a short grace, then lets the cancellation through."""
        slot = self._new_slot(input, renderer, strategy, "pending", tool_name, tool_call_id)
        waiter = _Waiter()
        self._waiters[slot.id] = waiter
        try:
            await self.notify()
            await waiter.event.wait()
        except BaseException:
            if not waiter.event.is_set():
                self._waiters.pop(slot.id, None)
                self._drop(slot.id)
                with trio.CancelScope(shield=True) as scope:
                    scope.deadline = trio.current_time() + _NOTIFY_GRACE_S
                    await self.notify()
            raise
        if waiter.error is not None:
            raise SlotRejectedError(waiter.error)
        return waiter.value

    def _new_slot(
        self,
        input: Any,
        renderer: str,
        strategy: DisplayStrategy,
        status: SlotStatus,
        tool_name: str | None,
        tool_call_id: str | None,
    ) -> Slot:
        spec = self.renderers.get(renderer)
        if (
            spec is not None
            and spec.input_model is not None
            and not isinstance(input, spec.input_model)
        ):
            try:
                input = spec.input_model.model_validate(input)
            except ValidationError as exc:
                raise SlotValueError(f"input for renderer {renderer!r}: {exc}") from exc
        if isinstance(input, BaseModel):
            input = input.model_dump(mode="json")
        owner = tool_name or renderer
        superseded = {
            s.id
            for s in self.stack
            if s.strategy == "hide-on-new" and (s.tool_name or s.renderer) == owner
        }
        if superseded:
            self.stack[:] = [s for s in self.stack if s.id not in superseded]
        slot = Slot(
            f"slot_{next(self._ids)}",
            renderer,
            input,
            strategy,
            status,
            tool_name,
            tool_call_id,
        )
        self.stack.append(slot)
        return slot

    # -- answering -----------------------------------------------------------------------------

    def pending(self) -> list[Slot]:
        """Slots a tool is waiting on, bottom first."""
        return [s for s in self.stack if s.id in self._waiters]

    def get(self, slot_id: str) -> Slot | None:
        return next((s for s in self.stack if s.id == slot_id), None)

    async def resolve(self, slot_id: str, value: Any) -> bool:
        """Answer a waiting slot; False for an unknown or already answered id."""
        waiter = self._waiters.get(slot_id)
        if waiter is None:
            await trio.lowlevel.checkpoint()
            return False
        slot = self.get(slot_id)
        spec = self.renderers.get(slot.renderer) if slot is not None else None
        if spec is not None and spec.output_model is not None:
            try:
                value = spec.output_model.model_validate(value)
            except ValidationError as exc:
                raise SlotValueError(f"answer for renderer {spec.name!r}: {exc}") from exc
        del self._waiters[slot_id]
        waiter.value = value
        waiter.event.set()
        self._settle(slot_id, "resolved", value, None)
        await self.notify()
        return True

    async def reject(self, slot_id: str, error: str) -> bool:
        """Refuse a waiting slot (its waiter raises); False for an unknown id."""
        waiter = self._waiters.pop(slot_id, None)
        if waiter is None:
            await trio.lowlevel.checkpoint()
            return False
        waiter.error = error
        waiter.event.set()
        self._settle(slot_id, "rejected", None, error)
        await self.notify()
        return True

    async def remove_slot(self, slot_id: str) -> bool:
        """Take a slot off the stack (a waiter on it is rejected); False for an unknown id."""
        waiter = self._waiters.pop(slot_id, None)
        if waiter is not None:
            waiter.error = "slot removed"
            waiter.event.set()
        found = self._drop(slot_id)
        if found:
            await self.notify()
        else:
            await trio.lowlevel.checkpoint()
        return found

    async def clear_stack(self) -> None:
        """Empty the stack; pending waiters are rejected (never left hanging)."""
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            waiter.error = "display stack cleared"
            waiter.event.set()
        self.stack.clear()
        await self.notify()

    def _settle(self, slot_id: str, status: SlotStatus, value: Any, error: str | None) -> None:
        slot = self.get(slot_id)
        if slot is None:
            return
        if slot.strategy == "hide-on-complete":
            self._drop(slot_id)
            return
        slot.status = status
        slot.value = value
        slot.error = error

    def _drop(self, slot_id: str) -> bool:
        before = len(self.stack)
        self.stack[:] = [s for s in self.stack if s.id != slot_id]
        return len(self.stack) != before

    def snapshot(self) -> list[Mapping[str, Any]]:
        """The stack as JSON-ready dicts (for a board or a status detail)."""
        return [
            {
                "id": s.id,
                "renderer": s.renderer,
                "status": s.status,
                "strategy": s.strategy,
                "toolName": s.tool_name,
                "toolCallId": s.tool_call_id,
            }
            for s in self.stack
        ]
