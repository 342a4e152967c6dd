"""ringleader's reusable adapter contract suite and test kit.

Adapter authors subclass :class:`AdapterContract` (and, for child-process adapters,
:class:`ProcessFaultContract`) and provide a harness; see README "Writing an adapter".

The suite needs pytest and hypothesis (``pip install 'ringleader[contract]'``). They are imported
lazily, on first use of a name below, so ``contract.model_server`` (the scripted model server the
demo uses) works in a plain install without them. Application code never imports this package.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from .harness import AdapterTestHarness as AdapterTestHarness
    from .harness import ChildProcessHarness as ChildProcessHarness
    from .harness import ContractFrames as ContractFrames
    from .harness import ProcessFaultHarness as ProcessFaultHarness
    from .harness import RecordedCall as RecordedCall
    from .invariants import ContractViolation as ContractViolation
    from .invariants import check_stream as check_stream
    from .scripted_harness import ScriptedFrames as ScriptedFrames
    from .scripted_harness import ScriptedHarness as ScriptedHarness
    from .suite import AdapterContract as AdapterContract
    from .suite import ProcessFaultContract as ProcessFaultContract
    from .suite import collect_run as collect_run

__all__ = [
    "AdapterContract",
    "AdapterTestHarness",
    "ChildProcessHarness",
    "ContractFrames",
    "ContractViolation",
    "ProcessFaultContract",
    "ProcessFaultHarness",
    "RecordedCall",
    "ScriptedFrames",
    "ScriptedHarness",
    "check_stream",
    "collect_run",
]

_HOME = {
    "AdapterContract": "suite",
    "AdapterTestHarness": "harness",
    "ChildProcessHarness": "harness",
    "ContractFrames": "harness",
    "ContractViolation": "invariants",
    "ProcessFaultContract": "suite",
    "ProcessFaultHarness": "harness",
    "RecordedCall": "harness",
    "ScriptedFrames": "scripted_harness",
    "ScriptedHarness": "scripted_harness",
    "check_stream": "invariants",
    "collect_run": "suite",
}

_MISSING_EXTRA = "the ringleader contract suite needs {name}: pip install 'ringleader[contract]'"


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'contract' has no attribute {name!r}")
    try:
        module = importlib.import_module(f".{home}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name in ("pytest", "hypothesis", "_pytest"):
            raise ModuleNotFoundError(_MISSING_EXTRA.format(name=exc.name), name=exc.name) from exc
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
