"""What ragstream's child processes share: the store child (:mod:`ragstream.store.edge_process`, which runs
:mod:`ragstream.store.edge_child`) and the model child (:mod:`ragstream.providers.local_llm`, which runs
:mod:`ragstream.providers.local_llm_child`).

* **The lifeline.** The parent starts the child with a pipe on its stdin (:func:`spawn`) and never writes to it; the
  child waits for its end (:func:`until_parent_gone`) and exits, so a child never outlives its parent, however the
  parent ended.
* **Waiting with a deadline.** :func:`wait_while_alive` waits for something the child does (its ready line, an
  answer) in steps, checking between them that it still runs: a child that died fails the wait at once, one that
  runs on fails it at the deadline.
* **How it ended.** :func:`signal_name` names the signal that killed it (SIGKILL, SIGSEGV, ...).
* **Stopping.** :func:`stop` closes the lifeline (and, for a child that handles it, sends SIGTERM), waits, and kills
  a child that does not exit in time.

This module imports neither ``ragstream.store`` nor ``ragstream.providers`` (both import it), nor anything heavy: the
children import it too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Literal

READ_BYTES = 4096
"""How much of stdin a child reads at a time while it waits for its end."""

Waited = Literal["ready", "exited", "timeout"]


def spawn(command: Sequence[str], *, stderr: int | IO[Any], text: bool = False, env: Mapping[str, str] | None = None,
          new_session: bool = False) -> subprocess.Popen[Any]:
    """Start a child with its lifeline (a pipe on its stdin) and a pipe on its stdout (its ready line)."""
    return subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=text,
                            env=None if env is None else dict(env), start_new_session=new_session)


def wait_while_alive(ready: Callable[[float], bool], process: subprocess.Popen[Any], until: float,
                     step: float) -> Waited:
    """Call ``ready(timeout)`` (waiting at most ``step`` seconds each time) until it is true ("ready"), the child
    has exited ("exited"), or the monotonic clock reaches ``until`` ("timeout")."""
    while not ready(min(step, max(0.0, until - time.monotonic()))):
        if process.poll() is not None:
            return "exited"
        if time.monotonic() >= until:
            return "timeout"
    return "ready"


def signal_name(returncode: int) -> str | None:
    """The name of the signal that ended a process with ``returncode`` (``SIGKILL``; its number for a signal without
    a name), or None when it exited by itself."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)


def stop(process: subprocess.Popen[Any], timeout: float, *, terminate: bool = False) -> bool:
    """Close the child's lifeline (with ``terminate``, send it SIGTERM too), wait up to ``timeout`` seconds for it to
    exit, then kill it. True when it had to be killed."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    if terminate and process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=max(0.0, timeout))
        return False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return True


def until_parent_gone() -> None:
    """In a child: return when the parent has closed the lifeline (or died)."""
    while os.read(sys.stdin.fileno(), READ_BYTES):
        pass
