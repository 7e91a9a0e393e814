"""The host side of the process watchdog: one small process per host, started with the first child.

Every child the host starts through :func:`agentreview.host.procs.group.run_process_group`
registers its process group here as it starts and unregisters it once the group
is empty. Registration is one short write to a pipe, so it costs a child
microseconds; the watchdog itself (see :mod:`agentreview.host.procs.watchdog_main`)
is a separate Python started once, in the background, and never waited for.

Why a watchdog process, and why not only PR_SET_PDEATHSIG. A child must not outlive
the host even when the host is SIGKILLed, which no code in the host can react to.
PDEATHSIG would not do: it fires when the *thread* that forked the child exits
(lanes run in a thread pool whose threads come and go), it reaches only the leader
and not the rest of its group, and setting it needs ``preexec_fn``, which is unsafe
in a threaded host and forces the slow fork path for every child. Instead the
watchdog holds the read end of a pipe whose write end only the host holds; however
the host dies, the kernel closes the pipe and the watchdog kills every registered
group (and every process carrying the host's marker). It lives in its own session,
so killing the host's whole process group does not take it down first.

If the watchdog dies while the host lives (someone killed it), the next
registration notices the broken pipe, starts a new one and replays the groups
still running. If it cannot be started at all, children still run and are still
killed on timeout and cancel; only the host-killed case loses its guarantee, and
:attr:`Watchdog.error` says why.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

from agentreview.host.procs import table

# The directory holding the ``agentreview`` package: the watchdog runs with ``-I -S``
# (no site-packages, no environment), so it finds the package by this path alone.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_BOOTSTRAP = (
    f"import sys; sys.path.insert(0, {_PACKAGE_PARENT!r}); "
    "from agentreview.host.procs.watchdog_main import main; sys.exit(main())"
)


class Watchdog:
    """One per host process; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._fd = -1  # our end of the pipe to the watchdog's stdin
        self._groups: set[int] = set()
        self.token = secrets.token_hex(8)
        self.error: str | None = None

    @property
    def marker(self) -> str:
        """The environment variable every marked child of this host carries."""
        return table.marker_name(self.token)

    @property
    def pid(self) -> int | None:
        """The watchdog's pid while one is running."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def register(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            self._send(f"+{pgid}\n")

    def unregister(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)
            self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        for _ in range(2):
            if self._proc is not None and self._proc.poll() is not None:
                self._drop()
            fresh = self._proc is None
            if fresh and not self._start():
                return
            payload = "".join(f"+{pgid}\n" for pgid in self._groups) if fresh else line
            try:
                os.write(self._fd, payload.encode("ascii"))
                return
            except OSError as exc:  # it died under us: start another and replay
                self.error = f"watchdog pipe failed: {exc}"
                self._drop()

    def _start(self) -> bool:
        if not sys.executable:
            self.error = "no Python interpreter path (sys.executable is empty) to start the process watchdog"
            return False
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, str(os.getpid()), self.token],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
                close_fds=True,
                bufsize=0,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            self.error = f"could not start the process watchdog: {exc}"
            self._proc = None
            return False
        self._fd = self._proc.stdin.fileno() if self._proc.stdin is not None else -1
        self.error = None
        return True

    def _drop(self) -> None:
        """Close our end of the pipe and forget the watchdog process.

        In a forked child this drops the inherited copy, so the parent's watchdog
        still sees EOF when the parent dies.
        """
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        self._proc = None
        self._fd = -1


_instance: Watchdog | None = None
_instance_lock = threading.Lock()


def get() -> Watchdog:
    """This process's watchdog client (the process itself starts with the first registration)."""
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = Watchdog()
        return _instance


def _after_fork_in_child() -> None:
    global _instance, _instance_lock
    if _instance is not None:
        _instance._drop()
    _instance = None
    _instance_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
