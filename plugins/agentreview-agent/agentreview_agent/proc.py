"""Run one reviewer process in its own process group, bounded in time and memory.

Reviewer CLIs do not fail fast (Codex and OpenCode retry forever when the network is
down), and they spawn helpers, so the only safe stop is a signal to the whole group:
SIGTERM, then SIGKILL after a grace period. The same happens when the lane is
cancelled. Output is kept bounded so a chatty or hostile reviewer cannot exhaust
memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_CAPTURE = 8 * 1024 * 1024  # bytes kept per stream (the head: events are audited in order)
KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class ProcResult:
    """How a reviewer process ended. Exactly one of the flags explains an abnormal end."""

    rc: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    cancelled: bool = False
    spawn_error: str | None = None
    truncated: bool = False
    elapsed_s: float = 0.0

    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


class _Sink:
    """Reads one pipe to EOF, keeping at most ``limit`` bytes and noting truncation."""

    def __init__(self, stream, limit: int) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False
        self._stream = stream
        self._limit = limit
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536) if hasattr(self._stream, "read1") else self._stream.read(65536)
                if not chunk:
                    break
                room = self._limit - self.size
                if room > 0:
                    self.chunks.append(chunk[:room])
                    self.size += min(len(chunk), room)
                if len(chunk) > room:
                    self.truncated = True
        except (OSError, ValueError):
            pass

    def data(self) -> bytes:
        return b"".join(self.chunks)


def _feed(stdin, data: bytes) -> None:
    try:
        stdin.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def run_in_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes = b"",
    deadline: float,
    cancel: threading.Event,
    kill_grace_s: float = KILL_GRACE_S,
    max_capture: int = MAX_CAPTURE,
) -> ProcResult:
    """Run ``argv`` until it exits, ``deadline`` (a ``time.monotonic()`` value) passes or
    ``cancel`` is set; never raises for a process problem, never leaves the group behind."""
    started = time.monotonic()
    if cancel.is_set():
        return ProcResult(None, b"", b"", cancelled=True)
    if started >= deadline:
        return ProcResult(None, b"", b"", timed_out=True)
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=str(cwd),
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return ProcResult(None, b"", b"", spawn_error=f"{exc.strerror or exc} ({argv[0]})")
    out = _Sink(proc.stdout, max_capture)
    err = _Sink(proc.stderr, max_capture)
    feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
    feeder.start()
    timed_out = cancelled = False
    while True:
        remaining = deadline - time.monotonic()
        if cancel.is_set():
            cancelled = True
            break
        if remaining <= 0:
            timed_out = True
            break
        try:
            proc.wait(timeout=min(remaining, 0.05))
            break
        except subprocess.TimeoutExpired:
            continue
    if timed_out or cancelled:
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=kill_grace_s)
    # Whatever the leader did, nothing it started may outlive the attempt.
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()
    for sink in (out, err):
        sink.thread.join(timeout=2.0)
    feeder.join(timeout=1.0)
    for pipe in (proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            pipe.close()
    return ProcResult(
        rc=proc.returncode,
        stdout=out.data(),
        stderr=err.data(),
        timed_out=timed_out,
        cancelled=cancelled,
        truncated=out.truncated or err.truncated,
        elapsed_s=time.monotonic() - started,
    )
