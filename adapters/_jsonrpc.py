"""JSON-RPC 2.0 over a line transport: the client side every stdio-RPC runtime shares.

Used by the ACP adapter (Hermes, Gemini CLI, any ``--acp-command``) and by ``ringleader acp``
(the server side reuses :func:`decode_rpc_line` and :func:`rpc_kind`). One message per line::

    rpc = JsonRpcClient(child.send_line, adapter="acp")
    # the reader task: rpc.resolve(message) for every response, answer requests, route the rest
    result = await rpc.request("session/new", {"cwd": cwd, "mcpServers": []})

A message with ``id`` and ``result``/``error`` is a response, with ``id`` and ``method`` a request
from the other side, with only ``method`` a notification. Decoding never builds more than the
dict ``json.loads`` gives; the accessors below read it without trusting its shape.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import Any, Final, Literal, TypeAlias

import attrs
import trio

from orchestrator.core.errors import RuntimeReportedError, redact_secrets

from ._json import as_dict, as_float, as_int, as_list, as_str, json_object

__all__ = [
    "INVALID_PARAMS",
    "METHOD_NOT_FOUND",
    "JsonRpcClient",
    "RpcErrorReply",
    "RpcKind",
    "RpcMessage",
    "answer_request",
    "as_dict",
    "as_float",
    "as_int",
    "as_list",
    "as_str",
    "decode_rpc_line",
    "rpc_kind",
]

RpcMessage: TypeAlias = dict[str, Any]
RpcKind: TypeAlias = Literal["response", "request", "notification", "invalid"]

METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602


@attrs.frozen
class RpcErrorReply:
    """What a request handler returns to answer with a JSON-RPC error instead of a result."""

    code: int
    message: str


async def answer_request(
    rpc: JsonRpcClient,
    message: Mapping[str, Any],
    handle: Callable[[str, dict[str, Any]], Awaitable[Any]],
) -> None:
    """Answer one request of the peer with what ``handle(method, params)`` returns: a result,
    or an :class:`RpcErrorReply`. A peer gone meanwhile is no error here (its run ends through
    the reader)."""
    reply = await handle(as_str(message.get("method")), as_dict(message.get("params")))
    request_id = message.get("id")
    with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        if isinstance(reply, RpcErrorReply):
            await rpc.respond_error(request_id, reply.code, reply.message)
        else:
            await rpc.respond(request_id, reply)


def decode_rpc_line(line: bytes | str, *, adapter: str) -> RpcMessage:
    """Decode one line; raises :class:`ProtocolError` unless it is a JSON object."""
    return json_object(line, json.loads, runtime=adapter, adapter=adapter)


def rpc_kind(message: Mapping[str, Any]) -> RpcKind:
    """Response (``id`` + ``result``/``error``), request (``id`` + ``method``), or
    notification (``method`` only)."""
    has_method = isinstance(message.get("method"), str)
    if "id" in message:
        if has_method:
            return "request"
        if "result" in message or "error" in message:
            return "response"
        return "invalid"
    return "notification" if has_method else "invalid"


class JsonRpcClient:
    """The requesting side of a JSON-RPC connection over a line transport.

    ``send`` writes one line (without the newline); the connection's reader passes every response
    to :meth:`resolve` and calls :meth:`close` when the transport ends. ``version`` adds the
    ``"jsonrpc": "2.0"`` member (ACP requires it; Codex's app-server does without).
    """

    def __init__(
        self,
        send: Callable[[bytes], Awaitable[Any]],
        *,
        adapter: str,
        version: bool = True,
    ) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._adapter = adapter
        self._head: dict[str, Any] = {"jsonrpc": "2.0"} if version else {}
        self.closed = False
        self.unawaited: set[int] = set()
        """Ids of requests sent with :meth:`send_request` (their responses are the reader's)."""

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send a request and wait for its result; an error response raises
        :class:`RuntimeReportedError` (code = the JSON-RPC error code), a transport that ends
        first raises :class:`trio.BrokenResourceError`, one already closed
        :class:`trio.ClosedResourceError`."""
        if self.closed:
            raise trio.ClosedResourceError(f"the {self._adapter} connection is closed")
        request_id = next(self._ids)
        pending = _Pending()
        self._pending[request_id] = pending
        message: dict[str, Any] = {**self._head, "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(json.dumps(message).encode())
            await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        if pending.closed:
            raise trio.BrokenResourceError(f"{self._adapter} closed before answering {method}")
        if pending.error is not None:
            error = pending.error
            text = redact_secrets(str(error.get("message") or error))
            raise RuntimeReportedError(
                f"{method}: {text}", code=str(error.get("code")), adapter=self._adapter
            )
        return pending.result

    async def send_request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a request whose response the caller reads itself (it is not resolved here: a
        reader that sees a response no one waits for passes it on); returns its id."""
        if self.closed:
            raise trio.ClosedResourceError(f"the {self._adapter} connection is closed")
        request_id = next(self._ids)
        self.unawaited.add(request_id)
        message: dict[str, Any] = {**self._head, "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self._send(json.dumps(message).encode())
        return request_id

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {**self._head, "method": method}
        if params is not None:
            message["params"] = params
        await self._send(json.dumps(message).encode())

    async def respond(self, request_id: Any, result: Any) -> None:
        await self._send(json.dumps({**self._head, "id": request_id, "result": result}).encode())

    async def respond_error(self, request_id: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        await self._send(json.dumps({**self._head, "id": request_id, "error": error}).encode())

    def resolve(self, message: Mapping[str, Any]) -> bool:
        """Route a response to its pending request; False if nobody waits for it."""
        request_id = message.get("id")
        pending = self._pending.get(request_id) if isinstance(request_id, int) else None
        if pending is None:
            return False
        error = message.get("error")
        if error is not None:
            pending.error = as_dict(error) or {"message": str(error)}
        else:
            pending.result = message.get("result")
        pending.done.set()
        return True

    def close(self) -> None:
        """The transport ended: every pending request fails with ``BrokenResourceError``."""
        self.closed = True
        for pending in self._pending.values():
            pending.closed = True
            pending.done.set()


@attrs.define
class _Pending:
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: dict[str, Any] | None = None
    closed: bool = False
