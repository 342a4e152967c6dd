"""What every test shares: no test reads or writes the person's own state.

A test that forgets ``RINGLEADER_STATE_DIR`` (or strips every ``RINGLEADER_*`` variable from a
child's environment) would otherwise fall back to ``$XDG_STATE_HOME/ringleader`` or
``~/.local/state/ringleader`` — the developer's real event log, approvals and tokens. The whole
session gets a state home of its own instead; tests that want their own directory still set one.

Output widths do not depend on where the tests run either: pytest-xdist's workers (``scripts/test``
runs the suite on several) are given ``COLUMNS=80``/``LINES=24``, a developer's shell may export
others; the CLI's tables are plain and wide when ``COLUMNS`` is unset, as in CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


@pytest.fixture(autouse=True, scope="session")
def _a_state_home_of_the_sessions_own(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = before
