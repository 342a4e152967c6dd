"""What the provider adapters share: one httpx2 client, error normalization, argument parsing."""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import attrs
import httpx2
import trio

from adapters.native.messages import ContentPart, ToolCall

from .base import ModelError, classify_status

if TYPE_CHECKING:
    import anthropic
    import openai

    StatusError: TypeAlias = anthropic.APIStatusError | openai.APIStatusError

__all__ = ["SdkErrors", "convert_error", "data_url", "parse_arguments", "shared_http_client"]


@attrs.frozen
class SdkErrors:
    """One SDK's exception classes (the Anthropic and OpenAI SDKs name theirs alike). Each
    model adapter names its own SDK's: an Anthropic run never imports the OpenAI SDK (0.4-0.9 s
    of CPU, issue 37), nor the reverse."""

    status: type[anthropic.APIStatusError] | type[openai.APIStatusError]
    connection: type[anthropic.APIConnectionError] | type[openai.APIConnectionError]
    api: type[anthropic.APIError] | type[openai.APIError]


_RUN_CLIENT: trio.lowlevel.RunVar[httpx2.AsyncClient | None] = trio.lowlevel.RunVar(
    "native_shared_http_client"
)
_outside_trio: list[httpx2.AsyncClient] = []


def shared_http_client() -> httpx2.AsyncClient:
    """The httpx2 client every SDK client of this trio run is built on (connection reuse). It
    lives as long as the run: when the run ends it is closed, its pooled keep-alive connections
    with it (none is left to the garbage collector, none is reused by a later run). Outside a
    trio run (an SDK client built before ``trio.run``): one process-wide client."""
    try:
        client = _RUN_CLIENT.get(None)
    except RuntimeError:  # not in a trio run
        if not _outside_trio or _outside_trio[0].is_closed:
            _outside_trio[:] = [_new_http_client()]
        return _outside_trio[0]
    if client is None or client.is_closed:
        client = _new_http_client()
        _RUN_CLIENT.set(client)
        trio.lowlevel.spawn_system_task(_close_when_the_run_ends, client, name="native http")
    return client


def _new_http_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(600.0, connect=10.0),
        limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=100),
    )


async def _close_when_the_run_ends(client: httpx2.AsyncClient) -> None:
    """A system task: trio cancels it when the run's main task returns."""
    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after-ms")
        if value is not None:
            return float(value) / 1000.0
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def convert_error(exc: BaseException, errors: SdkErrors) -> ModelError | None:
    """An exception of the SDK whose classes are ``errors`` as a :class:`ModelError` (None for
    anything else)."""
    if isinstance(exc, errors.status):
        status = exc.status_code
        message = _status_message(exc)
        return ModelError(
            f"HTTP {status}: {message}",
            classify_status(status, message),
            status,
            _retry_after(exc.response.headers),
        )
    if isinstance(exc, (errors.connection, httpx2.TransportError)):
        return _connection_error(exc)
    if isinstance(exc, errors.api):
        return ModelError(f"{type(exc).__name__}: {exc}", classify_status(None, str(exc)))
    return None


_LOOPBACK_HOSTS = ("127.", "localhost", "::1", "[::1]")


def _connection_error(exc: BaseException) -> ModelError:
    """A failed connection, naming the URL and the underlying cause; refused by a loopback
    address it is ``unreachable`` (nothing listens here: retrying cannot help)."""
    request: Any = getattr(exc, "request", None)
    url: Any = None
    try:
        url = request.url if request is not None else None
    except RuntimeError:  # httpx raises when an exception carries no request
        url = None
    cause = exc.__cause__ or exc.__context__
    detail = (
        f"{type(cause).__name__}: {cause}" if cause is not None else f"{type(exc).__name__}: {exc}"
    )
    where = f" to {url}" if url is not None else ""
    refused = _refused(exc)
    if refused and "refused" not in detail.lower():
        detail += " (connection refused)"
    host = str(getattr(url, "host", "") or "")
    code: Literal["unreachable", "network"] = (
        "unreachable" if refused and host.startswith(_LOOPBACK_HOSTS) else "network"
    )
    return ModelError(f"connection{where} failed: {detail}", code)


def _refused(exc: BaseException, depth: int = 0) -> bool:
    """Whether a connection refusal is somewhere in the exception's chain (trio reports one
    per address tried, in an exception group)."""
    if isinstance(exc, ConnectionRefusedError):
        return True
    if depth > 8:
        return False
    if isinstance(exc, BaseExceptionGroup):
        members = cast(tuple[BaseException, ...], exc.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if any(_refused(e, depth + 1) for e in members):
            return True
    nxt = exc.__cause__ or exc.__context__
    return nxt is not None and _refused(nxt, depth + 1)


def _status_message(exc: StatusError) -> str:
    body: Any = exc.body
    if isinstance(body, dict):
        err: Any = cast(dict[str, Any], body).get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):  # pyright: ignore[reportUnknownMemberType]
            return str(err["message"])  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(err, str):
            return err
    return str(exc.message)


def parse_arguments(name: str, raw: str, call_id: str | None) -> ToolCall:
    """A tool call from JSON text; bad JSON keeps the raw text and a ``parse_error`` (C#12).

    A call without an id (Chat Completions providers that omit it) gets a unique one: ids
    pair each result with its call in the history and bind an approval to its call."""
    call_id = call_id or f"call_{secrets.token_hex(12)}"
    if not raw.strip():
        return ToolCall(tool_name=name, input_args={}, id=call_id)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCall(tool_name=name, input_args=raw, id=call_id, parse_error=str(exc))
    return ToolCall(tool_name=name, input_args=value, id=call_id)


def data_url(part: ContentPart) -> str | None:
    src = part.source
    if src is None:
        return None
    if src.type == "url":
        return src.url
    return f"data:{src.media_type};base64,{src.data or ''}"
