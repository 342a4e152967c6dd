"""The native app layer from the command line: ``ringleader run --subagent`` and
``--skills-dir`` reach the native runtime (its configuration, then each run's Glove), in
process, against the scripted model server."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from adapters.native_spec import NATIVE
from orchestrator.cli.main import main
from orchestrator.core.config import RuntimeConfig, load_config
from orchestrator.core.errors import ConfigError


def cli(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[Any]]:
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    code = main(argv)
    return code, [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_subagent_flag_gives_the_model_a_tagged_subagent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = {
        "conversations": [
            {
                "name": "parent",
                "marker": "[[parent]]",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "glove_invoke_subagent",
                                "input": {"name": "reviewer", "prompt": "[[sub]] look at it"},
                            }
                        ]
                    },
                    {"text": "PARENT DONE"},
                ],
            },
            {"name": "sub", "marker": "[[sub]]", "turns": [{"text": "LGTM"}]},
        ]
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    argv = [
        "run", "--runtime", "native", "--model-server", str(path), "--json",
        "--subagent", "reviewer=You review diffs.\nAnswer in one word.",
        "[[parent]] review my change",
    ]  # fmt: skip
    code, lines = cli(argv, tmp_path, monkeypatch)
    assert code == 0
    details = [line.get("detail") or "" for line in lines if line.get("kind") == "status"]
    assert "subagent_invoked: reviewer" in details
    tagged = [line for line in lines if line.get("agentId") == "reviewer"]
    assert any(line.get("kind") == "text-delta" and line["text"] == "LGTM" for line in tagged)
    assert all(line["parentRunId"] == tagged[0]["runId"] for line in tagged)
    done = next(line for line in lines if line.get("kind") == "done")
    assert done["reason"] == "success" and done["summary"] == "PARENT DONE"


def test_skills_dir_flag_points_the_native_runtime_at_a_skills_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = tmp_path / "team-skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greet\ndescription: How we greet.\n---\nSay GREETINGS-FROM-THE-SKILL.\n",
        encoding="utf-8",
    )
    script = {
        "conversations": [
            {
                "name": "c",
                "turns": [
                    {"tool_calls": [{"name": "glove_read_skill", "input": {"name": "greet"}}]},
                    {"text": "greeted"},
                ],
            }
        ]
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    argv = [
        "run", "--runtime", "native", "--model-server", str(path), "--json",
        "--skills-dir", "team-skills", "say hello",
    ]  # fmt: skip
    code, lines = cli(argv, tmp_path, monkeypatch)
    assert code == 0
    (result,) = [line for line in lines if line.get("kind") == "tool-result"]
    assert "GREETINGS-FROM-THE-SKILL" in result["output"] and not result["isError"]


def test_app_flags_need_the_native_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = cli(
        ["run", "--runtime", "scripted", "--subagent", "r=Review.", "hi"], tmp_path, monkeypatch
    )
    assert code == 2
    assert "apply to the native runtime" in capsys.readouterr().err


def test_subagents_in_the_config_file_and_only_for_native(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native]\nskills_dir = "skills"\n'
        '[runtimes.native.subagents.reviewer]\ninstructions = "You review."\n'
        'description = "Reviews diffs."\n',
        encoding="utf-8",
    )
    loaded = load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    native = loaded.runtime("native")
    assert native.skills_dir == "skills"
    assert native.subagents["reviewer"].description == "Reviews diffs."
    NATIVE.create(native)  # builds
    rows = {key: value for key, value, _ in loaded.describe(["native"])}
    assert rows["runtimes.native.subagents.reviewer"] == "Reviews diffs."
    from adapters.claude_code_spec import CLAUDE_CODE

    with pytest.raises(ConfigError, match=r"runtimes\.claude-code\.subagents: not used"):
        CLAUDE_CODE.create(
            RuntimeConfig.model_validate({"subagents": native.model_dump()["subagents"]})
        )
