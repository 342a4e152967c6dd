"""The tiny agent the adapter drives: ``agent.py --json PROMPT`` prints one JSON object a line.

It stands in for a real agent CLI (Claude Code's ``--output-format stream-json``, Codex's
``exec --json``): it says hello with a session id, "uses a tool" (lists its working directory),
answers by echoing the prompt, reports its usage and ends::

    {"t": "hello", "session": "echo-…"}
    {"t": "call", "id": "c1", "name": "list_dir", "args": {"path": "."}}
    {"t": "called", "id": "c1", "out": "README.md\\nsrc"}
    {"t": "text", "text": "You said: hello"}
    {"t": "usage", "in": 1, "out": 3}
    {"t": "end", "summary": "You said: hello"}

Standard library only, so any Python runs it. ``--version`` prints its version.
"""

from __future__ import annotations

import json
import os
import sys
import uuid

VERSION = "echo-agent 0.1.0"


def say(frame: dict[str, object]) -> None:
    print(json.dumps(frame), flush=True)


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        print(VERSION)
        return 0
    if len(argv) != 2 or argv[0] != "--json":
        print("usage: agent.py --json PROMPT | --version", file=sys.stderr)
        return 2
    prompt = argv[1]
    say({"t": "hello", "session": f"echo-{uuid.uuid4().hex}"})
    say({"t": "call", "id": "c1", "name": "list_dir", "args": {"path": "."}})
    say({"t": "called", "id": "c1", "out": "\n".join(sorted(os.listdir(".")))})
    answer = f"You said: {prompt}"
    say({"t": "text", "text": answer})
    say({"t": "usage", "in": len(prompt.split()), "out": len(answer.split())})
    say({"t": "end", "summary": answer})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
