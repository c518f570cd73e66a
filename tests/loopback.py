"""A threaded HTTP server on 127.0.0.1 for test doubles of remote providers (not a test module)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

POLL_SECONDS = 0.05


class LoopbackServer:
    """Serves ``handler`` on a free loopback port in a daemon thread; use as a context manager.

    ``base_url`` is the OpenAI-style ``http://127.0.0.1:PORT/v1``. ``release`` is set when the
    server stops, so handlers that hang on purpose can end.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.release = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL_SECONDS,), daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
