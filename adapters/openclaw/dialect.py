"""OpenClaw's Gateway protocol (version 4) as typed frames.

The Gateway speaks JSON text frames over a WebSocket (docs/runtimes.md §3.3):

* request ``{type:"req", id, method, params}`` (we send these);
* response ``{type:"res", id, ok, payload | error:{code, message, details?, retryable?,
  retryAfterMs?}}`` — the ``agent`` method answers **twice** under one id: first
  ``status:"accepted"``, then the final result;
* event ``{type:"event", event, payload, seq?}``.

The run-level events are ``event:"agent"`` (``payload.stream`` one of ``lifecycle``,
``assistant``, ``tool``, ``item``, ``command_output``, ``usage``, ``run_status``, …) and
``event:"chat"`` (a UI-oriented duplicate of the same run). Everything here tolerates unknown
fields and unknown frame, event and stream types: they decode to the generic shapes, and the
normalizer decides what to do with them.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, TypeAlias

import attrs

from orchestrator.core.errors import ProtocolError

__all__ = [
    "PROTOCOL_VERSION",
    "AgentFrame",
    "EventFrame",
    "Frame",
    "GatewayError",
    "ResFrame",
    "UnknownFrame",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "decode_frame",
    "encode_request",
    "text_of_content",
]

PROTOCOL_VERSION: Final = 4

JsonDict: TypeAlias = dict[str, Any]


def as_dict(value: object) -> JsonDict:
    """``value`` if it is a JSON object, else ``{}``."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else ``[]``."""
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]


def as_str(value: object) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int | None:
    """``value`` if it is an integer (not a bool), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


@attrs.frozen
class GatewayError:
    """The ``error`` of a failed response."""

    code: str
    message: str
    retryable: bool = False
    retry_after_ms: int | None = None
    details: JsonDict = attrs.field(factory=dict[str, Any])

    @classmethod
    def parse(cls, value: object) -> GatewayError:
        data = as_dict(value)
        return cls(
            code=as_str(data.get("code")) or "UNKNOWN",
            message=as_str(data.get("message")) or "gateway error",
            retryable=data.get("retryable") is True,
            retry_after_ms=as_int(data.get("retryAfterMs")),
            details=as_dict(data.get("details")),
        )


@attrs.frozen
class ResFrame:
    """A response to one of our requests."""

    id: str
    ok: bool
    payload: JsonDict
    error: GatewayError | None = None

    @property
    def status(self) -> str:
        """``payload.status`` (``accepted`` / ``ok`` / ``error`` / ``timeout`` for ``agent``)."""
        return as_str(self.payload.get("status"))


@attrs.frozen
class EventFrame:
    """A server event other than ``agent`` (``chat``, ``tick``, ``health``, ``shutdown`` …)."""

    event: str
    payload: JsonDict
    seq: int | None = None

    @property
    def run_id(self) -> str:
        return as_str(self.payload.get("runId"))

    @property
    def session_key(self) -> str:
        return as_str(self.payload.get("sessionKey"))


@attrs.frozen
class AgentFrame:
    """An ``event:"agent"`` frame: one item of one run's stream."""

    run_id: str
    session_key: str
    stream: str
    data: JsonDict
    seq: int | None
    """The per-run sequence number (restarts at 1 on the error after an abort)."""
    payload: JsonDict

    @property
    def phase(self) -> str:
        return as_str(self.data.get("phase"))


@attrs.frozen
class UnknownFrame:
    """A JSON object of a frame type we do not know (tolerated, counted)."""

    type: str
    raw: JsonDict


Frame: TypeAlias = ResFrame | AgentFrame | EventFrame | UnknownFrame

FrameType: TypeAlias = Literal["req", "res", "event"]


def decode_frame(text: str | bytes) -> Frame:
    """Decode one WebSocket text frame.

    Raises:
        ProtocolError: the frame is not a JSON object.
    """
    try:
        data: object = json.loads(text)
    except ValueError as exc:
        raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise ProtocolError(f"gateway sent a frame that is not JSON: {exc}", line=raw) from None
    if not isinstance(data, dict):
        raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise ProtocolError("gateway sent a frame that is not a JSON object", line=raw)
    msg: JsonDict = data  # pyright: ignore[reportUnknownVariableType]
    kind = as_str(msg.get("type"))
    if kind == "res":
        ok = msg.get("ok") is True
        error = msg.get("error")
        return ResFrame(
            id=as_str(msg.get("id")),
            ok=ok,
            payload=as_dict(msg.get("payload")),
            error=GatewayError.parse(error) if error is not None or not ok else None,
        )
    if kind == "event":
        event = as_str(msg.get("event"))
        payload = as_dict(msg.get("payload"))
        if event == "agent":
            return AgentFrame(
                run_id=as_str(payload.get("runId")),
                session_key=as_str(payload.get("sessionKey")),
                stream=as_str(payload.get("stream")),
                data=as_dict(payload.get("data")),
                seq=as_int(payload.get("seq")),
                payload=payload,
            )
        return EventFrame(event=event, payload=payload, seq=as_int(msg.get("seq")))
    return UnknownFrame(type=kind or "<untyped>", raw=msg)


def encode_request(request_id: str, method: str, params: JsonDict) -> str:
    """One request frame as JSON text."""
    return json.dumps(
        {"type": "req", "id": request_id, "method": method, "params": params},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def text_of_content(value: object) -> str:
    """The text of a message ``content`` (a string, or the ``text`` items of a list, joined)."""
    if isinstance(value, str):
        return value
    parts = [
        as_str(as_dict(item).get("text"))
        for item in as_list(value)
        if as_dict(item).get("type") in ("text", None)
    ]
    return "\n".join(p for p in parts if p)
