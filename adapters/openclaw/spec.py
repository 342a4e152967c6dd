"""Where the entry points of an install made before ``adapters/openclaw_spec.py`` point (re-run
``scripts/setup`` or ``pip install -e .`` to use the new one, which imports no adapter while
the runtimes are listed); the spec itself is :mod:`adapters.openclaw_spec`."""

from adapters.openclaw_spec import OPENCLAW as OPENCLAW

__all__ = ["OPENCLAW"]
