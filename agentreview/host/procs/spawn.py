"""Start a child so that a signal which raises in the main thread cannot lose it.

A run's signal handler raises wherever the main thread stands (:mod:`agentreview.engine.interrupt`). Raised
inside ``subprocess.Popen`` after the fork, that exception would leave a child no one ends, outliving the run;
so while a child starts the exception waits, and :func:`end` raises it where the caller can end the child.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

_state = threading.local()


def raise_now_or_after_start(exc: BaseException) -> None:
    """Raise ``exc``, unless this thread is starting a child: then :func:`end` raises it."""
    if getattr(_state, "depth", 0):
        _state.pending = exc
        return
    raise exc


def begin() -> None:
    """A child is about to start: a signal's exception waits for :func:`end`."""
    _state.depth = getattr(_state, "depth", 0) + 1


def end() -> None:
    """The child is started (or failed to start); raise the exception that waited, if any."""
    _state.depth = max(0, getattr(_state, "depth", 0) - 1)
    exc = getattr(_state, "pending", None)
    if exc is not None and _state.depth == 0:
        _state.pending = None
        raise exc


class _Popen(subprocess.Popen[Any]):
    """A child whose bounded wait wakes when it exits: ``Popen.wait(timeout)`` polls with doubling
    sleeps (1, 2, 4 ms, ...), a delay every git command of a hook or gate would pay."""

    def wait(self, timeout: float | None = None) -> int:
        if timeout is not None and self.returncode is None:
            _until_exit(self.pid, timeout)
        return super().wait(timeout)


def _until_exit(pid: int, timeout: float) -> None:
    """Return when ``pid`` has exited (still unreaped) or ``timeout`` has passed; at once where the
    system has no pidfd, leaving the wait to ``Popen``'s own polling."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll(max(0.0, timeout) * 1000)
    finally:
        os.close(fd)


def run(argv: Sequence[str], *, input: Any = None, timeout: float, **popen: Any) -> subprocess.CompletedProcess[Any]:
    """:func:`subprocess.run` (unchecked) whose child is killed whatever ends the wait, a signal
    that came while it started included."""
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    begin()
    try:
        proc = _Popen(list(argv), **popen)
    except BaseException:
        end()
        raise
    with proc:
        try:
            end()
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            exc.stdout, exc.stderr = proc.communicate()
            raise
        except BaseException:
            proc.kill()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
