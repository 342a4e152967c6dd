"""Runtime adapters: each runtime (native, Claude Code, Codex, OpenClaw, Hermes, scripted) behind
the common :class:`orchestrator.RuntimeAdapter` trait.

Each runtime lives in its own subpackage, in three layers: dialect (typed native frames),
normalize (pure frames → events) and driver (process or socket); the adapter glues them to the
trait. Shared mechanisms: ``_base`` (lifecycle, run table, health deadline), ``_runs`` (event
emission contracts), ``_cli`` (the run loop every child-process runtime shares:
:class:`CliRun` with a runtime's :class:`CliDialect`), ``_process`` (child processes),
``_jsonl`` (line framing).

For a child-process adapter of your own (docs/guide/adapters.md): :class:`CliRun` runs one
run's child through the shared loop with your :class:`CliDialect`; :class:`ChildSpec` says how to
start it; :func:`child_env` builds its allow-listed environment (:data:`DEFAULT_ENV_ALLOW`);
:func:`probe_version` is a ``--version`` health probe. Lower down, :func:`open_child` (a
:class:`ChildProcess` in its own process group, terminated and reaped on exit) and
:class:`LineFramer` (lines with a hard cap) are what the loop is built on.
"""

from ._base import AdapterBase as AdapterBase
from ._base import confined_path as confined_path
from ._base import validate_context_key as validate_context_key
from ._base import write_context_file as write_context_file
from ._cli import ChildSpec as ChildSpec
from ._cli import CliAdapterBase as CliAdapterBase
from ._cli import CliDialect as CliDialect
from ._cli import CliRun as CliRun
from ._cli import probe_version as probe_version
from ._jsonl import LineFramer as LineFramer
from ._process import DEFAULT_ENV_ALLOW as DEFAULT_ENV_ALLOW
from ._process import ChildProcess as ChildProcess
from ._process import child_env as child_env
from ._process import open_child as open_child
from ._runs import RunEmitter as RunEmitter
from .scripted import RecordedCall as RecordedCall
from .scripted import ScriptedAdapter as ScriptedAdapter
