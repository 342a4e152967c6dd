"""The base every SDK-backed model adapter shares (Anthropic Messages, OpenAI Responses, Chat
Completions): names, the system prompt, one SDK client reused by :meth:`SdkModel.with_model`,
and the request scaffolding — build the parameters, call streamed or not, turn SDK failures into
:class:`~adapters.native.models.base.ModelError`. The SDKs' own retries are off
(``max_retries=0``): the loop retries, with jitter and ``Retry-After``, never after progress.

A provider adapter keeps only its wire format: :meth:`SdkModel.build_params`,
:meth:`SdkModel.call` (one non-streamed request), :meth:`SdkModel.response` (its result as a
:class:`ModelResponse`) and :meth:`SdkModel.streamed` (a streamed request, notifying deltas).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, ClassVar, Generic, Self, TypeVar

from adapters.native.subscriber import NotifyFn
from orchestrator.core.errors import ConfigError

from ._common import SdkErrors, convert_error
from .base import ModelOptions, ModelResponse, PromptRequest, SpecificTool, SystemPrompt, ToolChoice

__all__ = ["SdkModel"]

ClientT = TypeVar("ClientT")


class SdkModel(Generic[ClientT]):
    """A model adapter on a provider SDK (see the module docstring). This module imports no
    SDK: each provider's module imports its own (an Anthropic run never loads the OpenAI SDK)."""

    sdk_errors: ClassVar[SdkErrors]
    """The SDK's exception classes (:func:`~adapters.native.models._common.convert_error`)."""

    def __init__(
        self, model: str, client: ClientT, *, provider: str, max_tokens: int, stream: bool
    ) -> None:
        self._model = model
        self._provider = provider
        self._client = client
        self.max_tokens = max_tokens
        self.stream = stream
        self._system: SystemPrompt = ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._provider}:{self._model!r})"

    @property
    def name(self) -> str:
        """``provider:model``."""
        return f"{self._provider}:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    @property
    def system_text(self) -> str:
        """The system prompt as one text (an assembled prompt's full text)."""
        return self._system if isinstance(self._system, str) else self._system.prompt

    def set_system_prompt(self, prompt: SystemPrompt) -> None:
        self._system = prompt

    def with_model(self, model: str) -> Self:
        """The same provider, client, options and system prompt; another model."""
        clone = copy.copy(self)
        clone._model = model
        return clone

    max_temperature = 2.0
    """The provider's upper bound for ``temperature``."""

    def sdk_create(self) -> Any:
        """The SDK method a request goes through (its signature says what it accepts)."""
        raise NotImplementedError

    def check_options(self, options: ModelOptions) -> None:
        """Raise :class:`ConfigError` for request options this provider cannot send."""
        accepted = _parameters(self.sdk_create())
        for name in ("temperature", "tool_choice"):
            if getattr(options, name) is not None and name not in accepted:
                raise ConfigError(
                    f"{self.name}: this API (as the installed SDK exposes it) takes no {name}"
                )
        t = options.temperature
        if t is not None and not 0.0 <= t <= self.max_temperature:
            raise ConfigError(
                f"{self.name}: temperature {t} is outside 0..{self.max_temperature:g}"
            )
        reserved = sorted(set(options.additional_params or ()) & self.reserved_params)
        if reserved:
            raise ConfigError(
                f"{self.name}: additional_params may not set {', '.join(reserved)} "
                "(the agent sets them)"
            )

    reserved_params: frozenset[str] = frozenset(
        {"model", "messages", "input", "tools", "tool_choice", "stream", "system", "instructions"}
    )
    """Request fields the adapter owns; ``additional_params`` may not set them."""

    def apply_options(self, params: dict[str, Any], options: ModelOptions) -> None:
        """Put the request options into the SDK call's parameters."""
        if options.temperature is not None:
            params["temperature"] = options.temperature
        if options.tool_choice is not None and params.get("tools"):
            params["tool_choice"] = self.tool_choice_param(options.tool_choice)
        if options.additional_params:
            params["extra_body"] = dict(options.additional_params)

    def tool_choice_param(self, choice: ToolChoice) -> Any:
        """``tool_choice`` in the provider's shape (OpenAI Chat Completions by default)."""
        if isinstance(choice, SpecificTool):
            return {"type": "function", "function": {"name": choice.name}}
        return choice

    async def prompt(self, request: PromptRequest, notify: NotifyFn) -> ModelResponse:
        """One model call: streamed (notifying deltas and tool uses) or not."""
        params = self.build_params(request)
        self.apply_options(params, request.options)
        try:
            if self.stream:
                return await self.streamed(params, notify)
            raw = await self.call(params)
        except Exception as exc:
            err = convert_error(exc, self.sdk_errors)
            if err is None:
                raise
            raise err from exc
        return self.response(raw)

    def build_params(self, request: PromptRequest) -> dict[str, Any]:
        """The SDK call's parameters for ``request``."""
        raise NotImplementedError

    async def call(self, params: dict[str, Any]) -> Any:
        """One non-streamed request; the SDK's result."""
        raise NotImplementedError

    def response(self, raw: Any) -> ModelResponse:
        """A non-streamed result as a :class:`ModelResponse`."""
        raise NotImplementedError

    async def streamed(self, params: dict[str, Any], notify: NotifyFn) -> ModelResponse:
        """One streamed request, notifying text deltas and completed tool uses."""
        raise NotImplementedError


_PARAMETERS: dict[Any, frozenset[str]] = {}


def _parameters(method: Any) -> frozenset[str]:
    """The keyword parameters of an SDK method (cached per function)."""
    key = getattr(method, "__func__", method)
    known = _PARAMETERS.get(key)
    if known is None:
        known = _PARAMETERS[key] = frozenset(inspect.signature(method).parameters)
    return known
