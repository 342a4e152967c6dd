"""Where the entry points of an install made before ``adapters/claude_code_spec.py`` point (re-run
``scripts/setup`` or ``pip install -e .`` to use the new one, which imports no adapter while
the runtimes are listed); the spec itself is :mod:`adapters.claude_code_spec`."""

from adapters.claude_code_spec import CLAUDE_CODE as CLAUDE_CODE

__all__ = ["CLAUDE_CODE"]
