"""The watchdog process: outlives the host only long enough to kill the children the host left behind.

The host writes ``+<pgid>`` / ``-<pgid>`` on its stdin; EOF, a changed parent or SIGTERM means the host is
gone. It ignores SIGINT and SIGHUP and lives in its own session. Standard library only, to start quickly.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

from agentreview.host.procs import table

KILL_GRACE_S = 5.0
_TICK_S = 0.05
_KILL_ROUNDS = 40
_TERM = {signal.SIGTERM}


class _Stop(Exception):
    """Raised from the SIGTERM handler so a blocking poll() ends at once."""


def _on_term(_signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the clean-up short
    raise _Stop


def _apply(line: bytes, groups: set[int]) -> None:
    text = line.strip()
    if len(text) < 2 or not text[1:].isdigit():
        return
    pgid = int(text[1:])
    if text[:1] == b"+":
        groups.add(pgid)
    elif text[:1] == b"-":
        groups.discard(pgid)


def _take(data: bytes, pending: bytearray, groups: set[int]) -> None:
    """Apply the whole lines of ``pending`` + ``data``; a partial last line stays in ``pending``."""
    pending += data
    *lines, rest = bytes(pending).split(b"\n")
    pending[:] = rest
    for line in lines:
        _apply(line, groups)


def watch(host_pid: int, groups: set[int], pending: bytearray) -> None:
    """Return when the host is gone; keep ``groups`` up to date meanwhile. SIGTERM can end it only while it waits:
    bytes read from the pipe are always applied, never dropped half-way."""
    poller = select.poll()
    poller.register(0, select.POLLIN)
    while True:
        # Registrations already in the pipe are read first, even when the host is already gone.
        if not poller.poll(1000):
            if os.getppid() != host_pid:
                return
            continue
        signal.pthread_sigmask(signal.SIG_BLOCK, _TERM)
        try:
            data = os.read(0, 65536)
            if not data:
                return
            _take(data, pending, groups)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERM)


def _drain(groups: set[int], pending: bytearray) -> None:
    """Apply what the pipe still holds: a registration the host wrote just before a SIGTERM counts."""
    poller = select.poll()
    poller.register(0, select.POLLIN)
    while poller.poll(0):
        data = os.read(0, 65536)
        if not data:
            return
        _take(data, pending, groups)


def reap(groups: set[int], token: str, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM every registered group and marked process, SIGKILL whatever is left after ``grace_s``."""
    needle = table.lane_needle(token)
    protect = {os.getpgrp()}
    targets = table.live_targets(groups, needle)
    signalled = set(targets)
    table.signal_targets(groups, targets, signal.SIGTERM, protect)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        time.sleep(_TICK_S)
        targets = table.live_targets(groups, needle)
        if not targets:
            return
        fresh = {pid: pgrp for pid, pgrp in targets.items() if pid not in signalled}
        if fresh:  # spawned during the grace period: they get their SIGTERM too
            signalled.update(fresh)
            table.signal_targets((), fresh, signal.SIGTERM, protect)
    for _ in range(_KILL_ROUNDS):
        targets = table.live_targets(groups, needle)
        if not targets:
            return
        table.signal_targets(groups, targets, signal.SIGKILL, protect)
        time.sleep(_TICK_S)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    host_pid, token = int(args[0]), args[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    groups: set[int] = set()
    pending = bytearray()
    with contextlib.suppress(_Stop, OSError):
        watch(host_pid, groups, pending)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        _drain(groups, pending)
    reap(groups, token)
    return 0
