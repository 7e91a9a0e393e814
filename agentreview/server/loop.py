"""The server's loop: accept a client, fork its command, relay its signals and its exit status.

One process, one thread: a ``selectors`` loop over the listening Unix socket, the client
connections, one pidfd per running child and a wake-up socket for our own signals. A client
that goes away (even SIGKILLed) is seen as EOF and its child's process group gets SIGTERM, so
the engine cancels its lanes and records nothing; SIGKILL follows if that did not end it. A
server that goes away (even SIGKILLed) takes its children with it (:func:`child.die_with_server`).

Every connection's peer uid (SO_PEERCRED, from the kernel) must be ours, and a ``run`` is only
forked for a client whose process context (read from /proc through a pidfd, and as the client
itself reports it) is the server's own (:mod:`agentreview.server.context`); otherwise the
client is told why and runs the command itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.model.errors import AgentreviewError
from agentreview.server import context, protocol
from agentreview.server.child import become_command
from agentreview.server.directory import open_regular
from agentreview.server.signals import install_stop_handlers, relayable, signal_group

REQUEST_TIMEOUT_S = 5.0  # a connection must send its request this soon after the greeting
SEND_TIMEOUT_S = 1.0
KILL_AFTER_S = 10.0  # SIGKILL a child this long after its client went away and SIGTERM did not end it


@dataclass
class Job:
    """A forked command: its pid, a pidfd the loop selects on, and the client waiting for it."""

    pid: int
    pidfd: int
    conn: Conn | None
    kill_at: float | None = None


@dataclass
class Conn:
    """A client connection: its bytes and descriptors so far, and the command it started."""

    sock: socket.socket
    deadline: float
    buffer: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)
    job: Job | None = None
    context: dict[str, str] = field(default_factory=dict)  # ours, as read when it connected
    refusal: str | None = None  # why its commands are not ours to run, if they are not


class Server:
    """The loop. ``run()`` returns when stopped (``server stop``, a stale client, a signal) or idle."""

    def __init__(self, directory: Path, idle_timeout: float):
        self.directory = directory
        self.path = str(directory / protocol.SOCKET_NAME)
        self.idle_timeout = idle_timeout
        self.selector = selectors.DefaultSelector()
        self.conns: dict[int, Conn] = {}
        self.jobs: dict[int, Job] = {}
        self.stamp: dict[str, Any] = {}
        self.listener: socket.socket | None = None
        self.socket_ino = 0
        self.lock_fd = -1
        self.wake_r, self.wake_w = socket.socketpair()
        # Every child holds the read end; only we hold the write end, which the kernel closes however we die.
        self.death_r, self.death_w = os.pipe()
        self.stopping = False
        self.started = time.time()
        self.last_active = time.monotonic()
        self.served = 0

    # ------------------------------------------------------------------ set-up

    def lock(self) -> None:
        """Hold ``server.lock`` for our whole life: one server per home, and ``server stop`` waits on it."""
        fd = open_regular(self.directory / protocol.LOCK_NAME, os.O_RDWR | os.O_CREAT, "lock file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise AgentreviewError(f"{self.directory}: another agentreview server is already running") from exc
        self.lock_fd = fd

    def bind(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # we hold the lock: a socket left here is a dead server's
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(self.path)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self.socket_ino = os.lstat(self.path).st_ino
        listener.listen(64)
        listener.setblocking(False)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, ("listen", None))

    def install_signals(self) -> None:
        self.wake_r.setblocking(False)
        install_stop_handlers(self.wake_w, self._on_stop_signal)
        self.selector.register(self.wake_r, selectors.EVENT_READ, ("wake", None))

    def _on_stop_signal(self) -> None:
        self.stopping = True

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        self.last_active = time.monotonic()  # the idle clock starts when we can be reached, not before warm-up
        while True:
            if self.stopping:
                self._close_listener()
                if not self.jobs:
                    return 0
            now = time.monotonic()
            self._expire(now)
            idle = not self.jobs and not self.conns
            if idle and now - self.last_active >= self.idle_timeout:
                self.log(f"idle for {self.idle_timeout:g} s: exiting")
                self._close_listener()
                return 0
            for key, _ in self.selector.select(self._timeout(now)):
                kind, obj = key.data
                if kind == "listen":
                    self._accept()
                elif kind == "wake":
                    with contextlib.suppress(OSError):
                        self.wake_r.recv(4096)
                elif kind == "conn":
                    self._readable(obj)
                elif kind == "child":
                    self._reap(obj)

    def _timeout(self, now: float) -> float:
        moments = [self.last_active + self.idle_timeout] if not self.jobs and not self.conns else []
        moments += [c.deadline for c in self.conns.values() if c.job is None]
        moments += [j.kill_at for j in self.jobs.values() if j.kill_at is not None]
        return max(0.0, min(moments) - now) if moments else 3600.0

    def _expire(self, now: float) -> None:
        for conn in [c for c in self.conns.values() if c.job is None and c.deadline <= now]:
            self._drop(conn)
        for job in self.jobs.values():
            if job.kill_at is not None and job.kill_at <= now:
                job.kill_at = None
                signal_group(job.pid, signal.SIGKILL)

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        try:
            pid, uid, _gid = context.peer_credentials(sock)
        except OSError:
            sock.close()
            return
        if not protocol.peer_allowed(uid):
            self.log(f"refused a connection from uid {uid}")
            sock.close()
            return
        conn = Conn(sock, time.monotonic() + REQUEST_TIMEOUT_S)
        conn.refusal = self._admit(conn, pid)
        hello: dict[str, Any] = {"stamp": self.stamp, "pid": os.getpid()}
        if conn.refusal is not None:
            hello["refused"] = conn.refusal  # status and stop still answer; a run is refused
        if not self._reply(conn, hello):
            sock.close()
            return
        sock.setblocking(False)
        self.conns[sock.fileno()] = conn
        self.selector.register(sock, selectors.EVENT_READ, ("conn", conn))

    def _admit(self, conn: Conn, pid: int) -> str | None:
        """Why the client ``pid`` may not have its commands run here, or None when its context is ours.

        Read now, while its connection is open, through a pidfd (see :func:`context.peer_context`).
        """
        try:
            conn.context = context.own_context()
            peer = context.peer_context(conn.sock)
        except context.ContextError as exc:
            return f"its process context cannot be read: {exc}"
        keys = context.differences(conn.context, peer)
        if not keys:
            return None
        return f"its process context is not the server's: {context.describe(conn.context, peer, keys, 'client')}"

    def _reply(self, conn: Conn, message: dict[str, Any], fds: list[int] | None = None) -> bool:
        try:
            conn.sock.settimeout(SEND_TIMEOUT_S)
            protocol.send(conn.sock, message, fds)
            return True
        except (OSError, protocol.ProtocolError):
            return False
        finally:
            with contextlib.suppress(OSError):
                conn.sock.setblocking(False)

    def _readable(self, conn: Conn) -> None:
        eof = False
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(conn.sock, 65536, 8)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                eof = True
                break
            conn.fds += fds
            if not data:
                eof = True
                break
            conn.buffer += data
            if len(conn.buffer) > protocol.MAX_FRAME + 4 or len(conn.fds) > 3:
                eof = True
                break
        try:
            while conn.sock.fileno() >= 0:
                message, rest = protocol.split_frame(bytes(conn.buffer))
                if message is None:
                    break
                conn.buffer[:] = rest
                self._handle(conn, message)
        except protocol.ProtocolError as exc:
            self.log(f"bad frame: {exc}")
            eof = True
        if eof and conn.sock.fileno() >= 0:
            if conn.job is not None:
                self.log(f"client of pid {conn.job.pid} went away: SIGTERM to its process group")
                signal_group(conn.job.pid, signal.SIGTERM)
                conn.job.kill_at = time.monotonic() + KILL_AFTER_S
                conn.job.conn = None
                conn.job = None
            self._drop(conn)

    def _handle(self, conn: Conn, message: dict[str, Any]) -> None:
        op = message.get("op")
        if conn.job is not None:
            signum = relayable(message.get("signal"))
            if op == "signal" and signum is not None:
                signal_group(conn.job.pid, signum)
            return
        if op == "run":
            self._start(conn, message)
        elif op == "status":
            self._reply(conn, self.status())
            self._drop(conn)
        elif op in ("stop", "stale"):
            self.log("stop requested" if op == "stop" else "a client found this server stale: exiting")
            self.stopping = True
            self._reply(conn, {"stopping": True, "pid": os.getpid()})
            self._drop(conn)
        else:
            self._drop(conn)

    def status(self) -> dict[str, Any]:
        return {
            "running": True,
            "pid": os.getpid(),
            "socket": self.path,
            "version": self.stamp.get("version"),
            "startedAt": self.started,
            "uptimeSeconds": round(time.time() - self.started, 3),
            "idleTimeoutSeconds": self.idle_timeout,
            "active": len(self.jobs),
            "served": self.served,
            "stopping": self.stopping,
        }

    # ------------------------------------------------------------------ children

    def _start(self, conn: Conn, message: dict[str, Any]) -> None:
        argv, cwd, env, umask = message.get("argv"), message.get("cwd"), message.get("env"), message.get("umask")
        if not (
            isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str)
            and isinstance(umask, int) and 0 <= umask <= 0o777
            and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and len(conn.fds) == 3
        ) or self.stopping:
            self._drop(conn)
            return
        refusal = conn.refusal
        if refusal is None and context.differences(conn.context, message.get("context")):
            refusal = "the process context it reports is not the one the server read from /proc"
        if refusal is not None:
            self.log(f"not running a command: {refusal}")
            self._reply(conn, {"refused": refusal})
            self._drop(conn)
            return
        fds, conn.fds = conn.fds, []
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            become_command(argv, cwd, env, umask, fds, self._close_inherited, (server_pid, self.death_r))
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race
        for fd in fds:
            os.close(fd)
        self.served += 1
        job = Job(pid, os.pidfd_open(pid), conn)
        conn.job = job
        self.jobs[pid] = job
        self.selector.register(job.pidfd, selectors.EVENT_READ, ("child", job))
        # The client may then end the command itself if we die (a lost client is seen as EOF).
        self._reply(conn, {"started": pid}, [job.pidfd])

    def _reap(self, job: Job) -> None:
        _, status = os.waitpid(job.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        self.selector.unregister(job.pidfd)
        os.close(job.pidfd)
        del self.jobs[job.pid]
        if job.conn is not None:
            self._reply(job.conn, {"exit": code})
            job.conn.job = None
            self._drop(job.conn)
        self.last_active = time.monotonic()

    def _close_inherited(self) -> None:
        """In a child: drop the server's descriptors (the listener, other clients, pidfds, the lock, wake-up)."""
        for conn in list(self.conns.values()):
            conn.sock.close()
        for job in self.jobs.values():
            with contextlib.suppress(OSError):
                os.close(job.pidfd)
        if self.listener is not None:
            self.listener.close()
        self.wake_r.close()
        self.wake_w.close()
        os.close(self.death_w)
        self.selector.close()
        if self.lock_fd >= 0:
            os.close(self.lock_fd)

    # ------------------------------------------------------------------ tidying

    def _drop(self, conn: Conn) -> None:
        for fd in conn.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        conn.fds = []
        fileno = conn.sock.fileno()
        if fileno >= 0:
            self.conns.pop(fileno, None)
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(conn.sock)
            conn.sock.close()
        self.last_active = time.monotonic()

    def _close_listener(self) -> None:
        if self.listener is None:
            return
        self.selector.unregister(self.listener)
        self.listener.close()
        self.listener = None
        with contextlib.suppress(OSError):
            if os.lstat(self.path).st_ino == self.socket_ino:
                os.unlink(self.path)

    def log(self, line: str) -> None:
        """One timestamped line on stderr (``server.log`` when started by ``agentreview server start``)."""
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} agentreview server[{os.getpid()}]: {line}\n")
            sys.stderr.flush()
