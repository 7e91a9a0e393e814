"""SIGINT, SIGTERM and SIGHUP stop a run where it stands, whatever it is doing.

While a run is *armed* the handler also raises :class:`Interrupted` in the main thread (planning and signing never
look at the cancel event); lanes, prepare steps and the recording are *shielded*: their processes are reaped, and
a recorded review is reported as recorded.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from agentreview.engine.errors import Cancelled
from agentreview.host.procs import spawn

__all__ = ["Interrupted", "armed", "disarm", "handle_signals", "shielded"]

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A signal stopped the run where it stood (a BaseException, so no ``except Exception`` keeps it)."""


class _State:
    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self.armed = False

    def handler(self, signum: int, frame: FrameType | None) -> None:
        self.cancel.set()
        if self.armed:
            self.armed = False
            spawn.raise_now_or_after_start(Interrupted())


_current: _State | None = None


@contextlib.contextmanager
def handle_signals(cancel: threading.Event) -> Iterator[None]:
    """Install the handlers (main thread only; elsewhere nothing happens); the previous ones come back after."""
    global _current
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state, outer = _State(cancel), _current
    previous: dict[signal.Signals, Any] = {signum: signal.signal(signum, state.handler) for signum in SIGNALS}
    _current = state
    try:
        yield
    finally:
        _current = outer
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextlib.contextmanager
def armed() -> Iterator[None]:
    """A signal raises :class:`Interrupted` within this block (unless shielded); a signal that came
    before it raises at once."""
    state = _current
    if state is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    if state.cancel.is_set():
        raise Interrupted()
    state.armed = True
    try:
        yield
    finally:
        state.armed = False


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """No signal raises within this block (the cancel event still says it came); when it ends
    normally, :class:`Cancelled` if one came, else armed again."""
    state = _current
    if state is None or not state.armed or threading.current_thread() is not threading.main_thread():
        yield
        return
    state.armed = False
    yield
    if state.cancel.is_set():
        raise Cancelled()
    state.armed = True


def disarm() -> None:
    """From here to the end of the run no signal raises: what follows records the review."""
    if _current is not None and threading.current_thread() is threading.main_thread():
        _current.armed = False
