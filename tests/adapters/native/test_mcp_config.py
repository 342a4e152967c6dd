"""MCP servers from the configuration: ``[runtimes.native.mcp_servers.<name>]`` in ringleader.toml,
validated, shown by ``ringleader config``, built into the native runtime, refused by the others,
and reached by ``ringleader run`` (a real CLI subprocess, a real stdio MCP server, the scripted
model server)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.codex_spec import CODEX
from adapters.native import McpHttpServer, McpStdioServer, NativeAdapter
from adapters.native_spec import NATIVE
from orchestrator.core.config import McpServerConfig, RuntimeConfig, load_config, trust_directory
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import Done, ToolCall, ToolResult

from .cli_run import run_native_cli

SERVER = Path(__file__).with_name("mcp_server.py")

TOML = f"""
[runtimes.native.mcp_servers.calc]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
env = {{ MODE = "test" }}
env_vars = ["N3D_PASSED"]
call_timeout_s = 20

[runtimes.native.mcp_servers.search]
url = "http://127.0.0.1:8931/mcp"
headers = {{ X-Team = "ringleader" }}
headers_env = {{ Authorization = "N3D_SEARCH_AUTH" }}
permission = "ask"
"""


def trusted(tmp_path: Path) -> dict[str, str]:
    """An environment whose user config trusts ``tmp_path`` (an untrusted project's MCP servers
    are ignored: tests/faults/test_untrusted_project_config.py)."""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    trust_directory(tmp_path, env)
    return env


def test_servers_load_from_ringleader_toml(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(TOML, encoding="utf-8")
    loaded = load_config(cwd=tmp_path, environ=trusted(tmp_path))
    servers = loaded.runtime("native").mcp_servers
    assert sorted(servers) == ["calc", "search"]
    assert servers["calc"].command == sys.executable
    assert servers["calc"].call_timeout_s == 20
    assert servers["search"].permission == "ask"
    env = {"N3D_PASSED": "yes", "N3D_SEARCH_AUTH": "Bearer abc", "OTHER": "no"}
    assert servers["calc"].resolved_env(env) == {"MODE": "test", "N3D_PASSED": "yes"}
    assert servers["search"].resolved_headers(env) == {
        "X-Team": "ringleader",
        "Authorization": "Bearer abc",
    }
    rows = {key: (value, source) for key, value, source in loaded.describe()}
    where = str(tmp_path / "ringleader.toml")
    assert rows["runtimes.native.mcp_servers.search"] == ("http://127.0.0.1:8931/mcp", where)
    assert rows["runtimes.native.mcp_servers.calc"][0].endswith("mcp_server.py")


def test_a_later_file_replaces_a_server_by_name(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(TOML, encoding="utf-8")
    other = tmp_path / "other.toml"
    other.write_text('[runtimes.native.mcp_servers.calc]\nurl = "http://127.0.0.1:1/mcp"\n')
    loaded = load_config(other, cwd=tmp_path, environ=trusted(tmp_path))
    servers = loaded.runtime("native").mcp_servers
    assert servers["calc"].url == "http://127.0.0.1:1/mcp"
    assert servers["calc"].command is None
    assert servers["search"].url == "http://127.0.0.1:8931/mcp"  # kept from the first file
    assert loaded.sources["runtimes.native.mcp_servers.calc"] == str(other)


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('command = "x"\nurl = "http://h/mcp"', "exactly one of command"),
        ('args = ["x"]', "exactly one of command"),
        ('command = "x"\nheaders = { A = "b" }', "headers is not used by a stdio server"),
        ('url = "http://h/mcp"\nenv_vars = ["A"]', "env_vars is not used by an HTTP server"),
        ('command = "x"\nenv_vars = ["not a name"]', "not an environment variable name"),
        ('command = "x"\nstart_timeout_s = 0', "greater than 0"),
        ('command = "x"\npermission = "maybe"', "'allow', 'ask' or 'deny'"),
        ('command = "x"\nenv = { T = "sk-ant-abcdefghijklmnopqrstuvwxyz012345" }', "API key"),
    ],
)
def test_bad_server_tables_are_one_line_errors(tmp_path: Path, table: str, problem: str) -> None:
    path = tmp_path / "ringleader.toml"
    path.write_text(f"[runtimes.native.mcp_servers.s]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as caught:
        load_config(cwd=tmp_path, environ={})
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_native_runtime_is_built_with_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("N3D_PASSED", "yes")
    monkeypatch.setenv("N3D_SEARCH_AUTH", "Bearer abc")
    config = RuntimeConfig(
        mcp_servers={
            "calc": McpServerConfig(
                command="python3", args=("s.py",), env_vars=("N3D_PASSED",), call_timeout_s=5
            ),
            "search": McpServerConfig(
                url="http://127.0.0.1:9/mcp",
                headers_env={"Authorization": "N3D_SEARCH_AUTH"},
                permission="deny",
            ),
        }
    )
    adapter = NATIVE.factory(config)
    assert isinstance(adapter, NativeAdapter)
    assert adapter.capabilities().mcp
    assert adapter._mcp_servers == (  # pyright: ignore[reportPrivateUsage]
        McpStdioServer("calc", "python3", ["s.py"], env={"N3D_PASSED": "yes"}, call_timeout_s=5),
        McpHttpServer(
            "search",
            "http://127.0.0.1:9/mcp",
            headers={"Authorization": "Bearer abc"},
            permission="deny",
        ),
    )


def test_a_named_variable_that_is_not_set_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("N3D_UNSET", raising=False)
    config = RuntimeConfig(mcp_servers={"s": McpServerConfig(command="x", env_vars=("N3D_UNSET",))})
    with pytest.raises(ConfigError, match=r"mcp_servers\.s: the variable N3D_UNSET is not set"):
        NATIVE.factory(config)


def test_other_runtimes_refuse_mcp_servers() -> None:
    config = RuntimeConfig(mcp_servers={"s": McpServerConfig(command="x")})
    with pytest.raises(ConfigError, match=r"runtimes\.codex\.mcp_servers: not used"):
        CODEX.factory(config)


def test_ringleader_run_reaches_an_mcp_server_from_ringleader_toml(tmp_path: Path) -> None:
    """What a user does: a server in ringleader.toml, `ringleader run --runtime native`."""
    (tmp_path / "ringleader.toml").write_text(
        f"[runtimes.native.mcp_servers.calc]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVER))}]\n",
        encoding="utf-8",
    )
    script = {
        "conversations": [
            {
                "name": "add",
                "turns": [
                    {"tool_calls": [{"name": "mcp__calc__add", "input": {"a": 20, "b": 22}}]},
                    {"text": "It is 42."},
                ],
            }
        ]
    }
    events = run_native_cli(tmp_path, script, "hi")
    calls = [e for e in events if isinstance(e, ToolCall)]
    outputs = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["mcp__calc__add"]
    assert [(r.output, r.is_error) for r in outputs] == [("42", False)]
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"


def test_readme_mcp_examples_are_valid(tmp_path: Path) -> None:
    """The native runtime page's (docs/runtimes/native.md) MCP section: its TOML loads, its Python builds the adapter it describes."""
    readme = (Path(__file__).resolve().parents[3] / "docs" / "runtimes" / "native.md").read_text()
    section = readme[readme.index("## The native runtime's MCP servers") :]
    toml_block = re.search(r"```toml\n(.*?)```", section, re.S)
    python_block = re.search(r"```python\n(.*?)```", section, re.S)
    assert toml_block is not None and python_block is not None
    (tmp_path / "ringleader.toml").write_text(toml_block.group(1), encoding="utf-8")
    servers = load_config(cwd=tmp_path, environ=trusted(tmp_path)).runtime("native").mcp_servers
    assert servers["files"].command == "npx"
    assert servers["search"].headers_env == {"Authorization": "SEARCH_AUTH"}
    namespace: dict[str, Any] = {"token": "Bearer t"}
    exec(compile(python_block.group(1), "docs/runtimes/native.md", "exec"), namespace)
    adapter: NativeAdapter = namespace["adapter"]
    names = [s.name for s in adapter._mcp_servers]  # pyright: ignore[reportPrivateUsage]
    assert names == ["files", "search"]
