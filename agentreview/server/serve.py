"""The warm server: import everything heavy once, then fork a child per command.

One process, one thread: a ``selectors`` loop over the listening Unix socket, the client
connections, one pidfd per running child and a wake-up socket for our own signals. A child
becomes its own process group, takes over the caller's stdin/stdout/stderr, cwd and
environment, runs :func:`agentreview.cli.entry.main` and leaves with ``os._exit``; the loop
relays its exit status. A client that goes away (even SIGKILLed) is seen as EOF and its
child's process group gets SIGTERM, so the engine cancels its lanes and records nothing.

Security: the socket lives in ``$AGENTREVIEW_HOME/server`` (mode 0700, ours, refused
otherwise), is itself 0600, and every connection's peer uid (SO_PEERCRED, from the kernel)
must be ours. Run as ``python -m agentreview.server.serve --home DIR --idle-timeout S``
(``agentreview server start`` does that).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import selectors
import signal
import socket
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from agentreview.model.errors import AgentreviewError
from agentreview.server import protocol

DEFAULT_IDLE_TIMEOUT_S = 15 * 60
REQUEST_TIMEOUT_S = 5.0  # a connection must send its request this soon after the greeting
SEND_TIMEOUT_S = 1.0
KILL_AFTER_S = 10.0  # SIGKILL a child this long after its client went away and SIGTERM did not end it
RELAYED_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
WARM_MANIFEST = b"---\nkind: review\nid: warm\ntarget: { kind: git-range, base: main }\nchecks:\n" \
    b"  - id: t\n    kind: command\n    run: 'true'\n---\n"
WARM_MODULES = (
    "agentreview.cli.app",
    "agentreview.manifest.parse",
    "agentreview.store.ledger",
    "agentreview.engine.run",
    "agentreview.engine.execute",
    "agentreview.verify.gate",
    "agentreview.signing.signers",
    "agentreview.store.export",
    "agentreview.report.progress",
    "agentreview.model.manifest",
    "agentreview.model.attestation",
    "rich.console",
    "rich.live",
)


class ServerDirError(AgentreviewError):
    """The server directory is not private to this user, so its socket could be reached by others."""


def check_dir(directory: Path, uid: int | None = None) -> None:
    """Refuse a directory that is not ours or that the group or others may enter."""
    info = directory.lstat()
    own = os.getuid() if uid is None else uid
    if not stat.S_ISDIR(info.st_mode):
        raise ServerDirError(f"{directory}: not a directory — remove it and run 'agentreview server start' again")
    if info.st_uid != own:
        raise ServerDirError(f"{directory}: owned by uid {info.st_uid}, not {own} — remove it or fix its owner")
    if info.st_mode & 0o077:
        raise ServerDirError(
            f"{directory}: mode {stat.S_IMODE(info.st_mode):04o} lets others in — run 'chmod 700 {directory}'"
        )


def prepare_dir(home: Path) -> Path:
    """``$AGENTREVIEW_HOME/server``, created 0700 when missing, checked always."""
    directory = home / "server"
    home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    check_dir(directory)
    sock = directory / protocol.SOCKET_NAME
    if len(os.fsencode(sock)) > protocol.SUN_PATH_MAX:
        raise ServerDirError(f"{sock}: path too long for a Unix socket — set AGENTREVIEW_HOME to a shorter path")
    return directory


def warm() -> list[str]:
    """Import and exercise the heavy parts once, so every child starts with them ready; problems, if any."""
    import importlib

    problems: list[str] = []
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a broken module is the child's error to report, not the server's
            problems.append(f"import {name}: {type(exc).__name__}: {exc}")
    steps = {
        "app": _warm_app,
        "plugins": _warm_plugins,
        "manifest": lambda: importlib.import_module("agentreview.manifest.parse").parse_review(WARM_MANIFEST),
        "attestation": _warm_attestation,
    }
    for label, step in steps.items():
        try:
            step()
        except Exception as exc:
            problems.append(f"warm {label}: {type(exc).__name__}: {exc}")
    if threading.active_count() != 1:
        problems.append(f"warm-up left {threading.active_count() - 1} thread(s) running; forking may copy a lock")
    return problems


def _warm_app() -> None:
    import typer

    from agentreview.cli.app import build_app

    typer.main.get_command(build_app())


def _warm_plugins() -> None:
    from agentreview.plugins.registry import load_registry

    load_registry(only=None, blocked=())


def _warm_attestation() -> None:
    from pydantic import ValidationError

    from agentreview.model.attestation import Attestation

    with contextlib.suppress(ValidationError):
        Attestation.model_validate({"kind": "attestation"})


def build_stamp() -> dict[str, Any]:
    """What a client compares to know the server runs its code (see :func:`client.stamp_matches`)."""
    from importlib.metadata import entry_points

    import agentreview

    entries = {ep.module for ep in entry_points(group="agentreview")}
    tops = {"agentreview"} | {module.split(".")[0] for module in entries}
    paths = {_origin(module) for module in entries} - {None}
    paths |= {
        os.path.realpath(module.__file__)
        for name, module in list(sys.modules.items())
        if name.split(".")[0] in tops and getattr(module, "__file__", None)
    }
    paths.add(os.path.realpath(__file__))  # this module runs as __main__, under another name
    paths |= {os.path.realpath(p) for p in sys.path if p.endswith("-packages") and os.path.isdir(p)}
    files = []
    for path in sorted(paths):
        with contextlib.suppress(OSError):
            files.append([path, os.stat(path).st_mtime_ns])
    return {"version": agentreview.__version__, "prefix": sys.prefix, "python": sys.version, "files": files}


def _origin(module: str) -> str | None:
    """The file a plugin's entry module loads from (imported or not), for the stamp."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return os.path.realpath(spec.origin) if spec is not None and spec.origin else None


@dataclass
class Job:
    pid: int
    pidfd: int
    conn: Conn | None
    kill_at: float | None = None


@dataclass
class Conn:
    sock: socket.socket
    deadline: float
    buffer: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)
    job: Job | None = None


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
        self.stopping = False
        self.started = time.time()
        self.last_active = time.monotonic()
        self.served = 0

    # ------------------------------------------------------------------ set-up

    def lock(self) -> None:
        fd = os.open(self.directory / protocol.LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
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
        self.wake_w.setblocking(False)
        self.wake_r.setblocking(False)
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        self.selector.register(self.wake_r, selectors.EVENT_READ, ("wake", None))

    def _on_signal(self, _signum: int, _frame: object) -> None:
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
                self._log(f"idle for {self.idle_timeout:g} s: exiting")
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
                self._signal(job, signal.SIGKILL)

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        try:
            uid = protocol.peer_uid(sock)
        except OSError:
            sock.close()
            return
        if not protocol.peer_allowed(uid):
            self._log(f"refused a connection from uid {uid}")
            sock.close()
            return
        conn = Conn(sock, time.monotonic() + REQUEST_TIMEOUT_S)
        if not self._reply(conn, {"stamp": self.stamp, "pid": os.getpid()}):
            sock.close()
            return
        sock.setblocking(False)
        self.conns[sock.fileno()] = conn
        self.selector.register(sock, selectors.EVENT_READ, ("conn", conn))

    def _reply(self, conn: Conn, message: dict[str, Any]) -> bool:
        try:
            conn.sock.settimeout(SEND_TIMEOUT_S)
            protocol.send(conn.sock, message)
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
            self._log(f"bad frame: {exc}")
            eof = True
        if eof and conn.sock.fileno() >= 0:
            if conn.job is not None:
                self._log(f"client of pid {conn.job.pid} went away: SIGTERM to its process group")
                self._signal(conn.job, signal.SIGTERM)
                conn.job.kill_at = time.monotonic() + KILL_AFTER_S
                conn.job.conn = None
                conn.job = None
            self._drop(conn)

    def _handle(self, conn: Conn, message: dict[str, Any]) -> None:
        op = message.get("op")
        if conn.job is not None:
            signum = message.get("signal")
            if op == "signal" and signum in {int(s) for s in RELAYED_SIGNALS}:
                self._signal(conn.job, signal.Signals(signum))
            return
        if op == "run":
            self._start(conn, message)
        elif op == "status":
            self._reply(conn, self.status())
            self._drop(conn)
        elif op in ("stop", "stale"):
            self._log("stop requested" if op == "stop" else "a client found this server stale: exiting")
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

    def _start(self, conn: Conn, message: dict[str, Any]) -> None:
        argv, cwd, env, umask = message.get("argv"), message.get("cwd"), message.get("env"), message.get("umask")
        valid = (
            isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str)
            and isinstance(umask, int) and 0 <= umask <= 0o777
            and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and len(conn.fds) == 3
        )
        if not valid or self.stopping:
            self._drop(conn)
            return
        fds, conn.fds = conn.fds, []
        pid = os.fork()
        if pid == 0:
            self._child(conn, argv, cwd, env, umask, fds)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race
        for fd in fds:
            os.close(fd)
        self.served += 1
        job = Job(pid, os.pidfd_open(pid), conn)
        conn.job = job
        self.jobs[pid] = job
        self.selector.register(job.pidfd, selectors.EVENT_READ, ("child", job))

    def _signal(self, job: Job, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signum)

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

    def _log(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} agentreview server[{os.getpid()}]: {line}\n")
            sys.stderr.flush()

    # ------------------------------------------------------------------ the child

    def _child(
        self, conn: Conn, argv: list[str], cwd: str, env: dict[str, str], umask: int, fds: list[int]
    ) -> NoReturn:
        """Become the caller's command: never returns into the loop, whatever happens."""
        code = 3
        try:
            os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            _default_signals()
            self._close_inherited()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            os.umask(umask)  # files the command writes (ledger, keys) get the caller's permissions
            code = _run_command(argv, cwd, env)
        except BaseException as exc:  # the child must reach os._exit, whatever was raised
            with contextlib.suppress(BaseException):
                os.write(2, f"agentreview: the warm server could not run the command: {exc}\n".encode())
        finally:
            os._exit(code)

    def _close_inherited(self) -> None:
        """Drop the server's descriptors: the listener, other clients, pidfds, the lock, the wake-up pair."""
        for conn in list(self.conns.values()):
            conn.sock.close()
        for job in self.jobs.values():
            with contextlib.suppress(OSError):
                os.close(job.pidfd)
        if self.listener is not None:
            self.listener.close()
        self.wake_r.close()
        self.wake_w.close()
        self.selector.close()
        if self.lock_fd >= 0:
            os.close(self.lock_fd)


def _default_signals() -> None:
    """The dispositions a fresh Python process starts with, as the in-process CLI would see them."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _text(fd: int, mode: str, encoding: str, errors: str, *, line_buffering: bool) -> Any:
    """A text stream on ``fd`` as Python builds sys.std* at start-up, so ``isatty()`` is the caller's terminal's."""
    import io

    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if "r" in mode else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=line_buffering)


def _run_command(argv: list[str], cwd: str, env: dict[str, str]) -> int:
    """In the child, on the caller's fds: take its cwd, environment and streams, run the CLI, flush."""
    import atexit
    import random
    import tempfile

    atexit._clear()  # the server's handlers are not this command's
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # computed from TMPDIR on first use: the caller's, not the server's
    random.seed()
    encoding = (env.get("PYTHONIOENCODING") or "").split(":")[0] or "utf-8"
    sys.stdin = sys.__stdin__ = _text(0, "rb", encoding, "strict", line_buffering=False)
    sys.stdout = sys.__stdout__ = _text(1, "wb", encoding, "strict", line_buffering=os.isatty(1))
    sys.stderr = sys.__stderr__ = _text(2, "wb", encoding, "backslashreplace", line_buffering=True)
    sys.argv = [sys.argv[0], *argv]
    from agentreview.cli.entry import _flush, main

    try:
        code = main(argv)
    finally:
        try:
            atexit._run_exitfuncs()
        finally:
            _flush(sys.stdout)
            _flush(sys.stderr)
    return code


def serve(home: Path, idle_timeout: float) -> int:
    """Check the directory, take the lock, warm up, bind, loop. The exit code of the server process."""
    directory = prepare_dir(home)
    server = Server(directory, idle_timeout)
    server.lock()
    for problem in warm():
        server._log(problem)
    server.stamp = build_stamp()
    server.install_signals()
    server.bind()
    server._log(f"listening on {server.path} (idle timeout {idle_timeout:g} s)")
    return server.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentreview.server.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    args = parser.parse_args(argv)
    try:
        return serve(args.home.resolve(), args.idle_timeout)
    except AgentreviewError as exc:
        sys.stderr.write(f"agentreview server: {exc}\n")
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
