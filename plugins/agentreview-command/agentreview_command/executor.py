"""The command lane executor: ``sh -c <run>`` in its own session, bounded in time, output and lifetime.

One lane, start to end (AIP-62 Execution, Command lanes; reference-notes 2.22):

* ``sh -c <command>`` with stdin from /dev/null and stdout+stderr merged into one
  pipe, in a new session (so its own process group, pgid = the shell's pid, and
  no controlling terminal: a Ctrl-C at the host's terminal reaches the host, which
  cancels, and never the lane directly). Its environment carries the host's lane
  marker (:mod:`agentreview_command.procs`).
* The pipe is read as output arrives; only the last 64 KiB are kept.
* On timeout, on ``request.cancel`` or on :func:`cancel_all`: SIGTERM to the whole
  group (and to any marked process that left the group), SIGKILL to whatever is
  still alive five seconds later. When the shell exits by itself, anything it
  left running in its group is killed the same way, so the lane ends when its
  shell does and nothing outlives it.

Why a watchdog process, and why not only PR_SET_PDEATHSIG. A lane must not outlive
the host even when the host is SIGKILLed, which no code in the host can react to.
PDEATHSIG on the shell would not do: it fires when the *thread* that forked the
child exits (lanes run in a thread pool whose threads come and go), it reaches only
the shell and not the rest of its group, and setting it needs ``preexec_fn``, which
is unsafe in a threaded host and forces the slow fork path for every lane. Instead
one watchdog per host (:mod:`agentreview_command.watchdog`), started lazily with
the first lane, holds the read end of a pipe whose write end only the host holds.
Each lane writes ``+pgid`` after spawning and ``-pgid`` once its group is empty
(one write each; the watchdog is never waited for). However the host dies, the
kernel closes the pipe; the watchdog sees EOF (or its parent change), SIGTERMs every
registered group and every process carrying the host's marker, SIGKILLs the
rest after five seconds, and exits. It lives in its own session, so killing the
host's whole process group does not take it down first. The marker sweep also
covers the few microseconds between a lane's spawn and its registration.

What is still open: a lane process that both leaves its session (``setsid``) and
scrubs its environment cannot be found, and a lane running as the host's user can
kill the watchdog itself; confining hostile commands is the job of an AIP-36
sandbox, not of this executor.

``run_lane`` never raises: anything unexpected becomes a ``skipped`` outcome, and the
``finally`` path SIGKILLs the group before the lane is forgotten.
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
from dataclasses import dataclass, field
from pathlib import Path

from agentreview.api import LaneOutcome, LaneRequest
from agentreview_command import procs, watchdog
from agentreview_command.tail import TailBuffer

KILL_GRACE_S = 5.0
CANCELLED_WHILE_RUNNING = "review cancelled while this lane was running"
CANCELLED_BEFORE_START = "review cancelled before this lane started"

_TICK_S = 0.05  # how often a waiting lane looks at its cancel event
_READS_PER_TICK = 64  # bound the reads per tick so a flood of output cannot starve the deadline check
_CHUNK = 64 * 1024
_DRAIN_S = 0.5  # after the group is gone, how long to wait for a pipe someone outside it still holds
_KILL_WAIT_S = 2.0  # after SIGKILL, how long to wait for the kernel to finish the job


@dataclass
class _Running:
    """A lane in flight, as :func:`cancel_all` sees it."""

    pgid: int
    cancelled: threading.Event = field(default_factory=threading.Event)


_lane_numbers = itertools.count(1)
_running: dict[int, _Running] = {}
_running_lock = threading.Lock()


def cancel_all() -> int:
    """SIGTERM every running lane group now and cancel its lane; return how many there were.

    For the host's own shutdown (SIGTERM to the host, Ctrl-C twice): each lane then
    escalates to SIGKILL after the grace period and reports ``skipped``, exactly as
    when its ``request.cancel`` event is set.
    """
    with _running_lock:
        lanes = list(_running.values())
        for lane in lanes:
            lane.cancelled.set()
            with contextlib.suppress(OSError):
                os.killpg(lane.pgid, signal.SIGTERM)
    return len(lanes)


class CommandLaneExecutor:
    """Runs ``kind: command`` lanes (registered by :mod:`agentreview_command.plugin`)."""

    kind = "command"

    def __init__(self, shell: str = "/bin/sh") -> None:
        self.shell = shell

    def run_lane(self, request: LaneRequest) -> LaneOutcome:
        """Run one command lane to completion; never raises, never leaves a process behind."""
        try:
            return _run(request, self.shell)
        except Exception as exc:
            return LaneOutcome.skipped(f"internal error in the command lane executor: {type(exc).__name__}: {exc}")

    @staticmethod
    def cancel_all() -> int:
        """See :func:`cancel_all` (a method too, so the core can call it on the registered object)."""
        return cancel_all()


def _resolve_cwd(request: LaneRequest) -> tuple[Path, str | None]:
    raw = getattr(request.check, "cwd", None)
    cwd = Path(request.repo_root) if not raw else Path(request.repo_root) / raw  # an absolute cwd wins the join
    if not cwd.exists():
        problem = "does not exist"
    elif not cwd.is_dir():
        problem = "is not a directory"
    else:
        return cwd, None
    check_id = getattr(request.check, "id", "?")
    return cwd, (
        f"could not start: cwd '{cwd}' {problem} (check '{check_id}', field cwd; "
        "a relative cwd resolves against the repository root)"
    )


def _run(request: LaneRequest, shell: str) -> LaneOutcome:
    check = request.check
    command = request.command if request.command is not None else getattr(check, "run", None)
    if not isinstance(command, str) or not command:
        return LaneOutcome.skipped(f"internal: check '{getattr(check, 'id', '?')}' has no command to run")
    cwd, cwd_error = _resolve_cwd(request)
    if cwd_error:
        return LaneOutcome.skipped(cwd_error)
    if request.cancel.is_set():
        return LaneOutcome.skipped(CANCELLED_BEFORE_START)
    timeout_ms = int(check.timeoutMs)
    guard = watchdog.get()
    number = next(_lane_numbers)
    env = dict(os.environ)
    env[guard.marker] = str(number)
    deadline = time.monotonic() + timeout_ms / 1000
    try:
        proc = subprocess.Popen(
            [shell, "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return LaneOutcome.skipped(f"could not start: {exc}")
    lane = _Running(pgid=proc.pid)
    with _running_lock:
        _running[number] = lane
    try:
        guard.register(proc.pid)
        supervisor = _Supervisor(proc, procs.lane_needle(guard.token, number))
    except Exception:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=_KILL_WAIT_S)
        with _running_lock:
            _running.pop(number, None)
        guard.unregister(proc.pid)
        raise
    try:
        stop = supervisor.wait(deadline, (request.cancel, lane.cancelled))
        if stop == "cancel":
            return LaneOutcome.skipped(CANCELLED_WHILE_RUNNING)
        if stop == "timeout":
            return LaneOutcome.timeout(f"exceeded {timeout_ms}ms and was killed", supervisor.tail.text())
        code = proc.returncode if proc.returncode is not None else 1
        return LaneOutcome.exited(128 if code < 0 else code, supervisor.tail.text())
    finally:
        supervisor.close()
        with _running_lock:
            _running.pop(number, None)
        guard.unregister(proc.pid)


class _Supervisor:
    """Watches one lane's shell, its process group and its output pipe."""

    def __init__(self, proc: subprocess.Popen[bytes], needle: bytes) -> None:
        self.proc = proc
        self.pgid = proc.pid
        self.needle = needle
        self.tail = TailBuffer()
        self.finished = False  # set once nothing of the lane is left alive
        self._protect = {os.getpgrp()}
        self._pipe = proc.stdout
        self._fd = self._pipe.fileno() if self._pipe is not None else -1
        self._poller = select.poll()
        if self._fd >= 0:
            os.set_blocking(self._fd, False)
            self._poller.register(self._fd, select.POLLIN)

    # ------------------------------------------------------------------ waiting

    def wait(self, deadline: float, cancels: tuple[threading.Event, ...]) -> str:
        """Return ``"exited"``, ``"timeout"`` or ``"cancel"``; in every case the lane is dead on return."""
        stop = "exited"
        while self.proc.poll() is None:
            if any(event.is_set() for event in cancels):
                stop = "cancel"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stop = "timeout"
                break
            self._pump(min(_TICK_S, remaining))
        if stop == "exited" and any(event.is_set() for event in cancels):
            stop = "cancel"  # cancel_all's SIGTERM may end the shell before this loop sees the event
        self._read_available()
        self.terminate()
        self._drain(_DRAIN_S)
        return stop

    def _pump(self, wait_s: float) -> None:
        """Wait up to ``wait_s`` for output, or for the shell once the pipe has closed."""
        if self._fd >= 0:
            if self._poller.poll(wait_s * 1000):
                self._read_available()
        elif self.proc.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait_s)
        else:
            time.sleep(wait_s)

    def _read_available(self) -> None:
        for _ in range(_READS_PER_TICK):
            if self._fd < 0:
                return
            try:
                chunk = os.read(self._fd, _CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self._close_pipe()
                return
            self.tail.feed(chunk)

    def _drain(self, limit_s: float) -> None:
        """Collect output still in the pipe; bounded, since a process outside the group may hold it open."""
        end = time.monotonic() + limit_s
        while self._fd >= 0 and time.monotonic() < end:
            if self._poller.poll(max(0.0, end - time.monotonic()) * 1000):
                self._read_available()

    # ------------------------------------------------------------------ killing

    def _live(self) -> dict[int, int]:
        return procs.live_targets((self.pgid,), self.needle)

    def terminate(self) -> None:
        """SIGTERM the group and marked escapees, SIGKILL what is left after the grace period."""
        targets = self._live()
        if not targets:
            self.finished = True
            return
        signalled = set(targets)
        procs.signal_targets((self.pgid,), targets, signal.SIGTERM, self._protect)
        grace_end = time.monotonic() + KILL_GRACE_S
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
                procs.signal_targets((), fresh, signal.SIGTERM, self._protect)
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
            procs.signal_targets((self.pgid,), targets, signal.SIGKILL, self._protect)
            self.proc.poll()
            self._pump(0.01)

    # ------------------------------------------------------------------ closing

    def _close_pipe(self) -> None:
        if self._fd >= 0:
            self._poller.unregister(self._fd)
            self._fd = -1
        if self._pipe is not None:
            self._pipe.close()

    def close(self) -> None:
        """Whatever went wrong before: kill, close the pipe, reap the shell."""
        if not self.finished:
            self.kill()
        self._close_pipe()
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_KILL_WAIT_S)
