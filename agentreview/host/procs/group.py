"""Run one child in its own process group, bounded in time, output and lifetime.

The child starts in a new session, registered with the watchdog first; at the deadline, on cancel, on a stall
or when the leader exits, the whole group gets SIGTERM, then SIGKILL (with ``mark=True`` descendants that left
the group too). A process problem is a result, never an exception.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Literal

from agentreview.host.procs import spawn, table, watchdog
from agentreview.host.procs.buffers import Buffer, HeadBuffer, TailBuffer
from agentreview.model.record import record

MAX_CAPTURE = 8 * 1024 * 1024  # default bytes kept per stream
KILL_GRACE_S = 5.0  # SIGTERM to SIGKILL

_TICK_S = 0.05  # how often a waiting run looks at its cancel events
_READS_PER_TICK = 64  # bound the reads per tick so a flood of output cannot starve the deadline check
_CHUNK = 64 * 1024
_DRAIN_S = 0.5  # after the group is gone, how long to wait for a pipe someone outside it still holds
_KILL_WAIT_S = 2.0  # after SIGKILL, how long to wait for the kernel to finish the job

Keep = Literal["head", "tail"]
_numbers = itertools.count(1)


@record
class ProcessResult:
    """How a child ended. ``spawn_error``, ``timed_out`` and ``cancelled`` explain an abnormal end
    (at most one is set); otherwise ``returncode`` is the leader's exit status (negative: the
    signal that killed it). With ``merge_stderr`` both streams are in ``stdout``."""

    returncode: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False
    cancelled: bool = False
    stalled: bool = False  # stdout went quiet for ``idle_s`` after its first output
    spawn_error: str | None = None
    truncated: bool = False  # a stream printed more than ``max_output`` bytes
    elapsed_s: float = 0.0

    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def run_process_group(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    deadline: float,
    cancel: threading.Event | Iterable[threading.Event] = (),
    stdin: bytes | None = None,
    merge_stderr: bool = False,
    keep: Keep = "head",
    max_output: int = MAX_CAPTURE,
    kill_grace_s: float = KILL_GRACE_S,
    mark: bool = False,
    idle_s: float | None = None,
) -> ProcessResult:
    """Run ``argv`` until it exits, ``deadline`` (a ``time.monotonic()`` value) passes or a
    ``cancel`` event is set; then end its whole group. ``env`` is the child's entire
    environment. ``keep`` says which end of each stream to keep, ``max_output`` bytes of it.
    ``idle_s``: stop it as ``stalled`` once stdout has been quiet that long after its first byte."""
    started = time.monotonic()
    events = (cancel,) if isinstance(cancel, threading.Event) else tuple(cancel)
    if any(event.is_set() for event in events):
        return ProcessResult(cancelled=True)
    if started >= deadline:
        return ProcessResult(timed_out=True)
    guard = watchdog.get()
    guard.ensure_running()
    child_env = dict(env)
    needle = None
    if mark:
        number = next(_numbers)
        child_env[guard.marker] = str(number)
        needle = table.lane_needle(guard.token, number)
    out, err = _buffer(keep, max_output), _buffer(keep, max_output)
    spawn.begin()  # a signal's exception waits until the child is registered and can be ended
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=child_env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        spawn.end()
        return ProcessResult(spawn_error=str(exc), elapsed_s=time.monotonic() - started)
    except BaseException:
        spawn.end()
        raise
    ended = False
    try:
        guard.register(proc.pid)
        supervisor = _Supervisor(proc, stdin or b"", needle, out, err, kill_grace_s, idle_s)
        ended = True
        spawn.end()
    except BaseException:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=_KILL_WAIT_S)
        guard.unregister(proc.pid)
        if not ended:
            spawn.end()  # a signal's exception that waited is raised instead
        raise
    try:
        stop = supervisor.wait(deadline, events)
    finally:
        supervisor.close()
        guard.unregister(proc.pid)
    return ProcessResult(
        returncode=proc.returncode,
        stdout=out.data(),
        stderr=err.data(),
        timed_out=stop == "timeout",
        cancelled=stop == "cancel",
        stalled=stop == "stalled",
        truncated=out.truncated or err.truncated,
        elapsed_s=time.monotonic() - started,
    )


def _buffer(keep: Keep, limit: int) -> Buffer:
    return TailBuffer(limit) if keep == "tail" else HeadBuffer(limit)


class _Supervisor:
    """Watches one child's leader, its process group and its pipes."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stdin: bytes,
        needle: bytes | None,
        out: Buffer,
        err: Buffer,
        grace_s: float,
        idle_s: float | None = None,
    ) -> None:
        self.proc = proc
        self.idle_s = idle_s
        self.last_output: float | None = None  # when stdout last gave bytes (None: not yet)
        self.pgid = proc.pid
        self.needle = needle
        self.grace_s = grace_s
        self.finished = False  # set once nothing of the child is left alive
        self._protect = {os.getpgrp()}
        self._poller = select.poll()
        self._readers: dict[int, tuple[IO[bytes], Buffer]] = {}
        for pipe, buf in ((proc.stdout, out), (proc.stderr, err)):
            if pipe is not None:
                fd = pipe.fileno()
                os.set_blocking(fd, False)
                self._poller.register(fd, select.POLLIN)
                self._readers[fd] = (pipe, buf)
        self._stdin = proc.stdin
        self._stdin_fd = -1
        self._pending = memoryview(stdin)
        if self._stdin is not None:
            self._stdin_fd = self._stdin.fileno()
            os.set_blocking(self._stdin_fd, False)
            self._poller.register(self._stdin_fd, select.POLLOUT)

    # ------------------------------------------------------------------ waiting

    def wait(self, deadline: float, cancels: tuple[threading.Event, ...]) -> str:
        """Return ``"exited"``, ``"timeout"``, ``"cancel"`` or ``"stalled"``; in every case the group is dead
        on return."""
        stop = "exited"
        while self.proc.poll() is None:
            if any(event.is_set() for event in cancels):
                stop = "cancel"
                break
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                stop = "timeout"
                break
            if self.idle_s is not None and self.last_output is not None and now - self.last_output >= self.idle_s:
                stop = "stalled"
                break
            self._pump(min(_TICK_S, remaining))
        if stop == "exited" and any(event.is_set() for event in cancels):
            stop = "cancel"  # a cancel's own signal may end the leader before this loop sees the event
        self._read_available()
        self._close_stdin()
        self.terminate()
        self._drain(_DRAIN_S)
        return stop

    def _pump(self, wait_s: float) -> None:
        """Wait up to ``wait_s`` for output or room on stdin, or for the leader once the pipes have closed."""
        if self._readers or self._stdin_fd >= 0:
            for fd, _mask in self._poller.poll(wait_s * 1000):
                if fd == self._stdin_fd:
                    self._feed()
                elif fd in self._readers:
                    self._read(fd)
        elif self.proc.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait_s)
        else:
            time.sleep(wait_s)

    def _feed(self) -> None:
        try:
            while self._pending:
                written = os.write(self._stdin_fd, self._pending[:_CHUNK])
                self._pending = self._pending[written:]
        except BlockingIOError:
            return
        except OSError:  # the child closed its stdin: what it did not read, it did not want
            pass
        self._close_stdin()

    def _read(self, fd: int) -> None:
        pipe, buf = self._readers[fd]
        for _ in range(_READS_PER_TICK):
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._close_reader(fd)
                return
            if pipe is self.proc.stdout:
                self.last_output = time.monotonic()
            buf.feed(chunk)

    def _read_available(self) -> None:
        for fd in list(self._readers):
            self._read(fd)

    def _drain(self, limit_s: float) -> None:
        """Collect output still in the pipes; bounded, since a process outside the group may hold them open."""
        end = time.monotonic() + limit_s
        while self._readers and time.monotonic() < end:
            for fd, _mask in self._poller.poll(max(0.0, end - time.monotonic()) * 1000):
                if fd in self._readers:
                    self._read(fd)

    # ------------------------------------------------------------------ killing

    def _live(self) -> dict[int, int]:
        return table.live_targets((self.pgid,), self.needle)

    def terminate(self) -> None:
        """SIGTERM the group and marked escapees, SIGKILL what is left after the grace period."""
        targets = self._live()
        if not targets:
            self.finished = True
            return
        signalled = set(targets)
        table.signal_targets((self.pgid,), targets, signal.SIGTERM, self._protect)
        grace_end = time.monotonic() + self.grace_s
        while time.monotonic() < grace_end:
            self.proc.poll()
            self._pump(_TICK_S)
            targets = self._live()
            if not targets:
                self.finished = True
                return
            fresh = {pid: pgrp for pid, pgrp in targets.items() if pid not in signalled}
            if fresh:  # escaped or spawned during the grace period
                signalled.update(fresh)
                table.signal_targets((), fresh, signal.SIGTERM, self._protect)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the group and marked escapees until none is left (bounded)."""
        end = time.monotonic() + _KILL_WAIT_S
        while True:
            targets = self._live()
            if not targets:
                self.finished = True
                return
            if time.monotonic() >= end:
                return
            table.signal_targets((self.pgid,), targets, signal.SIGKILL, self._protect)
            self.proc.poll()
            self._pump(0.01)

    # ------------------------------------------------------------------ closing

    def _close_reader(self, fd: int) -> None:
        pipe, _ = self._readers.pop(fd)
        self._poller.unregister(fd)
        with contextlib.suppress(OSError):
            pipe.close()

    def _close_stdin(self) -> None:
        if self._stdin_fd >= 0:
            self._poller.unregister(self._stdin_fd)
            self._stdin_fd = -1
        if self._stdin is not None:
            with contextlib.suppress(OSError):
                self._stdin.close()
            self._stdin = None

    def close(self) -> None:
        """Whatever went wrong before: kill, close the pipes, reap the leader."""
        if not self.finished:
            self.kill()
        for fd in list(self._readers):
            self._close_reader(fd)
        self._close_stdin()
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_KILL_WAIT_S)
