"""A griffe extension for the API pages (mkdocs.yml, mkdocstrings' ``extensions``): our
docstrings are written with reST roles (``:class:`Foo```, ``:mod:`.events```), which Markdown
would show literally; each role becomes a plain code span (``Foo``)."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const|type):`~?\.?([^`]+)`")


class RstRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(r"`\1`", obj.docstring.value)
