"""The gateway manager's managed mode with a stand-in ``openclaw`` executable (the fake gateway
as a real child process): config and state written, started through the shared child-process
driver, restarted when it crashed, gone when the adapter closes."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import trio

from adapters.openclaw import GatewaySettings, ModelProvider, OpenClawAdapter, OpenClawConfig
from contract import check_stream, collect_run
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.errors import RuntimeExitedError, RuntimeStartError

REPO = Path(__file__).resolve().parents[3]


def stand_in(tmp_path: Path, body: str | None = None) -> str:
    exe = tmp_path / "openclaw"
    body = body or (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from tests.adapters.openclaw.fake_gateway import main\n"
        "main(sys.argv[1:])\n"
    )
    exe.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_managed_gateway_starts_restarts_after_a_crash_and_stops(tmp_path: Path) -> None:
    provider = ModelProvider(base_url="http://127.0.0.1:9/v1", api_key="sk-managed-12345678")
    settings = GatewaySettings(provider=provider, binary=stand_in(tmp_path),
                               state_dir=tmp_path / "state", startup_timeout=30)  # fmt: skip
    adapter = OpenClawAdapter(OpenClawConfig(gateway=settings))
    async with adapter:
        health = await adapter.health()
        assert health.ok and "starts on first run" in (health.message or "")
        assert adapter.manager.child is None  # nothing started before start()
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="hi")
        )
        child = adapter.manager.child
        assert child is not None and alive(child.pid)
        config_path = tmp_path / "state" / "openclaw.json5"
        assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
        config = json.loads(config_path.read_text())
        assert config["gateway"]["bind"] == "loopback"
        assert config["gateway"]["auth"]["token"] not in " ".join(child.argv)
        assert "sk-managed" not in " ".join(child.argv)
        await adapter.abort(run)
        # the gateway crashes: the next run starts it again on the same state directory
        client = adapter.manager.client
        assert client is not None
        with pytest.raises(RuntimeExitedError, match="connection lost"):
            await client.request("fake.exit", {}, timeout_s=5)
        with trio.fail_after(10):
            await child.wait()
        assert not alive(child.pid)
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="again")
        )
        assert adapter.manager.starts == 2
        second = adapter.manager.child
        assert second is not None and alive(second.pid)
        await adapter.abort(run)
        events = await collect_run(adapter.events(run), deadline_s=10)
        check_stream(events)
    assert not alive(second.pid)  # the gateway ends with the adapter
    assert adapter.manager.child is None


async def test_a_gateway_that_dies_at_start_is_a_start_error_with_its_log(tmp_path: Path) -> None:
    exe = stand_in(
        tmp_path, "print('config invalid: models.providers', flush=True)\nraise SystemExit(78)\n"
    )
    settings = GatewaySettings(binary=exe, state_dir=tmp_path / "state", startup_timeout=3)
    async with OpenClawAdapter(OpenClawConfig(gateway=settings)) as adapter:
        with pytest.raises(RuntimeStartError, match="config invalid"):
            await adapter.start(TaskHandle(), StartOpts(agent_id="a", session_key="k", message="x"))
