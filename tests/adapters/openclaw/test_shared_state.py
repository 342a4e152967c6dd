"""The managed gateway keeps its sessions in the shared state directory (issue 40: ``recover``
of an OpenClaw run needs its session after the orchestrator died), one gateway at a time: a
second manager meanwhile gets a private directory; the lock goes with the first's close."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from adapters.openclaw import GatewayManager, GatewaySettings, OpenClawAdapter, OpenClawConfig
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.errors import RuntimeStartError

from .test_gateway import stand_in


async def test_one_manager_at_a_time_holds_the_shared_state(tmp_path: Path) -> None:
    shared = tmp_path / "openclaw"
    settings = GatewaySettings(shared_state_dir=shared)
    first, second = GatewayManager(settings), GatewayManager(settings)
    first._prepare_state()  # pyright: ignore[reportPrivateUsage]
    second._prepare_state()  # pyright: ignore[reportPrivateUsage]
    assert first.state_dir == shared
    assert second.state_dir is not None and second.state_dir != shared
    await second.aclose()
    assert not second.state_dir.exists()  # its private directory goes
    await first.aclose()
    assert shared.is_dir()  # the shared one stays (the sessions in it)
    third = GatewayManager(settings)
    third._prepare_state()  # pyright: ignore[reportPrivateUsage]
    assert third.state_dir == shared  # free again once the first closed
    await third.aclose()
    await trio.lowlevel.checkpoint()


async def test_a_resume_is_refused_while_another_gateway_holds_its_session(tmp_path: Path) -> None:
    """Both gateways are real child processes (the fake gateway as a stand-in ``openclaw``).
    Before: the second one ran on a private directory and the resume started a new, empty
    session without a word; now it is refused in one line saying why."""
    shared = tmp_path / "state" / "openclaw"
    settings = GatewaySettings(binary=stand_in(tmp_path), shared_state_dir=shared,
                               startup_timeout=30)  # fmt: skip
    resume = StartOpts(agent_id="a", session_key="k2", message="Continue where you left off.",
                       resume_session_id="agent:main:k1")  # fmt: skip
    async with OpenClawAdapter(OpenClawConfig(gateway=settings)) as first:
        run = await first.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k1", message="x")
        )
        assert first.manager.state_dir == shared
        async with OpenClawAdapter(OpenClawConfig(gateway=settings)) as second:
            with pytest.raises(RuntimeStartError, match="another gateway holds"):
                await second.start(TaskHandle(), resume)
            assert second.manager.without_shared_state
            # a new session is fine on the private directory
            other = await second.start(
                TaskHandle(), StartOpts(agent_id="a", session_key="k3", message="y")
            )
            await second.abort(other)
        await first.abort(run)
    async with OpenClawAdapter(OpenClawConfig(gateway=settings)) as third:  # free again
        again = await third.start(TaskHandle(), resume)
        assert not third.manager.without_shared_state
        await third.abort(again)
