"""A griffe extension for the API pages (mkdocs.yml, mkdocstrings' ``extensions``): our
docstrings are written with reST roles (``:class:`Foo```, ``:mod:`.events```), which Markdown
would show literally; each role becomes a plain code span (``Foo``)."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const|type):`~?\.?([^`]+)`")


def _plain(obj: griffe.Object | griffe.Alias) -> None:
    if obj.is_alias:
        return
    if obj.docstring is not None:
        obj.docstring.value = _ROLE.sub(r"`\1`", obj.docstring.value)
    for member in obj.members.values():
        _plain(member)


class RstRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Once a package is loaded: every docstring in it, the package's own included."""
        _plain(pkg)
