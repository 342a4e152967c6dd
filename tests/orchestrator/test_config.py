"""The configuration: sources and their precedence, environment overrides, keys refused, one-line
errors naming file, key and problem; and ``ringleader config`` / bad config through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.config import (
    Config,
    RuntimeConfig,
    env_var_for,
    load_config,
    trust_directory,
    user_config_path,
)
from orchestrator.core.errors import ConfigError


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(project dir, XDG config home, environment with only XDG_CONFIG_HOME)."""
    project = tmp_path / "project"
    project.mkdir()
    xdg = tmp_path / "xdg"
    (xdg / "ringleader").mkdir(parents=True)
    return project, xdg, {"XDG_CONFIG_HOME": str(xdg)}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_no_files_gives_defaults(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    project, _, env = dirs
    loaded = load_config(cwd=project, environ=env)
    assert loaded.files == ()
    assert loaded.runtime("codex") == RuntimeConfig()
    assert loaded.sources == {}


def test_precedence_user_then_project_then_explicit_then_env(
    dirs: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    project, xdg, env = dirs
    user = write(
        xdg / "ringleader" / "config.toml",
        '[runtimes.codex]\nmodel = "user-model"\nmode = "exec"\nbinary = "/usr/bin/codex"\n'
        '[runtimes.codex.prices."m1"]\ninput = 1\noutput = 2\n',
    )
    local = write(
        project / "ringleader.toml",
        '[runtimes.codex]\nmodel = "project-model"\nmode = "app-server"\n'
        '[runtimes.codex.prices."m2"]\ninput = 3\noutput = 4\n',
    )
    explicit = write(tmp_path / "x.toml", '[runtimes.codex]\nmode = "exec"\n')
    trust_directory(project, env)  # an untrusted project's prices are ignored
    environ = env | {
        "RINGLEADER_CODEX_BINARY": "/opt/codex",
        "RINGLEADER_CODEX_EXTRA_ARGS": "a=1 'b=2 3'",
    }
    loaded = load_config(explicit, cwd=project, environ=environ, runtime_ids=["codex"])
    codex = loaded.runtime("codex")
    assert loaded.files == (user, local, explicit)
    assert codex.model == "project-model"
    assert codex.mode == "exec"
    assert codex.binary == "/opt/codex"
    assert codex.extra_args == ("a=1", "b=2 3")
    assert set(codex.prices) == {"m1", "m2"}  # prices merge per model
    assert loaded.sources["runtimes.codex.model"] == str(local)
    assert loaded.sources["runtimes.codex.mode"] == str(explicit)
    assert loaded.sources["runtimes.codex.binary"] == "env RINGLEADER_CODEX_BINARY"
    assert loaded.sources["runtimes.codex.prices.m1"] == str(user)
    assert loaded.sources["runtimes.codex.prices.m2"] == str(local)


def test_env_var_names() -> None:
    assert env_var_for("claude-code", "base_url") == "RINGLEADER_CLAUDE_CODE_BASE_URL"
    assert env_var_for("native", "provider") == "RINGLEADER_NATIVE_PROVIDER"


def test_user_config_path_follows_xdg(tmp_path: Path) -> None:
    assert user_config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == (
        tmp_path / "ringleader" / "config.toml"
    )


def test_api_key_is_read_from_the_named_variable() -> None:
    config = RuntimeConfig(api_key_env="MY_KEY")
    assert config.api_key({"MY_KEY": "k-123"}) == "k-123"
    assert config.api_key({}) is None
    assert RuntimeConfig().api_key({"MY_KEY": "x"}) is None


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('[runtimes.codex]\napi_key = "abc"\n', "runtimes.codex.api_key", "keys are not allowed"),
        ('[runtimes.codex]\ntoken = "abc"\n', "runtimes.codex.token", "keys are not allowed"),
        (
            '[runtimes.codex]\napi_key_env = "sk-proj-abcdefghijklmnop"\n',
            "runtimes.codex.api_key_env",
            "looks like an API key",
        ),
        (
            '[runtimes.codex]\nextra_args = ["--key=sk-abcdefghijklmnop"]\n',
            "runtimes.codex.extra_args.[0]",
            "looks like an API key",
        ),
        ('[runtimes.codex]\nmodle = "x"\n', "runtimes.codex.modle", "unknown key"),
        ('[runtimes.codex]\npermission = "maybe"\n', "runtimes.codex.permission", "'allow'"),
        (
            '[runtimes.codex]\napi_key_env = "not a name"\n',
            "runtimes.codex.api_key_env",
            "not an environment variable name",
        ),
        (
            "[runtimes.codex.prices.m]\ninput = -1\noutput = 1\n",
            "runtimes.codex.prices.m.input",
            "greater than or equal to 0",
        ),
        ("[runtimes.codex\n", "", "invalid TOML"),
    ],
)
def test_bad_file_is_one_line_naming_file_key_and_problem(
    dirs: tuple[Path, Path, dict[str, str]], text: str, key: str, problem: str
) -> None:
    project, _, env = dirs
    path = write(project / "ringleader.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=project, environ=env)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {key}")
    assert problem in message
    assert "sk-proj-abcdefghijklmnop" not in message and "sk-abcdefghijklmnop" not in message


def test_bad_env_value_names_the_variable(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    project, _, env = dirs
    with pytest.raises(
        ConfigError, match=r"^env RINGLEADER_CODEX_PERMISSION: runtimes.codex.permission: "
    ):
        load_config(
            cwd=project,
            environ=env | {"RINGLEADER_CODEX_PERMISSION": "sometimes"},
            runtime_ids=["codex"],
        )


def test_missing_explicit_file(dirs: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    project, _, env = dirs
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml", cwd=project, environ=env)


def test_describe_redacts_and_says_whether_the_key_is_set(
    dirs: tuple[Path, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _, env = dirs
    write(
        project / "ringleader.toml",
        '[runtimes.native]\napi_key_env = "H12_TEST_KEY"\nprovider = "openai"\n',
    )
    monkeypatch.setenv("H12_TEST_KEY", "sk-live-secret-value-123456")
    trust_directory(project, env)  # an untrusted project may not name a key
    loaded = load_config(cwd=project, environ=env)
    rows = {key: (value, source) for key, value, source in loaded.describe(["codex"])}
    assert rows["runtimes.native.api_key_env"] == (
        "H12_TEST_KEY (set)",
        str(project / "ringleader.toml"),
    )
    assert rows["runtimes.native.provider"][0] == "openai"
    assert rows["runtimes.codex.model"] == ("-", "default")
    assert "sk-live-secret-value-123456" not in json.dumps(rows)


def test_with_runtime_overlays_and_records_the_source() -> None:
    loaded = load_config(cwd="/nonexistent-dir-h12", environ={})
    updated = loaded.with_runtime("codex", "--model-server", base_url="http://127.0.0.1:1/v1")
    assert updated.runtime("codex").base_url == "http://127.0.0.1:1/v1"
    assert updated.sources["runtimes.codex.base_url"] == "--model-server"
    assert loaded.runtime("codex").base_url is None
    assert Config().runtime("x") == RuntimeConfig()


# -- through the CLI -------------------------------------------------------------------------


def ringleader(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "RINGLEADER_STATE_DIR": str(cwd / "state"), **env},
    )


def test_cli_bad_config_is_one_line_and_exit_2(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    project, _, env = dirs
    path = write(
        project / "ringleader.toml", '[runtimes.codex]\napi_key = "sk-abcdefghijklmnopq"\n'
    )
    for args in (("config",), ("runtimes",), ("run", "--runtime", "scripted", "hi")):
        result = ringleader(*args, cwd=project, env=env)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert lines == [
            f"ringleader: {path}: runtimes.codex.api_key: keys are not allowed in a config file; "
            "put the key in an environment variable and set api_key_env to its name"
        ]
        assert "sk-abcdefghijklmnopq" not in result.stdout + result.stderr


def test_cli_config_prints_values_and_sources(
    dirs: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    project, xdg, env = dirs
    write(
        project / "ringleader.toml", '[runtimes.codex]\nmodel = "gpt-5.5"\napi_key_env = "H12_K"\n'
    )
    explicit = write(tmp_path / "other.toml", '[runtimes.native]\nprovider = "openai"\n')
    trust_directory(project, env)  # an untrusted project may not name a key
    result = ringleader(
        "config",
        "--config",
        str(explicit),
        cwd=project,
        env=env | {"H12_K": "sk-very-secret-key-0000", "RINGLEADER_CLAUDE_CODE_MODEL": "opus"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert str(project / "ringleader.toml") in lines[0] and str(explicit) in lines[0]
    table = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert table["runtimes.codex.model"] == ["gpt-5.5", str(project / "ringleader.toml")]
    assert table["runtimes.codex.api_key_env"][:2] == ["H12_K", "(set)"]
    assert table["runtimes.native.provider"] == ["openai", str(explicit)]
    assert table["runtimes.claude-code.model"] == ["opus", "env", "RINGLEADER_CLAUDE_CODE_MODEL"]
    # issue 34 item 10: what a runtime cannot use is not listed; an unset value shows its
    # default; the governance and sandbox tables are there
    assert "runtimes.scripted.model" not in table and "runtimes.native.binary" not in table
    assert table["runtimes.codex.max_runs"] == ["no", "limit", "default"]
    assert table["runtimes.codex.watermark"] == ["85", "(%)", "default"]
    assert table["budget.usd"] == ["no", "limit", "default"]
    assert table["breaker"][0] == "off"
    assert table["sandbox.kind"] == ['"none"', "default"]
    assert "sk-very-secret-key-0000" not in result.stdout
    as_json = ringleader("config", "--json", cwd=project, env=env)
    lines_json = [json.loads(line) for line in as_json.stdout.splitlines()]  # JSON Lines
    # the user config (it records the trusted project) and the project file
    user = str(xdg / "ringleader" / "config.toml")
    assert lines_json[0] == {"files": [user, str(project / "ringleader.toml")]}
    assert {
        "key": "runtimes.codex.model",
        "value": "gpt-5.5",
        "source": str(project / "ringleader.toml"),
    } in lines_json[1:]


def test_cli_config_reaches_the_runtime(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    """A setting the runtime cannot use is refused when the configuration loads (exit 2, one
    line naming the file), scripted's binary included (issue 34 item 10); a typo'd runtime
    table is an error with a did-you-mean."""
    project, _, env = dirs
    config = write(project / "ringleader.toml", '[runtimes.native]\nbinary = "/bin/true"\n')
    trust_directory(project, env)  # an untrusted project may not set a binary
    result = ringleader("run", "--runtime", "native", "hi", cwd=project, env=env)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(
        f"ringleader: {config}: runtimes.native.binary: native cannot use binary (it uses: "
    )
    write(config, '[runtimes.scripted]\nbinary = "/bin/true"\n')
    result = ringleader("run", "--runtime", "scripted", "hi", cwd=project, env=env)
    assert result.returncode == 2 and "scripted cannot use binary" in result.stderr
    write(config, '[runtimes.claude_code]\nmodel = "opus"\n')
    result = ringleader("config", cwd=project, env=env)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(
        f"ringleader: {config}: [runtimes.claude_code]: unknown runtime; "
        "did you mean [runtimes.claude-code]?"
    )
