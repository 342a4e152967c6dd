"""Issue 36, the app layer reachable without Python: hooks, handler skills, content skills and
sub-agents declared in ``ringleader.toml`` and used from ``ringleader run`` against the scripted
model server; ``ringleader inbox`` lists and resolves a run's inbox items. The handlers are the
seed's own examples (``glove-hooks-skills-subagents.txt``)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from adapters.native_spec import NATIVE
from orchestrator.cli.main import main
from orchestrator.core.config import load_config, trust_directory
from orchestrator.core.errors import ConfigError

APP = '''
from adapters.native import HookResult, Message, ShortCircuit


async def stop(ctx):  # the seed's "stop" hook: a canned answer, no model call
    return HookResult(short_circuit=ShortCircuit(message=Message(sender="agent", text="Stopped.")))


def formal(ctx):  # the seed's "formal" recipe (a sync handler is fine)
    return HookResult(rewrite_text=ctx.parsed_text.replace("gonna", "going to"))


async def concise(ctx):  # the seed's "concise" skill
    return f"Be terse. (source={ctx.source}, hint={ctx.args or 'none'})"


class WeatherProxy:
    """The seed's "external agent / API proxy": a runnable that is not a Glove."""

    async def process_request(self, request, cancel=None):
        return Message(sender="agent", text=f"Sunny in {request}.")


def weather(ctx):  # a sub-agent factory
    return WeatherProxy()
'''

CONFIG = """
[runtimes.native.hooks]
stop = "team_app:stop"
formal = "team_app:formal"

[runtimes.native.skills.concise]
handler = "team_app:concise"
description = "Tighter, snappier responses"
expose_to_agent = true

[runtimes.native.skills.python-debug]
dir = "docs/skills/python-debug"

[runtimes.native.subagents.weather]
factory = "team_app:weather"
description = "Run the weather subagent. Use for weather questions."
"""


@pytest.fixture(autouse=True)
def trusted(tmp_path: Path) -> None:
    """The project is the user's own: trusted (an untrusted directory's ringleader.toml may not
    name Python code to run), for each user config directory these tests use."""
    for xdg in ("cfg", "none"):
        trust_directory(tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / xdg)})


def write_project(tmp_path: Path, script: dict[str, Any]) -> Path:
    (tmp_path / "team_app.py").write_text(APP, encoding="utf-8")
    (tmp_path / "ringleader.toml").write_text(CONFIG, encoding="utf-8")
    skill = tmp_path / "docs" / "skills" / "python-debug"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\ndescription: Diagnose Python errors.\n---\n# Python Debugging\n"
        "Read tracebacks bottom-up...\n",
        encoding="utf-8",
    )
    (skill / "examples.md").write_text("# Examples\n...", encoding="utf-8")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def cli(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # pyright: ignore[reportUnknownMemberType]
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    code = main(argv)
    return code, out.getvalue()


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_hooks_skills_content_skills_and_sub_agents_declared_in_ringleader_toml_work_from_ringleader_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = {
        "conversations": [
            {
                # matches only if the hook rewrote the text and the skill was injected
                "name": "parent",
                "marker": "I'm going to ask @weather",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "glove_invoke_subagent",
                                "input": {"name": "weather", "prompt": "NYC"},
                            },
                            {
                                "name": "glove_invoke_skill",
                                "input": {"name": "concise", "args": "ribosomes"},
                            },
                            {"name": "glove_read_skill", "input": {"name": "python-debug"}},
                        ]
                    },
                    {"text": "PARENT DONE"},
                ],
            }
        ]
    }
    path = write_project(tmp_path, script)
    argv = [
        "run", "--runtime", "native", "--model-server", str(path), "--json",
        "/formal /concise I'm gonna ask @weather NYC",
    ]  # fmt: skip
    code, out = cli(argv, tmp_path, monkeypatch)
    lines = events(out)
    assert code == 0, out
    details = [line.get("detail") or "" for line in lines if line.get("kind") == "status"]
    assert any("hook_invoked: formal" in d for d in details)
    assert any("skill_invoked: concise" in d for d in details)
    results = {r["name"]: r for r in lines if r.get("kind") == "tool-result"}
    assert "Sunny in NYC." in results["glove_invoke_subagent"]["output"]
    assert "Be terse. (source=agent, hint=ribosomes)" in results["glove_invoke_skill"]["output"]
    read = results["glove_read_skill"]["output"]
    assert '<skill name="python-debug"' in read and "<sections>examples</sections>" in read
    done = next(line for line in lines if line.get("kind") == "done")
    assert done["reason"] == "success" and done["summary"] == "PARENT DONE"
    # the seed's "/stop" hook answers without the model (the script has nothing for it)
    code, out = cli(
        ["run", "--runtime", "native", "--model-server", str(path), "--json", "/stop now"],
        tmp_path,
        monkeypatch,
    )
    done = next(line for line in events(out) if line.get("kind") == "done")
    assert code == 0 and done["reason"] == "success" and done["summary"] == "Stopped."


def test_a_declared_handler_that_cannot_be_imported_is_one_config_error(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native.hooks]\ncompact = "no_such_module_here:compact"\n', encoding="utf-8"
    )
    loaded = load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    with pytest.raises(ConfigError, match=r"runtimes\.native\.hooks\.compact: cannot import"):
        NATIVE.create(loaded.runtime("native"))
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native.skills.x]\nhandler = "m:f"\ndir = "d"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="exactly one of handler or dir"):
        load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native.hooks]\nx = "not an import path"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="not a module:function import path"):
        load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})


def test_ringleader_inbox_lists_and_resolves_the_inbox_items_of_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    post = {
        "name": "glove_post_to_inbox",
        "input": {"tag": "restock", "request": "Restock oat milk", "blocking": True},
    }
    script = {
        "conversations": [
            {
                "name": "shop",
                "turns": [{"tool_calls": [post]}, {"text": "Waiting for the restock."}],
            }
        ]
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    code, out = cli(
        ["run", "--runtime", "native", "--model-server", str(path), "--json", "order a latte"],
        tmp_path,
        monkeypatch,
    )
    assert code == 0, out
    run_id = next(line["runId"] for line in events(out) if line.get("kind") == "done")
    code, listing = cli(["inbox"], tmp_path, monkeypatch)
    assert code == 0
    [row] = listing.splitlines()
    item_id = row.split()[0]
    assert f"{run_id}  pending  blocking  [restock] Restock oat milk" in row
    code, out = cli(
        ["inbox", run_id, "--resolve", item_id, "--response", "40 units arrived"],
        tmp_path,
        monkeypatch,
    )
    assert code == 0 and out == f"resolved {item_id}\n"
    code, out = cli(["inbox"], tmp_path, monkeypatch)
    assert out == "no pending inbox items\n"
    code, out = cli(["inbox", run_id, "--all", "--json"], tmp_path, monkeypatch)
    [item] = events(out)
    assert item["status"] == "resolved" and item["response"] == "40 units arrived"
    assert item["runId"] == run_id
    # a second resolve is refused with one clear line
    code, _ = cli(
        ["inbox", run_id, "--resolve", item_id, "--response", "again"], tmp_path, monkeypatch
    )
    assert code == 2


def test_inbox_resolve_needs_a_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = cli(["inbox", "native-x", "--resolve", "inbox_1"], tmp_path, monkeypatch)
    assert code == 2
    assert "needs --response" in capsys.readouterr().err


def test_ringleader_config_shows_the_declared_app_layer_and_other_runtimes_refuse_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "ringleader.toml").write_text(CONFIG, encoding="utf-8")
    loaded = load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    rows = {key: value for key, value, _ in loaded.describe(["native"])}
    assert rows["runtimes.native.hooks.stop"] == "team_app:stop"
    assert (
        rows["runtimes.native.skills.concise"] == "handler team_app:concise (exposed to the agent)"
    )
    assert rows["runtimes.native.skills.python-debug"] == "dir docs/skills/python-debug"
    assert rows["runtimes.native.subagents.weather"].startswith("factory team_app:weather")
    from adapters.claude_code_spec import CLAUDE_CODE
    from orchestrator.core.config import RuntimeConfig

    with pytest.raises(ConfigError, match=r"runtimes\.claude-code\.hooks: not used"):
        CLAUDE_CODE.create(RuntimeConfig.model_validate({"hooks": {"x": "m:f"}}))
