"""The output schema from the configuration: ``runtimes.native.output_schema`` (a JSON Schema
file) in ringleader.toml or ``RINGLEADER_NATIVE_OUTPUT_SCHEMA``, checked when the runtime is
built, refused by the other runtimes, and reached by ``ringleader run`` (a real CLI subprocess
against the scripted model server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.acp_spec import ACP
from adapters.codex_spec import CODEX
from adapters.native import NativeAdapter
from adapters.native_spec import NATIVE
from orchestrator.core.config import RuntimeConfig, load_config
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import Done, ErrorEvent, Status

from .cli_run import run_native_cli

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}, "reasons": {"type": "array"}},
    "required": ["verdict"],
}


def write_schema(root: Path, schema: object = SCHEMA) -> Path:
    path = root / "answer.schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    return path


def test_the_schema_file_is_set_in_ringleader_toml_or_the_environment(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native]\noutput_schema = "answer.schema.json"\n', encoding="utf-8"
    )
    loaded = load_config(cwd=tmp_path, environ={})
    assert loaded.runtime("native").output_schema == "answer.schema.json"
    env = {"RINGLEADER_NATIVE_OUTPUT_SCHEMA": "other.json"}
    assert load_config(cwd=tmp_path, environ=env).runtime("native").output_schema == "other.json"


def test_the_native_runtime_is_built_with_the_schema(tmp_path: Path) -> None:
    path = write_schema(tmp_path)
    adapter = NATIVE.factory(RuntimeConfig(output_schema=str(path)))
    assert isinstance(adapter, NativeAdapter)
    schema = adapter._loop_config.output_schema  # pyright: ignore[reportPrivateUsage]
    assert schema is not None and schema.json_schema == SCHEMA
    plain = NATIVE.factory(RuntimeConfig())
    assert isinstance(plain, NativeAdapter)
    assert plain._loop_config.output_schema is None  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, r"cannot read .*missing\.json \(No such file or directory\)"),
        ("{not json", r"is not JSON"),
        ("[1, 2]", r"must hold a JSON Schema object"),
        ('{"type": "verdict"}', r"invalid JSON Schema: 'verdict' is not valid"),
    ],
    ids=["missing", "not-json", "not-an-object", "invalid-schema"],
)
def test_a_bad_schema_file_is_a_config_error_naming_the_key(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "missing.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"runtimes\.native\.output_schema: .*" + problem):
        NATIVE.factory(RuntimeConfig(output_schema=str(path)))


@pytest.mark.parametrize("spec", [CODEX, ACP], ids=lambda s: s.id)
def test_other_runtimes_refuse_an_output_schema(spec: object) -> None:
    from orchestrator.core.registry import RuntimeSpec

    assert isinstance(spec, RuntimeSpec)
    with pytest.raises(ConfigError, match=rf"runtimes\.{spec.id}\.output_schema: not used"):
        spec.factory(RuntimeConfig(output_schema="x.json"))


def test_ringleader_run_validates_the_answer_against_the_configured_schema(
    tmp_path: Path,
) -> None:
    """What a user does: a schema file named in ringleader.toml, `ringleader run`; the model's
    first answer does not match, it is told why, and its second answer passes."""
    write_schema(tmp_path)
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native]\noutput_schema = "answer.schema.json"\n', encoding="utf-8"
    )
    script = {
        "conversations": [
            {
                "name": "review",
                "turns": [
                    {"text": '{"verdict": "maybe"}'},
                    {"text": '{"verdict": "pass", "reasons": ["tests green"]}'},
                ],
            }
        ]
    }
    events = run_native_cli(tmp_path, script, "review")
    details = [e.detail for e in events if isinstance(e, Status) and e.detail]
    assert any(
        d.startswith("output_retry 1: verdict: 'maybe' is not one of ['pass', 'fail']")
        for d in details
    ), details
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert json.loads(done.summary) == {"verdict": "pass", "reasons": ["tests green"]}
