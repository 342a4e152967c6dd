"""The OpenClaw Gateway process: start one and share it, or attach to a running one.

A gateway is heavy (~11 s to ``hello-ok``, ~1.2 GB resident: docs/runtimes.md §3.10), so one serves
every session of an adapter (OpenClaw is a *connected substrate*). :class:`GatewayManager`

* **starts** ``openclaw gateway run`` on loopback with token auth, a generated config
  (``openclaw.json5`` pointing at one model provider, update checks, telemetry, catalog refresh
  and heartbeats off) and a private state directory — its working directory too, unless the
  workspace is trusted (``ringleader trust``), so a repository's ``.env`` stays out of its
  environment — through the shared child-process driver
  (:func:`adapters._process.open_child`: own process group, allow-listed environment, the whole
  tree terminated when the manager's scope ends); or
* **attaches** to a running gateway given its URL and token (:meth:`GatewayManager.attach`): no
  process is started or stopped.

Either way it owns one :class:`~adapters.openclaw.client.GatewayClient` connection, started on
first use (:meth:`GatewayManager.ensure`) — never in a constructor or in ``capabilities()``.
:meth:`GatewayManager.restart` stops and starts the managed gateway on the same state directory
(sessions persist in its SQLite store, so a session key resumes across it).
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import trio

from orchestrator.core.config import is_trusted
from orchestrator.core.errors import (
    ConfigError,
    RuntimeExitedError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.core.events import now_ms
from orchestrator.core.lifetime import ensure_private_dir

from .._base import write_private
from .._jsonl import Frame
from .._process import ChildProcess, child_env, open_child
from .._runtimes import install_hint, runtime_binary, runtime_path_dirs
from .client import GatewayClient

__all__ = [
    "DEFAULT_MODEL_ID",
    "PROVIDER_ID",
    "GatewayManager",
    "GatewaySettings",
    "ModelProvider",
    "gateway_config",
    "gateway_env",
]

PROVIDER_ID: Final = "ringleader"
"""The provider id the generated config declares (models are ``ringleader/<model>``)."""
DEFAULT_MODEL_ID: Final = "default-model"
_ADAPTER: Final = "openclaw"
_LOG_TAIL: Final = 200

ProviderApi = Literal["openai-completions", "openai-responses", "anthropic-messages"]


@attrs.frozen
class ModelProvider:
    """The one model provider a managed gateway is configured with."""

    base_url: str
    """``http://127.0.0.1:PORT/v1`` for the OpenAI APIs; the bare URL for Anthropic Messages."""
    api: ProviderApi = "openai-completions"
    api_key: str | None = attrs.field(default=None, repr=False)
    models: tuple[str, ...] = (DEFAULT_MODEL_ID,)
    """Model ids the provider serves; the first is the default."""
    context_window: int = 128_000
    max_tokens: int = 4096
    prices: Mapping[str, float] | None = None
    """USD per million tokens (``input``, ``output``, ``cacheRead``, ``cacheWrite``). ``None``:
    no prices — OpenClaw then reports $0, which the adapter reports as unknown."""
    timeout_seconds: int = 60

    @classmethod
    def from_env(cls, env: Mapping[str, str], model: str | None = None) -> ModelProvider | None:
        """A provider from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (Chat Completions), else
        ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` (Messages); ``None`` if neither is set."""
        bare = model.rpartition("/")[2] if model else ""
        models = (bare,) if bare else (DEFAULT_MODEL_ID,)
        if env.get("OPENAI_BASE_URL"):
            return cls(
                base_url=env["OPENAI_BASE_URL"], api_key=env.get("OPENAI_API_KEY"), models=models
            )
        if env.get("ANTHROPIC_BASE_URL"):
            return cls(
                base_url=env["ANTHROPIC_BASE_URL"],
                api="anthropic-messages",
                api_key=env.get("ANTHROPIC_API_KEY"),
                models=models,
            )
        return None


@attrs.frozen
class GatewaySettings:
    """How a managed gateway is started."""

    provider: ModelProvider | None = None
    """The model provider; ``None`` leaves OpenClaw's own configuration (hosted catalogs off)."""
    state_dir: Path | None = None
    """The gateway's state directory (sessions live here). ``None``: :attr:`shared_state_dir`
    when set and free, else a fresh private directory, deleted when the manager closes."""
    shared_state_dir: Path | None = None
    """Where the managed gateway keeps its sessions across processes when ``state_dir`` is not
    given (ringleader's runtime spec: ``<state dir>/openclaw``), so a session a killed
    orchestrator left is still there for ``recover`` and resumes with its conversation, as the
    other runtimes' persistent homes do. One gateway at a time holds it (a lock released when
    its process ends, a SIGKILL included); a second process meanwhile gets a private directory."""
    shared_only: bool = False
    """Use :attr:`shared_state_dir` or nothing: while another gateway holds it, starting fails
    (:class:`~orchestrator.core.errors.RuntimeStartError`) instead of falling back to a private
    directory (``ringleader prune`` deletes sessions stored there)."""
    workspace: Path | None = None
    """The agent's workspace (``agents.defaults.workspace``); default ``<state>/workspace``."""
    port: int | None = None
    """Loopback port; ``None`` picks a free one."""
    token: str | None = attrs.field(default=None, repr=False)
    """The gateway token; ``None`` generates one."""
    tool_deny: tuple[str, ...] = ()
    """Tools denied to every agent of this gateway (``tools.deny``)."""
    exec_ask: bool = False
    """Every host command of the ``exec`` tool asks first (``tools.exec`` ``security:"full"``,
    ``ask:"always"``): the gateway sends ``exec.approval.requested`` to its approval clients
    (the adapter, with :attr:`OpenClawConfig.approve <adapters.openclaw.OpenClawConfig.approve>`
    set) and runs the command only on ``exec.approval.resolve`` allowing it."""
    binary: str | None = None
    """The ``openclaw`` executable; default: the one ``scripts/install-runtimes`` installed."""
    startup_timeout: float = 240.0
    """How long the gateway may take to answer ``hello-ok`` (≈11 s idle; far more under load)."""
    sigint_grace: float = 5.0
    sigterm_grace: float = 5.0
    env_allow: tuple[str, ...] | None = None
    extra_env: Mapping[str, str] = attrs.field(factory=dict[str, str], repr=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gateway_config(
    settings: GatewaySettings, *, port: int, token: str, workspace: Path
) -> dict[str, Any]:
    """The ``openclaw.json5`` of a managed gateway (plain JSON is valid JSON5)."""
    config: dict[str, Any] = {
        "update": {"checkOnStart": False, "auto": {"enabled": False}},
        "telemetry": {"enabled": False},
        "gateway": {
            "mode": "local",
            "port": port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": token},
        },
        "agents": {
            "defaults": {
                "workspace": str(workspace),
                "heartbeat": {"every": "0m"},
                # the workspace is the user's project: OpenClaw's first-run ritual (AGENTS.md,
                # BOOTSTRAP.md, IDENTITY.md, SOUL.md, USER.md, `git init`) must not land there
                "skipBootstrap": True,
            },
        },
    }
    models: dict[str, Any] = {"mode": "replace", "catalogRefresh": {"enabled": False}}
    provider = settings.provider
    if provider is not None:
        prices = dict(provider.prices or {})
        cost = {
            k: float(prices.get(k, 0.0)) for k in ("input", "output", "cacheRead", "cacheWrite")
        }
        models["providers"] = {
            PROVIDER_ID: {
                "baseUrl": provider.base_url,
                "apiKey": provider.api_key or "ringleader-local",
                "api": provider.api,
                "timeoutSeconds": provider.timeout_seconds,
                "models": [
                    {
                        "id": model,
                        "name": model,
                        "reasoning": False,
                        "input": ["text"],
                        "cost": cost,
                        "contextWindow": provider.context_window,
                        "maxTokens": provider.max_tokens,
                    }
                    for model in provider.models
                ],
            }
        }
        config["agents"]["defaults"]["model"] = {"primary": f"{PROVIDER_ID}/{provider.models[0]}"}
    config["models"] = models
    tools: dict[str, Any] = {}
    if settings.tool_deny:
        tools["deny"] = list(settings.tool_deny)
    if settings.exec_ask:
        # the legacy pair: ask "always" has no `mode` equivalent (mode "ask" skips allowlisted
        # safe commands); askFallback deny: an approval nobody answers is refused
        tools["exec"] = {"host": "gateway", "security": "full", "ask": "always"}
    if tools:
        config["tools"] = tools
    return config


def gateway_env(
    settings: GatewaySettings, *, state_dir: Path, config_path: Path, tmp_dir: Path
) -> dict[str, str]:
    """The gateway's environment: allow-listed variables, Node 24 first on ``PATH``, the state
    and config paths, and the embedding flags that stop background work (docs/runtimes.md §3.3)."""
    extra = {
        "HOME": str(state_dir / "home"),
        "TMPDIR": str(tmp_dir),
        "OPENCLAW_STATE_DIR": str(state_dir),
        "OPENCLAW_CONFIG_PATH": str(config_path),
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_DISABLE_BONJOUR": "1",
        "OPENCLAW_SKIP_CHANNELS": "1",
        "OPENCLAW_NO_RESPAWN": "1",
        "OPENCLAW_EXEC_SHELL_SNAPSHOT": "0",
        "OPENCLAW_SKIP_CRON": "1",
        **settings.extra_env,
    }
    env = (
        child_env(extra=extra)
        if settings.env_allow is None
        else child_env(settings.env_allow, extra)
    )
    if settings.binary is None:
        dirs = [str(d) for d in runtime_path_dirs("openclaw")]
        env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", os.defpath)])
    return env


class GatewayManager:
    """One gateway (started here, or attached to) and one client connection to it.

    Use inside a nursery that outlives its users: ``manager.bind(nursery)`` (the adapter does
    this on ``__aenter__``), then :meth:`ensure` from any task; :meth:`aclose` stops everything.
    """

    def __init__(
        self,
        settings: GatewaySettings | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        if (url is None) != (token is None):
            raise ConfigError("attaching to a gateway needs both its URL and its token")
        self.settings = settings or GatewaySettings()
        self.attached = url is not None
        self.url = url
        self._token = token
        self._client_options = dict(client_options or {})
        self.client: GatewayClient | None = None
        self.child: ChildProcess | None = None
        self.state_dir: Path | None = None
        self.workspace: Path | None = None
        self.log_tail: collections.deque[str] = collections.deque(maxlen=_LOG_TAIL)
        """The gateway's last output lines (secrets redacted)."""
        self.starts = 0
        self.started_ms: int | None = None
        """When the managed gateway last started (the attached one: when first connected to),
        in ms since the epoch."""
        self._nursery: trio.Nursery | None = None
        self._lock = trio.Lock()
        self._scope: trio.CancelScope | None = None
        self._client_scope: trio.CancelScope | None = None
        self._stopped = trio.Event()
        self._owned_state = False
        self._state_lock: int | None = None
        """The open file holding :attr:`GatewaySettings.shared_state_dir`'s lock, while held."""
        self._closed = False
        self.failure: str | None = None

    @classmethod
    def attach(
        cls, url: str, token: str, *, client_options: Mapping[str, Any] | None = None
    ) -> GatewayManager:
        """A manager for a gateway someone else runs (nothing is started or stopped)."""
        return cls(url=url, token=token, client_options=client_options)

    @property
    def token(self) -> str | None:
        return self._token

    @property
    def provider(self) -> ModelProvider | None:
        return None if self.attached else self.settings.provider

    def bind(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def configure(self, provider: ModelProvider | None, *, workspace: str | None = None) -> None:
        """Fill in the provider and workspace of a managed gateway that has not started yet
        (settings given explicitly win; no-op otherwise)."""
        if self.attached or self.starts > 0:
            return
        if provider is not None and self.settings.provider is None:
            self.settings = attrs.evolve(self.settings, provider=provider)
        if workspace and self.settings.workspace is None:
            self.settings = attrs.evolve(self.settings, workspace=Path(workspace))

    @property
    def without_shared_state(self) -> bool:
        """The managed gateway wanted :attr:`GatewaySettings.shared_state_dir` but another one
        held it: it runs on a private directory, without the sessions kept there."""
        settings = self.settings
        return (
            not self.attached
            and settings.state_dir is None
            and settings.shared_state_dir is not None
            and self.state_dir is not None
            and self.state_dir != Path(settings.shared_state_dir)
        )

    @property
    def running(self) -> bool:
        return self.client is not None and self.client.connected

    async def ensure(self) -> GatewayClient:
        """The connected client, starting the gateway (and connecting) on first use.

        Raises:
            RuntimeNotFoundError: OpenClaw (or Node 24) is not installed.
            RuntimeStartError: the gateway did not come up (its log tail is in the message).
        """
        async with self._lock:
            if self._closed:
                raise RuntimeStartError("the gateway manager is closed", adapter=_ADAPTER)
            if self.client is not None:
                child = self.child
                if self.attached or (child is not None and child.returncode is None):
                    return self.client
                # the managed gateway exited by itself: start it again on the same state dir
                await self._stop_client()
                await self._stop_process()
            nursery = self._nursery
            if nursery is None:
                raise RuntimeError("GatewayManager.bind(nursery) before ensure()")
            if not self.attached:
                self.started_ms = now_ms()
                await nursery.start(self._serve_process)
            elif self.started_ms is None:
                self.started_ms = now_ms()
            assert self.url is not None and self._token is not None
            client = GatewayClient(self.url, self._token, **self._client_options)
            if not self.attached:
                client.connect_timeout = self.settings.startup_timeout
            try:
                await nursery.start(self._serve_client, client)
            except RuntimeStartError as exc:
                tail = "\n".join(list(self.log_tail)[-15:])
                await self._stop_process()
                raise RuntimeStartError(
                    f"{exc}" + (f"\ngateway log tail:\n{tail}" if tail else ""), adapter=_ADAPTER
                ) from None
            self.client = client
            return client

    async def _serve_client(
        self,
        client: GatewayClient,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        with trio.CancelScope() as scope:
            self._client_scope = scope
            await client.run(task_status=task_status)

    def _prepare_state(self) -> tuple[Path, Path, Path]:
        settings = self.settings
        if self.state_dir is None:
            if settings.state_dir is not None:
                self.state_dir = Path(settings.state_dir)
            elif settings.shared_state_dir is not None and self._hold(settings.shared_state_dir):
                self.state_dir = Path(settings.shared_state_dir)
            elif settings.shared_only:
                raise RuntimeStartError(
                    f"another OpenClaw gateway holds {settings.shared_state_dir} (a ringleader "
                    "run is going there); try again once it ended",
                    adapter=_ADAPTER,
                )
            else:
                self.state_dir = Path(tempfile.mkdtemp(prefix="ringleader-openclaw-"))
                self._owned_state = True
        state = self.state_dir
        state.mkdir(parents=True, exist_ok=True)
        state.chmod(0o700)
        (state / "home").mkdir(exist_ok=True)
        tmp = state / "tmp"
        tmp.mkdir(exist_ok=True)
        self.workspace = Path(settings.workspace) if settings.workspace else state / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        config_path = state / "openclaw.json5"
        return state, config_path, tmp

    def _hold(self, shared: Path) -> bool:
        """Take ``shared``'s lock (without waiting); False when another live gateway holds
        it. The descriptor is not inherited by children: the lock ends with this process."""
        ensure_private_dir(shared)
        fd = os.open(shared / ".gateway.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._state_lock = fd
        return True

    def _release(self) -> None:
        fd, self._state_lock = self._state_lock, None
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the lock

    async def _serve_process(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        settings = self.settings
        state, config_path, tmp = await trio.to_thread.run_sync(self._prepare_state)
        assert self.workspace is not None
        port = settings.port or _free_port()
        token = settings.token or self._token or secrets.token_urlsafe(24)
        config = gateway_config(settings, port=port, token=token, workspace=self.workspace)
        await trio.to_thread.run_sync(write_private, config_path, json.dumps(config, indent=2))
        binary = settings.binary or str(runtime_binary("openclaw"))
        env = gateway_env(settings, state_dir=state, config_path=config_path, tmp_dir=tmp)
        # the token goes through the config file (0600), never argv
        argv = [
            binary,
            "gateway",
            "run",
            "--port",
            str(port),
            "--bind",
            "loopback",
            "--auth",
            "token",
        ]
        self.url = f"ws://127.0.0.1:{port}"
        self._token = token
        self._stopped = trio.Event()
        # OpenClaw loads `.env` from its working directory into its environment, which every
        # command of its exec tool inherits (its blocklist lets PERLLIB through: a repository's
        # Perl ran on `shasum`): outside a trusted directory it starts in its state directory,
        # the agent still working in the workspace (agents.defaults.workspace)
        trusted = await trio.to_thread.run_sync(is_trusted, self.workspace)
        try:
            async with open_child(
                argv,
                env=env,
                cwd=self.workspace if trusted else state,
                writable=[state],  # its own state (config, sessions, tmp), when sandboxed
                sigint_grace=settings.sigint_grace,
                sigterm_grace=settings.sigterm_grace,
                adapter=_ADAPTER,
                install_hint=install_hint("openclaw"),
            ) as child:
                self.child = child
                self.starts += 1
                with trio.CancelScope() as scope:
                    self._scope = scope
                    task_status.started()
                    await self._pump_log(child)
                    code = await child.wait()
                    self.failure = f"gateway exited with status {code}"
        finally:
            self.child = None
            self._scope = None
            self._stopped.set()

    async def _pump_log(self, child: ChildProcess) -> None:
        async for batch in child.batches():
            for line in batch:
                self.log_tail.append(_log_line(line))

    async def _stop_process(self) -> None:
        scope = self._scope
        if scope is not None:
            scope.cancel()
            with trio.CancelScope(shield=True):
                await self._stopped.wait()

    async def _stop_client(self) -> None:
        client, self.client = self.client, None
        scope, self._client_scope = self._client_scope, None
        if client is not None:
            await client.aclose()
        if scope is not None:
            scope.cancel()

    async def restart(self) -> GatewayClient:
        """Stop the managed gateway and start it again on the same state directory."""
        if self.attached:
            raise ConfigError("cannot restart a gateway this manager did not start")
        async with self._lock:
            await self._stop_client()
            await self._stop_process()
        return await self.ensure()

    async def stop(self) -> None:
        """Stop the managed gateway (or drop the attached connection); :meth:`ensure` starts again."""
        async with self._lock:
            await self._stop_client()
            await self._stop_process()

    async def aclose(self) -> None:
        """Stop everything; a generated state directory is deleted."""
        if self._closed:
            return
        with trio.CancelScope(shield=True):
            await self.stop()
            self._closed = True
            self._release()
            if self._owned_state and self.state_dir is not None:
                await trio.to_thread.run_sync(
                    lambda: shutil.rmtree(self.state_dir or "", ignore_errors=True)
                )

    def exited_error(self) -> RuntimeExitedError:
        child = self.child
        return RuntimeExitedError(
            self.failure or "openclaw gateway is gone",
            exit_code=child.returncode if child is not None else None,
            stderr_tail=child.stderr_tail if child is not None else "",
            adapter=_ADAPTER,
        )


def _log_line(line: Frame) -> str:
    if isinstance(line, bytes):
        return redact_secrets(line.decode("utf-8", "replace"))
    return redact_secrets(str(line))
