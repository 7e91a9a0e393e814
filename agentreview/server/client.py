"""The client half: hand a command to a running warm server, or say that it must run in-process.

Called from :func:`agentreview.cli.entry.console` before anything heavy is imported, so it uses the
standard library only (``os``, ``socket``, ``signal``, ``select``, ``json``, ``struct``). Every failure
before the server reports the command started means "run in-process" (with ``AGENTREVIEW_DEBUG``
set, one line on stderr says why); after that, the command belongs to the server and its exit
status is ours.

The command runs in the server's process context, so it is handed over only when that context is
this process's own (:mod:`agentreview.server.context`): the server checks the client (a client in a
sandbox must not have its lanes run outside it) and the client checks the server (a process in a
sandbox that planted the socket must not receive this terminal and environment).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys

from agentreview.server import context, protocol, wanted

CONNECT_TIMEOUT_S = 0.2  # a dead socket refuses at once; a live server accepts at once
GREETING_TIMEOUT_S = 1.0  # a server busy forking another command may take a moment to greet
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_LOST = 3  # the server went away before it reported the command's exit status
ORPHAN_WAIT_MS = 5000  # how long a client that lost its server waits for the command to be gone


class InProcess(Exception):
    """Why the command runs in this process after all."""


def stamp_matches(stamp: object) -> bool:
    """Whether the server runs the code this client would run: same version, interpreter and files.

    The server lists the files its loaded agentreview and plugin modules came from, and the
    directories that hold installed distributions, with their size, mtime, ctime, inode and
    device; any edit, install or uninstall since the server started changes one of them, even
    one that put the old mtime back.
    """
    import agentreview

    if not isinstance(stamp, dict):
        return False
    if stamp.get("version") != agentreview.__version__ or stamp.get("prefix") != sys.prefix:
        return False
    if stamp.get("python") != sys.version:
        return False
    entries = stamp.get("files")
    if not isinstance(entries, list) or not entries:
        return False
    own = os.path.realpath(agentreview.__file__ or "")
    seen_own = False
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            return False
        path, recorded = entry
        try:
            if protocol.fingerprint(path) != recorded:
                return False
        except OSError:
            return False
        seen_own = seen_own or path == own
    return seen_own


def _connect(env: dict[str, str] | os._Environ[str]) -> socket.socket:
    """A connection to this user's server at ``$AGENTREVIEW_HOME/server``; InProcess when none answers."""
    path = protocol.socket_path(env)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(path)
        # We are about to hand over our environment (tokens included) and our terminal.
        if not protocol.peer_allowed(protocol.peer_uid(sock)):
            raise InProcess("the server socket belongs to another user")
    except OSError as exc:
        sock.close()
        raise InProcess(f"no server answers at {path} ({exc.strerror or exc})") from exc
    except InProcess:
        sock.close()
        raise
    return sock


def connect(env: dict[str, str] | os._Environ[str]) -> socket.socket | None:
    """A connection to this user's server at ``$AGENTREVIEW_HOME/server``, or None (none there, stale, foreign)."""
    try:
        return _connect(env)
    except InProcess:
        return None


def _debug(line: str) -> None:
    if os.environ.get("AGENTREVIEW_DEBUG"):
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"agentreview: {line}\n")
            sys.stderr.flush()


def run_via_server(argv: list[str]) -> int | None:
    """The command's exit code when the server ran it; None when it must run in-process."""
    if not wanted(argv, os.environ):
        return None
    try:
        sock, buffer = _hand_over(argv)
        return _await_exit(sock, buffer)
    except InProcess as why:
        _debug(f"the warm server did not take the command, running it in-process: {why}")
        return None


def _check_server_context(sock: socket.socket) -> dict[str, str]:
    """This process's context, once the server's is known to be the same; InProcess otherwise."""
    try:
        own = context.own_context()
        server = context.peer_context(sock)
    except context.ContextError as exc:
        raise InProcess(f"the server's process context cannot be compared: {exc}") from exc
    keys = context.differences(own, server)
    if keys:
        raise InProcess(f"the server runs in another process context: {context.describe(own, server, keys, 'server')}")
    return own


def _hand_over(argv: list[str]) -> tuple[socket.socket, bytearray]:
    """Connect, compare contexts and stamps, send the request; the socket once the request is sent."""
    sock = _connect(os.environ)
    buffer = bytearray()
    try:
        own = _check_server_context(sock)
        sock.settimeout(GREETING_TIMEOUT_S)
        hello = protocol.receive(sock, buffer)
        if hello is None:
            raise InProcess("the server hung up before greeting")
        if "refused" in hello:  # it will not run our commands; whether it is stale is not ours to judge
            raise InProcess(f"the server refuses this process: {hello['refused']}")
        if not stamp_matches(hello.get("stamp")):
            protocol.send(sock, {"op": "stale"})  # a server of other code: tell it to go
            raise InProcess("the server runs other code than this installation (told it to exit)")
        umask = os.umask(0o077)  # reading the umask means setting it; put it straight back
        os.umask(umask)
        request = {"op": "run", "argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
                   "context": own}
        sock.settimeout(None)
        protocol.send(sock, request, fds=[0, 1, 2])
    except InProcess:
        sock.close()
        raise
    except (OSError, protocol.ProtocolError, TypeError, ValueError) as exc:
        # Nothing ran yet (a closed stdio fd, a deleted cwd, a server that hung up): run in-process.
        sock.close()
        raise InProcess(f"the request could not be sent ({exc})") from exc
    return sock, buffer


def _await_exit(sock: socket.socket, buffer: bytearray) -> int:
    """Forward our signals to the command and return the exit status the server reports.

    ``{"refused": ...}`` before ``{"started": ...}`` means nothing ran (InProcess). When the
    server goes away first, the command is killed through the pidfd that came with
    ``started`` and waited for, so it neither prints nor records anything after we exit 3.
    """

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            protocol.send(sock, {"op": "signal", "signal": signum})

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    pidfd = -1
    fds: list[int] = []
    try:
        while True:
            message = protocol.receive(sock, buffer, fds)
            if message is None:
                break
            if pidfd < 0 and "refused" in message:
                raise InProcess(f"the server refuses this process: {message['refused']}")
            if pidfd < 0 and message.get("started") and fds:
                pidfd = fds.pop(0)
            code = message.get("exit")
            if isinstance(code, int):
                if pidfd >= 0:
                    os.close(pidfd)
                return code
    except (OSError, protocol.ProtocolError):
        pass
    finally:
        for signum in FORWARDED_SIGNALS:
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        sock.close()
        for fd in fds:
            os.close(fd)
    if pidfd >= 0:
        _end_orphan(pidfd)
    sys.stderr.write("agentreview: the warm server went away before the command finished\n")
    return EXIT_LOST


def _end_orphan(pidfd: int) -> None:
    """Kill the command the lost server left (its own parent-death signal should have) and wait until it is gone."""
    try:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        with contextlib.suppress(OSError):
            poller.poll(ORPHAN_WAIT_MS)
    finally:
        os.close(pidfd)


def request(env: dict[str, str] | os._Environ[str], op: str, timeout: float = 5.0) -> dict | None:
    """Send ``op`` (status, stop) to the server; its reply, or None.

    The reply gets ``current`` (whether its stamp is ours) and, when it would not run this
    process's commands, ``refused`` (why). Neither side hands anything over here, so a server
    in another process context still answers (``server stop`` works from anywhere).
    """
    sock = connect(env)
    if sock is None:
        return None
    buffer = bytearray()
    try:
        sock.settimeout(timeout)
        hello = protocol.receive(sock, buffer)
        if hello is None:
            return None
        protocol.send(sock, {"op": op})
        reply = protocol.receive(sock, buffer)
    except (OSError, protocol.ProtocolError):
        return None
    finally:
        sock.close()
    if reply is not None:
        reply["current"] = stamp_matches(hello.get("stamp"))
        if "refused" in hello:
            reply["refused"] = str(hello["refused"])
    return reply
