"""Where the entry points of an install made before ``adapters/native_spec.py`` point (re-run
``scripts/setup`` or ``pip install -e .`` to use the new one, which imports no adapter while
the runtimes are listed); the spec itself is :mod:`adapters.native_spec`."""

from adapters.native_spec import NATIVE as NATIVE

__all__ = ["NATIVE"]
