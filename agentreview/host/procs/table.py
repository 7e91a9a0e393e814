"""Reading ``/proc`` to find what is still alive of a process group (zombies excluded), and signalling it.

Also finds marked processes that left the group. Standard library only: the watchdog imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Collection, Iterable

MARKER_PREFIX = "AGENTREVIEW_LANE_"


def marker_name(token: str) -> str:
    """The environment variable that tags every marked child of the host with ``token``."""
    return f"{MARKER_PREFIX}{token}"


def lane_needle(token: str, lane: int | None = None) -> bytes:
    """The bytes to look for in ``b"\\0" + environ``: one child, or every marked child of the host
    when ``lane`` is None."""
    entry = f"\0{marker_name(token)}="
    return entry.encode() if lane is None else f"{entry}{lane}\0".encode()


def _read(path: str) -> bytes | None:
    # os.open/os.read, not open(): a sweep reads one file per process, and the file
    # object machinery would triple its cost.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # the process exited while we looked, or is not ours to read
        return None
    try:
        parts = []
        while chunk := os.read(fd, 65536):
            parts.append(chunk)
        return b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(fd)


def _state_and_pgrp(pid: str) -> tuple[str, int] | None:
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    # "pid (comm) state ppid pgrp ..." - comm may contain spaces and parentheses.
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 3:
        return None
    return fields[0].decode("ascii", "replace"), int(fields[2])


def live_targets(groups: Collection[int], needle: bytes | None) -> dict[int, int]:
    """``{pid: pgrp}`` of every live (non-zombie) process but this one in one of ``groups`` or whose
    environment contains ``needle``; groups the cheap probe finds gone are not looked for."""
    wanted = {pgid for pgid in groups if group_exists(pgid)}
    me = os.getpid()
    found: dict[int, int] = {}
    if not wanted and needle is None:
        return found
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        marked = False
        if needle is not None:
            env = _read(f"/proc/{entry}/environ")  # empty for a zombie
            marked = env is not None and bool(env) and needle in b"\0" + env
        if not marked and not wanted:
            continue
        info = _state_and_pgrp(entry)
        if info is None or info[0] in ("Z", "X"):
            continue
        if marked or info[1] in wanted:
            found[int(entry)] = info[1]
    return found


def group_exists(pgid: int) -> bool:
    """Cheap probe: does any process (zombies included) still have this process group id?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists but is not ours
        return True
    return True


def signal_targets(
    groups: Iterable[int], targets: dict[int, int], sig: signal.Signals, protect: Collection[int]
) -> None:
    """Send ``sig`` to each group, then to each target process and its own group; never to a group in
    ``protect`` (the caller's own), which rules out signalling the host by mistake."""
    seen: set[int] = set()
    for pgid in [*groups, *targets.values()]:
        if pgid in seen or pgid <= 1 or pgid in protect:
            continue
        seen.add(pgid)
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)
    for pid in targets:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
