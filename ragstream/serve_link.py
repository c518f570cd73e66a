"""How a running ``ragstream serve`` (or ``ragstream watch``) announces itself in its data directory, and how
the CLI finds it.

The server writes ``{data_dir}/server.json`` (its URL, process id and kind) once it listens and removes
it when it stops. The CLI reads it: while that process lives, commands go to the server over HTTP
instead of opening the index (which the server holds). Only the standard library is imported here,
so the CLI can look before it loads anything heavy.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

SERVER_FILE = "server.json"
WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
"""A server bound to every address is reached over loopback."""


@dataclass(frozen=True)
class Announcement:
    """A running server of one index: where it answers and which process it is."""

    url: str
    pid: int
    kind: str = "serve"
    """The command that holds the index: ``serve``, or ``watch`` (which serves the index's API on loopback)."""


def client_url(host: str, port: int) -> str:
    """The URL a local client uses for a server bound to ``host:port``."""
    host = WILDCARD_HOSTS.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announce(data_dir: Path, url: str, kind: str = "serve") -> Path:
    """Write ``server.json`` for this process (atomically); returns its path."""
    path = Path(data_dir) / SERVER_FILE
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps({"url": url, "pid": os.getpid(), "kind": kind}))
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
    return path


def withdraw(data_dir: Path) -> None:
    """Remove ``server.json`` if this process wrote it."""
    found = announcement(data_dir)
    if found is not None and found.pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            (Path(data_dir) / SERVER_FILE).unlink()


def announcement(data_dir: Path) -> Announcement | None:
    """The server announced in ``data_dir`` while its process lives; None otherwise (or when unreadable)."""
    try:
        raw = json.loads((Path(data_dir) / SERVER_FILE).read_text())
        found = Announcement(url=str(raw["url"]), pid=int(raw["pid"]), kind=str(raw.get("kind", "serve")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if _alive(found.pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
