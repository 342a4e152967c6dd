"""Runtime adapters: each runtime (native, Claude Code, Codex, OpenClaw, Hermes, scripted) behind
the common :class:`orchestrator.RuntimeAdapter` trait.

Each runtime lives in its own subpackage, in three layers: dialect (typed native frames),
normalize (pure frames → events) and driver (process or socket); the adapter glues them to the
trait. Shared mechanisms: ``_base`` (lifecycle, run table, health deadline), ``_runs`` (event
emission contracts), ``_cli`` (the run loop every child-process runtime shares:
:class:`CliRun` with a runtime's :class:`CliDialect`), ``_process`` (child processes),
``_jsonl`` (line framing).
"""

from ._base import AdapterBase as AdapterBase
from ._base import confined_path as confined_path
from ._base import validate_context_key as validate_context_key
from ._cli import ChildSpec as ChildSpec
from ._cli import CliAdapterBase as CliAdapterBase
from ._cli import CliDialect as CliDialect
from ._cli import CliRun as CliRun
from ._runs import RunEmitter as RunEmitter
from .scripted import RecordedCall as RecordedCall
from .scripted import ScriptedAdapter as ScriptedAdapter

__all__ = [
    "AdapterBase",
    "ChildSpec",
    "CliAdapterBase",
    "CliDialect",
    "CliRun",
    "RecordedCall",
    "RunEmitter",
    "ScriptedAdapter",
    "confined_path",
    "validate_context_key",
]
