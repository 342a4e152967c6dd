"""A stand-in for a notification service: prints each notification ringleader sends.

Apprise's ``json://HOST:PORT/PATH`` URLs POST a JSON body (``title``, ``message``, ``type``) to
an HTTP server; this one listens on 127.0.0.1 and prints each body as one JSON line. With
``ringleader.toml``'s ``[notify]`` pointing at it (``${RINGLEADER_EXAMPLE_HOOK}``):

    python examples/config/notify_receiver.py --port 8099 &
    RINGLEADER_EXAMPLE_HOOK=127.0.0.1:8099 \\
        ringleader --config examples/config/ringleader.toml run --runtime scripted 'say hi'

prints ``{"title": "ringleader: scripted run is done", "message": "run: …", …}``.
Tested by tests/examples/test_config.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length))
        print(json.dumps(body), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args  # quiet: stdout carries the notifications only


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8099, help="0: any free port")
    parser.add_argument("--count", type=int, default=0, help="exit after this many (0: never)")
    args = parser.parse_args(argv)
    with HTTPServer(("127.0.0.1", args.port), Handler) as server:
        host, port = server.server_address[:2]
        print(f"listening on {host!s}:{port}", file=sys.stderr, flush=True)
        received = 0
        while args.count == 0 or received < args.count:
            server.handle_request()
            received += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
