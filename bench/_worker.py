"""Run one benchmark path in this process and print its rows as JSON (one object on stdout).

``python -m bench._worker KEY [--quick]``. The parent (``python -m bench``) runs each path in its
own worker so that imports, garbage, event loops and RSS stay apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

from ._core import Config, Row
from .registry import load_paths


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("key")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    paths = load_paths()
    spec = paths[args.key]
    quick = args.quick or args.smoke
    cfg = Config(quick=quick, passes=5 if quick else 7, smoke=args.smoke)
    try:
        rows = spec.fn(cfg)
    except Exception:
        tb = traceback.format_exc()
        row = Row(
            args.key, spec.title, "", "higher", not_built=f"failed: {tb.strip().splitlines()[-1]}"
        )
        row.notes.append(tb)
        rows = [row]
    sys.stdout.write(json.dumps([r.to_json() for r in rows]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
