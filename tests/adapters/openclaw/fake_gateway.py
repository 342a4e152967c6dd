"""A fake OpenClaw Gateway: a real WebSocket server on 127.0.0.1 (Starlette on Hypercorn's trio
worker) that speaks protocol 4 like the real one, with frames shaped after the recorded ones.

It does the handshake (``connect.challenge`` → ``connect`` with the token → ``hello-ok``; a
wrong token is refused like the real gateway), answers ``agent`` with ``accepted`` (the final
answer comes when the test says so), answers ``chat.abort`` like OpenClaw 2026.9.6 (lifecycle
``end{aborted}`` at once; the late ``error{aborted}`` and ``status:"timeout"`` answer are the
harness's ``aborted()`` frames) and acknowledges ``sessions.abort``, ``sessions.patch``,
``agents.files.set`` and ``health``, and ``sessions.delete`` (also to :attr:`deleted_log`). Every request it received is kept in :attr:`requests`.
Tests push gateway frames to every connection with :meth:`FakeGateway.push`, and can drop the
connections (:meth:`FakeGateway.drop`) to exercise reconnects.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

__all__ = ["FakeGateway", "free_port"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@attrs.define(eq=False)
class _Conn:
    ws: WebSocket
    lock: trio.Lock = attrs.field(factory=trio.Lock)
    closed: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class FakeGateway:
    token: str = "fake-token"
    port: int = attrs.field(factory=free_port)
    boot_id: str = attrs.field(factory=lambda: str(uuid.uuid4()))
    hang: bool = False
    """Accept connections but never speak (a hung gateway)."""
    silent: bool = False
    """Record requests but answer none."""
    requests: list[dict[str, Any]] = attrs.field(factory=list[dict[str, Any]])
    runs: dict[str, str] = attrs.field(factory=dict[str, str])
    """run id → session key of every ``agent`` request."""
    caps: list[list[str]] = attrs.field(factory=list[list[str]])
    """The ``caps`` of every ``connect``."""
    sessions: dict[str, dict[str, Any]] = attrs.field(factory=dict[str, dict[str, Any]])
    """Session key → ``{"status", "messages", "running_reads"}``: what ``sessions.describe``
    (``status``; ``running`` for the first ``running_reads`` reads, as while OpenClaw's restart
    recovery continues the session) and ``sessions.get`` (``messages``) answer for it."""
    deleted_log: Path | None = None
    """Each session ``sessions.delete`` deletes is also appended here (one key a line), so a
    test sees what a fake gateway running as a child process deleted."""
    _conns: list[_Conn] = attrs.field(factory=list[_Conn])
    _seq: int = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        app = Starlette(routes=[WebSocketRoute("/", self._endpoint)])
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        config.graceful_timeout = 0.2
        await serve(app, config, task_status=task_status)  # pyright: ignore[reportArgumentType]

    # -- pushing frames ------------------------------------------------------------------------

    async def push(self, msg: dict[str, Any]) -> None:
        """Send one frame to every live connection (events get the per-connection ``seq``)."""
        if msg.get("type") == "event":
            self._seq += 1
            msg = {**msg, "seq": self._seq}
        text = json.dumps(msg)
        for conn in list(self._conns):
            if conn.closed.is_set():
                continue
            try:
                async with conn.lock:
                    await conn.ws.send_text(text)
            except Exception:
                conn.closed.set()

    async def drop(self) -> None:
        """Close every connection (code 1012, as the real gateway does on restart)."""
        for conn in list(self._conns):
            if not conn.closed.is_set():
                conn.closed.set()
                with suppress(Exception):
                    await conn.ws.close(code=1012)

    def methods(self) -> list[str]:
        return [str(r.get("method")) for r in self.requests]

    # -- the endpoint --------------------------------------------------------------------------

    async def _endpoint(self, ws: WebSocket) -> None:
        await ws.accept()
        conn = _Conn(ws)
        if self.hang:
            await trio.sleep_forever()
        try:
            await ws.send_text(
                json.dumps(
                    {
                        "type": "event",
                        "event": "connect.challenge",
                        "payload": {"nonce": str(uuid.uuid4()), "ts": 0},
                    }
                )
            )
            first = json.loads(await ws.receive_text())
            if first.get("method") != "connect":
                await ws.close(code=4008)
                return
            params: dict[str, Any] = first.get("params") or {}
            auth: dict[str, Any] = params.get("auth") or {}
            if auth.get("token") != self.token:
                await self._answer(conn, first["id"], ok=False, error={
                    "code": "INVALID_REQUEST",
                    "message": "unauthorized: gateway token mismatch",
                    "details": {"code": "AUTH_TOKEN_MISMATCH"},
                })  # fmt: skip
                await ws.close(code=4008)
                return
            caps: list[Any] = params.get("caps") or []
            self.caps.append([str(c) for c in caps])
            if "tool-events" not in (params.get("caps") or []):
                raise AssertionError("the client must advertise caps: ['tool-events']")
            await self._answer(conn, first["id"], payload={
                "type": "hello-ok", "protocol": 4,
                "server": {"version": "2026.9.6", "bootId": self.boot_id, "connId": "fake"},
                "features": {"methods": ["agent", "chat.abort", "sessions.abort"], "events": []},
                "policy": {"maxPayload": 26214400, "tickIntervalMs": 30000},
            })  # fmt: skip
            self._conns.append(conn)
            while True:
                msg = json.loads(await ws.receive_text())
                self.requests.append(msg)
                if not self.silent:
                    await self._handle(conn, msg)
        except WebSocketDisconnect:
            pass
        finally:
            conn.closed.set()
            if conn in self._conns:
                self._conns.remove(conn)

    async def _answer(
        self,
        conn: _Conn,
        request_id: str,
        *,
        ok: bool = True,
        payload: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        msg: dict[str, Any] = {"type": "res", "id": request_id, "ok": ok}
        if payload is not None:
            msg["payload"] = payload
        if error is not None:
            msg["error"] = error
        async with conn.lock:
            await conn.ws.send_text(json.dumps(msg))

    async def _handle(self, conn: _Conn, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        params: dict[str, Any] = msg.get("params") or {}
        rid = str(msg.get("id"))
        if method == "agent":
            run_id = str(params["idempotencyKey"])
            key = str(params.get("sessionKey") or "agent:main:main")
            self.runs[run_id] = key
            await self._answer(conn, rid, payload={
                "runId": run_id, "sessionKey": key, "agentId": "main",
                "status": "accepted", "acceptedAt": 0,
            })  # fmt: skip
        elif method == "chat.abort":
            run_id = str(params.get("runId") or "")
            key = self.runs.get(run_id, str(params.get("sessionKey")))
            await self.push({"type": "event", "event": "chat", "payload": {
                "runId": run_id, "sessionKey": key, "state": "aborted", "stopReason": "rpc",
            }})  # fmt: skip
            await self.push({"type": "event", "event": "agent", "payload": {
                "runId": run_id, "sessionKey": key, "stream": "lifecycle",
                "data": {"phase": "end", "status": "cancelled", "aborted": True,
                         "stopReason": "rpc"},
            }})  # fmt: skip
            await self._answer(conn, rid, payload={"ok": True, "aborted": True, "runIds": [run_id]})
        elif method == "sessions.abort":
            await self._answer(
                conn, rid, payload={"ok": True, "abortedRunId": None, "status": "no-active-run"}
            )
        elif method in ("sessions.patch", "agents.files.set", "health", "exec.approval.resolve"):
            await self._answer(conn, rid, payload={"ok": True})
        elif method == "sessions.describe" and self.sessions:
            session = self.sessions.get(str(params.get("key")))
            if session is None:
                await self._answer(conn, rid, payload={"session": None})
                return
            status = str(session["status"])
            if session.get("running_reads", 0) > 0:
                session["running_reads"] -= 1
                status = "running"
            await self._answer(
                conn, rid, payload={"session": {"key": params["key"], "status": status}}
            )
        elif method == "sessions.get" and self.sessions:
            session = self.sessions.get(str(params.get("key"))) or {}
            await self._answer(conn, rid, payload={"messages": session.get("messages", [])})
        elif method == "sessions.delete":
            key = str(params.get("key"))
            self.sessions.pop(key, None)
            if self.deleted_log is not None:
                with self.deleted_log.open("a", encoding="utf-8") as sink:
                    sink.write(key + "\n")
            await self._answer(conn, rid, payload={"ok": True, "key": key, "deleted": True})
        elif method == "fake.exit":
            os._exit(3)
        elif method == "agent.wait":
            await self._answer(conn, rid, ok=False, error={
                "code": "INVALID_REQUEST", "message": "agent run was not found",
            })  # fmt: skip
        else:
            await self._answer(conn, rid, ok=False, error={
                "code": "INVALID_REQUEST", "message": f"unknown method {method}",
            })  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run as a stand-in ``openclaw`` executable: ``<exe> gateway run --port N …``, with the
    token read from ``$OPENCLAW_CONFIG_PATH`` (what the gateway manager writes). The method
    ``fake.exit`` makes the process exit at once (a crashed gateway)."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("command", nargs="*")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bind")
    parser.add_argument("--auth")
    args = parser.parse_args(argv)
    assert args.command == ["gateway", "run"], args.command
    config = json.loads(Path(os.environ["OPENCLAW_CONFIG_PATH"]).read_text(encoding="utf-8"))
    fake = FakeGateway(
        token=config["gateway"]["auth"]["token"],
        port=args.port,
        deleted_log=Path(os.environ["OPENCLAW_STATE_DIR"]) / "deleted.txt",
    )
    print(f"fake gateway on {fake.url} state={os.environ['OPENCLAW_STATE_DIR']}", flush=True)
    trio.run(fake.serve)
