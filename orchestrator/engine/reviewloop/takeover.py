"""Taking a run over by hand: the command that opens the runtime's own interactive CLI on the
run's recorded session, in the run's working directory, with the home and environment its runs
used (``ringleader open``).

The runtime's adapter says how (:class:`~orchestrator.core.adapter.InteractiveRuntime`: Claude
Code ``claude --resume ID``, Codex ``codex resume ID``); a runtime without an interactive mode
(native, scripted, ACP agents, OpenClaw, Hermes) is refused with a
:class:`~orchestrator.core.errors.CapabilityError` naming ``run --resume`` instead. The home is
the one the runner gives that runtime's runs: the persistent per-identity home under
``<state_dir>/homes/<runtime>/<agent>`` when the runtime keeps one.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from orchestrator.core.adapter import InteractiveRuntime
from orchestrator.core.errors import CapabilityError, ConfigError
from orchestrator.core.integration import resolve_runtime_integration
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.eventlog import RunRecorder
from orchestrator.engine.reviewloop.comments import resolve_commented_run

__all__ = ["TakeOver", "take_over"]


@attrs.frozen
class TakeOver:
    """What to exec: ``argv`` with ``env`` in ``cwd``, continuing ``session_id`` of
    ``run_key`` on ``runtime_id``."""

    run_key: str
    runtime_id: str
    session_id: str
    cwd: str
    argv: tuple[str, ...]
    env: dict[str, str] = attrs.field(repr=False)


def _safe(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cleaned.strip(".") or "_"


async def take_over(
    log: RunRecorder, registry: RuntimeRegistry, run_key: str, *, state_dir: Path
) -> TakeOver:
    """The interactive command for run ``run_key`` (``last``: the newest run with a session).

    Raises:
        ConfigError: no such run, no session, a run still running, or its directory is gone.
        CapabilityError: the runtime has no interactive mode.
    """
    run_key, session = await resolve_commented_run(log, run_key)
    runtime_id = session.runtime_id
    row = next((r for r in await log.runs() if r.run_key == run_key), None)
    if row is not None and row.status == "running":
        raise ConfigError(
            f"run {run_key!r} is still running; wait for it to end (or abort it) before taking "
            "its session over"
        )
    adapter = registry.create(runtime_id)
    try:
        if not isinstance(adapter, InteractiveRuntime):
            raise CapabilityError(
                f"runtime {runtime_id!r} has no interactive mode to open; continue the session "
                f"with `ringleader run --resume {run_key} 'PROMPT'`",
                actor_id=run_key,
            )
        session_id = session.native_session_id
        codec = adapter.session_codec
        if codec is not None and session.codec_blob:
            try:
                session_id = (await codec.restore(session.codec_blob)).run_id or session_id
            except Exception as exc:
                raise ConfigError(
                    f"run {run_key!r}: its recorded session cannot be restored by {runtime_id}: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
        if not session_id:
            raise ConfigError(f"run {run_key!r} recorded no session id to open")
        cwd = session.origin_cwd or ""
        if not await trio.Path(cwd).is_dir():
            raise ConfigError(f"run {run_key!r} worked in {cwd}, which is gone")
        home: str | None = None
        plan = resolve_runtime_integration(adapter.capabilities())
        if plan.home.kind == "persistent":
            agent = session.agent_id or "agent"
            home = str(state_dir / "homes" / _safe(runtime_id) / _safe(agent))
        sid = session_id
        argv, env = await trio.to_thread.run_sync(
            lambda: adapter.interactive_command(sid, cwd=cwd, home_dir=home)
        )
    finally:
        await adapter.aclose()
    return TakeOver(run_key, runtime_id, sid, cwd, tuple(argv), dict(env))
