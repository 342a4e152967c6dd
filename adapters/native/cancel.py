"""Cancellation for one request: trio cancel scopes behind an ``AbortSignal``-like token.

:meth:`CancelToken.cancel` cancels every scope opened with :meth:`CancelToken.scope`; scopes
opened with :meth:`CancelToken.shield` keep running but get a grace deadline from the moment of
the cancel (history repair: a short one; ``un_abortable`` tools pass ``math.inf``: they run to
completion, as Glove says).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from contextlib import contextmanager

import trio

__all__ = ["DEFAULT_GRACE_S", "CancelToken"]

DEFAULT_GRACE_S = 30.0


class CancelToken:
    def __init__(self, grace_s: float = DEFAULT_GRACE_S) -> None:
        self.grace_s = grace_s
        self._cancelled = False
        self._scopes: list[trio.CancelScope] = []
        self._shields: dict[trio.CancelScope, float] = {}

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Idempotent. Call from inside trio."""
        if self._cancelled:
            return
        self._cancelled = True
        for scope in self._scopes:
            scope.cancel()
        now = trio.current_time()
        for shield, grace in self._shields.items():
            shield.deadline = min(shield.deadline, now + grace)

    @contextmanager
    def scope(self) -> Generator[trio.CancelScope, None, None]:
        scope = trio.CancelScope()
        if self._cancelled:
            scope.cancel()
        self._scopes.append(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.remove(scope)

    @contextmanager
    def shield(self, grace_s: float | None = None) -> Generator[trio.CancelScope, None, None]:
        """A shielded scope; after a cancel it gets ``grace_s`` (default the token's) more."""
        grace = self.grace_s if grace_s is None else grace_s
        scope = trio.CancelScope(shield=True)
        if self._cancelled:
            scope.deadline = trio.current_time() + grace
        else:
            scope.deadline = math.inf
        self._shields[scope] = grace
        try:
            with scope:
                yield scope
        finally:
            del self._shields[scope]
