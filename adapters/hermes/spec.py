"""Where the entry points of an install made before ``adapters/hermes_spec.py`` point (re-run
``scripts/setup`` or ``pip install -e .`` to use the new one, which imports no adapter while
the runtimes are listed); the spec itself is :mod:`adapters.hermes_spec`."""

from adapters.hermes_spec import HERMES as HERMES

__all__ = ["HERMES"]
