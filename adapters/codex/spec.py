"""Where the entry points of an install made before ``adapters/codex_spec.py`` point (re-run
``scripts/setup`` or ``pip install -e .`` to use the new one, which imports no adapter while
the runtimes are listed); the spec itself is :mod:`adapters.codex_spec`."""

from adapters.codex_spec import CODEX as CODEX

__all__ = ["CODEX"]
