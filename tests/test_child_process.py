"""The supervision the store child and the model child share (ragstream/child_process.py), on real child processes:
the lifeline ends a child, a child that ignores it is killed and the signal named, and a wait ends as soon as the
child has died."""

from __future__ import annotations

import subprocess
import sys
import time

from ragstream import child_process

WAIT_SECONDS = 60.0
"""A bound reached only when the code under test is broken."""
HOLDS_ON = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
"""A child that ignores its lifeline and SIGTERM."""


def _python(code: str) -> subprocess.Popen[str]:
    return child_process.spawn([sys.executable, "-c", code], stderr=subprocess.DEVNULL, text=True)


def test_a_child_ends_when_its_lifeline_closes() -> None:
    child = _python("from ragstream.child_process import until_parent_gone; until_parent_gone(); print('bye')")
    assert child_process.stop(child, WAIT_SECONDS) is False
    assert child.returncode == 0 and child_process.signal_name(child.returncode) is None
    assert child.stdout is not None and child.stdout.read().strip() == "bye"


def test_a_child_that_holds_on_is_killed_and_the_signal_named() -> None:
    child = _python(HOLDS_ON)
    assert child.stdout is not None and child.stdout.readline().strip() == "up"
    assert child_process.stop(child, 0.0, terminate=True) is True
    assert child_process.signal_name(child.returncode) == "SIGKILL"


def test_a_wait_ends_when_the_child_dies_and_at_its_deadline_while_it_runs() -> None:
    dying = _python("raise SystemExit(3)")
    assert child_process.wait_while_alive(lambda timeout: False, dying, time.monotonic() + WAIT_SECONDS, 0.05) == "exited"
    assert dying.wait() == 3
    running = _python(HOLDS_ON)
    try:
        assert child_process.wait_while_alive(lambda timeout: False, running, time.monotonic(), 0.05) == "timeout"
        assert running.stdout is not None
        assert child_process.wait_while_alive(lambda timeout: bool(running.stdout.readline()), running,
                                              time.monotonic() + WAIT_SECONDS, 0.05) == "ready"
    finally:
        child_process.stop(running, 0.0, terminate=True)
