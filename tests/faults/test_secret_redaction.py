"""Items 2 and 3: a key given by value never reaches storage or the wire.

A fake runtime on real pipes prints a configured key — not shaped like ``sk-…`` — in streamed
text (split across deltas), a tool call, a tool result (raw, base64, percent-encoded and
JSON-escaped) and a 401 failure, then a second run exits with it on stderr. Afterwards the key is
absent from every byte of ``events.db``, from ``ringleader replay --json`` of every run, from the
SSE stream and from the outcomes and the runs table; the state directory is 0700 and
``events.db`` 0600."""

from __future__ import annotations

import base64
import os
import stat
import sys
from pathlib import Path

import httpx2
import trio

from orchestrator.core import RuntimeRegistry
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import Feed, RecordingSink, serve_feed

from .pipe_runtime import PipeRuntime, python_argv

KEY = "acme-Zq7Xv2Lp9Wk4Rt6Yb1Nc"

PRINTS_THE_KEY = r"""
import base64, json, os, sys, urllib.parse
key = os.environ["ACME_API_KEY"]
def out(**frame):
    print(json.dumps(frame), flush=True)
out(type="init", sessionId="s-1", model="m")
out(type="text", text="my key is " + key[:6])
out(type="text", text=key[6:15])
out(type="text", text=key[15:] + " and that is all")
out(type="tool-call", id="t1", name="bash",
    input={"cmd": "echo " + key, "auth": base64.b64encode(("user:" + key).encode()).decode()})
out(type="tool-result", id="t1", name="bash", output="\n".join([
    "printed " + key,
    "url=https://example.test/?k=" + urllib.parse.quote(key, safe=""),
    "json=" + json.dumps({"k": key}),
    "b64=" + base64.b64encode(key.encode()).decode(),
]))
if sys.argv[1] == "401":
    out(type="result", ok=False, errorCode="401",
        errorMessage="unexpected status 401 Unauthorized: Incorrect API key provided: " + key)
else:
    print("fatal: auth failed for key " + key, file=sys.stderr, flush=True)
    sys.exit(1)
"""


def _encodings(key: str) -> list[bytes]:
    raw = key.encode()
    return [raw, base64.b64encode(raw).rstrip(b"=")[:-2]]


async def test_a_key_given_by_value_is_in_no_byte_of_the_log_replay_or_feed(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    db = state / "events.db"
    registry = RuntimeRegistry()
    registry.register_factory(
        "pipe",
        lambda: PipeRuntime(
            lambda opts: python_argv(PRINTS_THE_KEY, "401" if "t401" in opts.session_key else "x")
        ),
    )
    sse = bytearray()
    both_done = trio.Event()
    feed = Feed()
    async with (
        EventLog.open(db) as log,
        serve_feed(feed, log) as url,
        httpx2.AsyncClient(timeout=10, headers={"authorization": f"Bearer {url.token}"}) as http,
        trio.open_nursery() as nursery,
    ):
        feed.attach(log)

        async def listen() -> None:
            async with http.stream("GET", f"{url}/events") as answer:
                async for chunk in answer.aiter_bytes():
                    sse.extend(chunk)
                    if sse.count(b'"kind":"done"') >= 2:
                        both_done.set()

        nursery.start_soon(listen)
        runner = Runner(registry, sink=RecordingSink(log), state_dir=state, event_log=log)
        outcomes = [
            await runner.run_task(
                "pipe",
                TaskSpec(task_id=task_id, title="print it", env={"ACME_API_KEY": KEY}),
            )
            for task_id in ("t401", "texit")
        ]
        with trio.fail_after(10):
            await both_done.wait()
        runs = await log.runs()
        # the live stream ended: replay everything from the start as a reconnecting board would
        replayed = (await http.get(f"{url}/runs")).content
        for run in runs:
            replayed += (await http.get(f"{url}/runs/{run.run_key}")).content
        nursery.cancel_scope.cancel()

    assert [o.status for o in outcomes] == ["error", "error"]
    for outcome in outcomes:
        for text in (outcome.summary, outcome.error_message or "", repr(outcome)):
            assert KEY not in text
    assert "[REDACTED]" in (outcomes[0].error_message or "")
    assert b"[REDACTED]" in sse

    replay_out = b""
    for run in runs:
        result = await trio.run_process(
            [sys.executable, "-m", "orchestrator.cli", "replay", run.run_key, "--json"],
            capture_stdout=True,
            capture_stderr=True,
            env={**os.environ, "RINGLEADER_STATE_DIR": str(state)},
        )
        replay_out += result.stdout + result.stderr
    assert replay_out.count(b'"kind":"done"') == 2
    assert b"[REDACTED]" in replay_out

    stored = b"".join(p.read_bytes() for p in state.glob("events.db*"))
    for place, data in (
        ("events.db", stored),
        ("replay --json", replay_out),
        ("SSE", bytes(sse)),
        ("runs API", replayed),
    ):
        for needle in _encodings(KEY):
            assert needle not in data, f"{place} holds the key ({needle!r})"

    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
