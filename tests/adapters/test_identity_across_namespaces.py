"""Process identities across PID namespaces (issue 40: the native runtime's tools and MCP
servers now run in one): a ringleader in a child's namespace records ``(pid, start)`` with its
namespace's pid; outside it is still recognized (alive while it runs, gone after), and inside,
a process outside it — which it cannot see — is never taken for dead."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio

from adapters._process import _pid_namespace_prefix, child_env, open_child  # pyright: ignore[reportPrivateUsage]
from orchestrator.core.lifetime import ProcessIdentity

INSIDE = """
import json, sys
from orchestrator.core.lifetime import ProcessIdentity
me = ProcessIdentity.current()
outer = ProcessIdentity(int(sys.argv[1]), int(sys.argv[2]) if sys.argv[2] != "None" else None)
seen = json.dumps({"pid": me.pid, "start": me.start, "outerAlive": outer.alive()})
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write(seen)
import os
os.replace(sys.argv[3] + ".tmp", sys.argv[3])
sys.stdin.readline()
"""


@pytest.fixture(autouse=True)
def namespaces() -> None:
    if _pid_namespace_prefix() is None:
        pytest.skip("no PID namespace can be made on this machine")


async def test_an_identity_recorded_in_a_namespace_is_recognized_outside_and_back(
    tmp_path: Path,
) -> None:
    me = ProcessIdentity.current()
    env = child_env(extra={"PYTHONPATH": os.pathsep.join(sys.path)})
    out = tmp_path / "seen.json"
    argv = [sys.executable, "-c", INSIDE, str(me.pid), str(me.start), str(out)]
    async with open_child(argv, env=env, stdin=True) as child:
        with trio.fail_after(30):
            while True:  # written by the child
                if out.exists():
                    break
                await trio.sleep(0.05)
        seen = json.loads(out.read_text())
        inside = ProcessIdentity(seen["pid"], seen["start"])
        assert seen["outerAlive"] is True  # this process, outside its namespace: not "dead"
        assert inside.pid != child.pid or inside.pid == 2  # its own namespace's pid
        assert inside.alive() and inside.locate() not in (None, inside.pid)
        await child.send_line(b"bye")
        with trio.fail_after(30):
            await child.wait()
    assert not inside.alive()
