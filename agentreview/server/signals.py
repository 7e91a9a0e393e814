"""Signals in the warm server: its own stop signals, the caller's signals relayed to a command, and
the dispositions a forked command starts with.

* The server's loop is one thread blocked in ``select``; its SIGTERM/SIGINT/SIGHUP handlers only
  set a flag, and Python's wake-up fd (a socket the loop also selects on) ends the ``select``.
* A client forwards SIGINT, SIGTERM and SIGHUP it receives as ``{"op": "signal"}``; the server
  delivers them to the command's whole process group (the command and its lanes), exactly the
  signals a terminal would have sent them. Nothing else may be relayed.
* A forked child resets what the server changed, so the command sees the dispositions a fresh
  ``python`` process has (Ctrl-C raises KeyboardInterrupt, SIGPIPE ignored).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable

RELAYED_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def install_stop_handlers(wake_w: socket.socket, on_stop: Callable[[], None]) -> None:
    """Call ``on_stop`` on SIGTERM/SIGINT/SIGHUP and wake the loop through ``wake_w``."""
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)

    def handler(_signum: int, _frame: object) -> None:
        on_stop()

    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)


def relayable(value: object) -> signal.Signals | None:
    """The signal a client asked to relay, when it is one that may be relayed."""
    if isinstance(value, int) and not isinstance(value, bool) and value in {int(s) for s in RELAYED_SIGNALS}:
        return signal.Signals(value)
    return None


def signal_group(pid: int, signum: signal.Signals) -> None:
    """Send ``signum`` to the process group a command leads (gone or not ours: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def child_defaults() -> None:
    """The dispositions a fresh Python process starts with, as the in-process CLI would see them."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
