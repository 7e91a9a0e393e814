"""Start a child so that a signal which raises in the main thread cannot lose it.

A run's signal handler raises wherever the main thread stands (:mod:`agentreview.engine.interrupt`). Raised
inside ``subprocess.Popen`` after the fork, that exception would leave a child no one ends, outliving the run;
so while a child starts the exception waits, and :func:`end` raises it where the caller can end the child.
"""

from __future__ import annotations

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


def run(argv: Sequence[str], *, input: Any = None, timeout: float, **popen: Any) -> subprocess.CompletedProcess[Any]:
    """:func:`subprocess.run` (unchecked) whose child is killed whatever ends the wait, a signal
    that came while it started included."""
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    begin()
    try:
        proc = subprocess.Popen(list(argv), **popen)
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
