"""The managed gateway keeps its sessions in the shared state directory (issue 40: ``recover``
of an OpenClaw run needs its session after the orchestrator died), one gateway at a time: a
second manager meanwhile gets a private directory; the lock goes with the first's close."""

from __future__ import annotations

from pathlib import Path

import trio

from adapters.openclaw import GatewayManager, GatewaySettings


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
