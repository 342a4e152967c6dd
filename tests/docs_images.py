"""The pictures in the README and the docs (``docs/images/``) are made by the tests, so they show
what the code shows today.

A browser screenshot differs byte for byte from run to run (times, ages, temporary paths), so it
is rewritten only when what it depicts may have changed: its *source fingerprint* — a hash of the
files that draw the page (``orchestrator/board/static/``, the board's server and projection) and
of the scene the test sets up — is recorded beside the images in ``docs/images/sources.json``,
and a picture is written when it is missing or its fingerprint moved.
``RINGLEADER_DOCS_IMAGES=always`` rewrites every picture; ``=never`` writes none (a read-only
checkout). A picture whose bytes are the same (rich's SVG of fixed events) is never rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
SOURCES = IMAGES / "sources.json"
BOARD_SOURCES = (
    *sorted((REPO / "orchestrator" / "board" / "static").iterdir()),
    REPO / "orchestrator" / "board" / "server.py",
    REPO / "orchestrator" / "board" / "projection.py",
)
"""What draws the board's pages: a change here may change every screenshot of them."""


def fingerprint(files: Iterable[Path], scene: str) -> str:
    digest = hashlib.sha256(scene.encode())
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(REPO).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _recorded() -> dict[str, str]:
    try:
        data: object = json.loads(SOURCES.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in cast(dict[object, object], data).items()}


def wanted(name: str, print_: str) -> bool:
    """Whether ``docs/images/NAME`` should be (re)written for this source fingerprint."""
    mode = os.environ.get("RINGLEADER_DOCS_IMAGES", "")
    if mode == "never":
        return False
    if mode == "always":
        return True
    return not (IMAGES / name).exists() or _recorded().get(name) != print_


def save(name: str, print_: str, write: Callable[[Path], None]) -> bool:
    """Write ``docs/images/NAME`` with ``write(path)`` when :func:`wanted`; record its
    fingerprint. Returns whether it was written."""
    if not wanted(name, print_):
        return False
    IMAGES.mkdir(parents=True, exist_ok=True)
    write(IMAGES / name)
    recorded = _recorded() | {name: print_}
    SOURCES.write_text(json.dumps(dict(sorted(recorded.items())), indent=2) + "\n")
    return True


def save_text(name: str, text: str) -> bool:
    """Write a text picture (an SVG) when its bytes differ from the committed one."""
    path = IMAGES / name
    if os.environ.get("RINGLEADER_DOCS_IMAGES") == "never":
        return False
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    IMAGES.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True
