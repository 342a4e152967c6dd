"""ringleader's reusable adapter contract suite and test kit.

Adapter authors subclass :class:`AdapterContract` (and, for child-process adapters,
:class:`ProcessFaultContract`) and provide a harness; see docs/guide/adapters.md. The
scripted model server the suite drives runtimes against is :mod:`orchestrator.model_server`,
re-exported as :mod:`orchestrator.model_server`.

The suite needs pytest and hypothesis (``pip install 'ringleader[contract]'``). Application code
never imports this package.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401  # pyright: ignore[reportUnusedImport]
    import pytest  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ModuleNotFoundError as _missing:  # pragma: no cover - the extra is installed in the tests
    # the pytest plugin (contract.plugin) loads in any project that installs ringleader; without
    # the extra, the suite's names say what to install instead of breaking pytest
    _MISSING = _missing.name

    def __getattr__(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        raise ModuleNotFoundError(
            f"the ringleader contract suite needs {_MISSING}: pip install 'ringleader[contract]'",
            name=_MISSING,
        )
else:
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
