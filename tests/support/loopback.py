"""A threaded HTTP server on 127.0.0.1 for test doubles of remote providers (not a test module)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

POLL_SECONDS = 0.05
BACKLOG = 64


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


class HungEndpoint:
    """A TCP endpoint on 127.0.0.1 that accepts every connection and never answers (a hung provider).

    ``base_url`` is ``http://127.0.0.1:PORT/v1``; ``connections`` counts the connections accepted so far
    (each HTTP attempt of a client without keep-alive reuse opens one). Use as a context manager.
    """

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(BACKLOG)
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._held)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            with self._lock:
                self._held.append(conn)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self._sock.close()
        with self._lock:
            for conn in self._held:
                conn.close()
