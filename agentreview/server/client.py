"""The client half: hand a command to a running warm server, or say that it must run in-process.

Called from :func:`agentreview.cli.entry.console` before anything heavy is imported, so it uses the
standard library only (``os``, ``socket``, ``signal``, ``json``, ``struct``). Every failure before the
request is sent means "run in-process"; after it is sent, the command belongs to the server and its
exit status is ours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys

from agentreview.server import protocol, wanted

CONNECT_TIMEOUT_S = 0.2  # a dead socket refuses at once; a live server accepts at once
GREETING_TIMEOUT_S = 1.0  # a server busy forking another command may take a moment to greet
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_LOST = 3  # the server went away before it reported the command's exit status


def stamp_matches(stamp: object) -> bool:
    """Whether the server runs the code this client would run: same version, interpreter and files.

    The server lists the files its loaded agentreview and plugin modules came from, and the
    directories that hold installed distributions, with their mtimes; any edit, install or
    uninstall since the server started changes one of them.
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
        path, mtime = entry
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return False
        except OSError:
            return False
        seen_own = seen_own or path == own
    return seen_own


def connect(env: dict[str, str] | os._Environ[str]) -> socket.socket | None:
    """A connection to this user's server at ``$AGENTREVIEW_HOME/server``, or None (none there, stale, foreign)."""
    path = protocol.socket_path(env)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(path)
        # We are about to hand over our environment (tokens included) and our terminal.
        if not protocol.peer_allowed(protocol.peer_uid(sock)):
            raise OSError("server socket belongs to another user")
    except OSError:
        sock.close()
        return None
    return sock


def run_via_server(argv: list[str]) -> int | None:
    """The command's exit code when the server ran it; None when it must run in-process."""
    if not wanted(argv, os.environ):
        return None
    sock = connect(os.environ)
    if sock is None:
        return None
    buffer = bytearray()
    try:
        sock.settimeout(GREETING_TIMEOUT_S)
        hello = protocol.receive(sock, buffer)
        if hello is None or not stamp_matches(hello.get("stamp")):
            if hello is not None:
                protocol.send(sock, {"op": "stale"})  # a server of other code: tell it to go
            sock.close()
            return None
        umask = os.umask(0o077)  # reading the umask means setting it; put it straight back
        os.umask(umask)
        request = {"op": "run", "argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}
        sock.settimeout(None)
        protocol.send(sock, request, fds=[0, 1, 2])
    except (OSError, protocol.ProtocolError, TypeError, ValueError):
        # Nothing ran yet (a closed stdio fd, a deleted cwd, a server that hung up): run in-process.
        sock.close()
        return None
    return _await_exit(sock, buffer)


def _await_exit(sock: socket.socket, buffer: bytearray) -> int:
    """Forward our signals to the command and return the exit status the server reports."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            protocol.send(sock, {"op": "signal", "signal": signum})

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    try:
        while True:
            message = protocol.receive(sock, buffer)
            if message is None:
                break
            code = message.get("exit")
            if isinstance(code, int):
                return code
    except (OSError, protocol.ProtocolError):
        pass
    finally:
        for signum in FORWARDED_SIGNALS:
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        sock.close()
    sys.stderr.write("agentreview: the warm server went away before the command finished\n")
    return EXIT_LOST


def request(env: dict[str, str] | os._Environ[str], op: str, timeout: float = 5.0) -> dict | None:
    """Send ``op`` (status, stop) to the server; its reply with ``current`` (whether its stamp is ours), or None."""
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
    return reply
