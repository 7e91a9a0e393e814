"""The wire format between the ``agentreview`` client and the warm server, and the checks both sides share.

Stdlib only (``os``, ``socket``, ``json``, ``struct``): the client imports this on every CLI start,
before anything heavy, so importing it must cost well under a millisecond.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (an object). The
request frame of ``run`` carries the client's stdin/stdout/stderr as SCM_RIGHTS on its first byte.
Server -> client: ``{"stamp": ...}`` first (with ``"refused": why`` when it will not run this
client's commands), then ``{"started": pid}`` carrying a pidfd of the command as SCM_RIGHTS (or
``{"refused": why}``: nothing ran), then ``{"exit": N}``; or a reply to status/stop.
Client -> server: ``{"op": "run"|"status"|"stop"|"stale", ...}`` (``run`` carries the client's own
``context``, see :mod:`agentreview.server.context`) then, while running, ``{"op": "signal", "signal": N}``.
"""

from __future__ import annotations

import json
import os
import socket
import struct

from agentreview.server import SOCKET_NAME, home_path, server_dir, socket_path

__all__ = ["SOCKET_NAME", "home_path", "server_dir", "socket_path"]  # the paths live in the package (os only)

LOCK_NAME = "server.lock"
LOG_NAME = "server.log"
MAX_FRAME = 4 << 20  # a request is argv + cwd + the environment: megabytes would be an abuse
_LEN = struct.Struct(">I")
_UCRED = struct.Struct("3i")  # struct ucred {pid_t pid; uid_t uid; gid_t gid;}
SUN_PATH_MAX = 107  # bytes a Unix socket path may have on Linux (sun_path is 108 with the NUL)


class ProtocolError(Exception):
    """The other side sent something that is not a frame of this protocol."""


def encode(message: dict) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"message of {len(body)} bytes exceeds {MAX_FRAME}")
    return _LEN.pack(len(body)) + body


def send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """Send one frame; ``fds`` ride on it as SCM_RIGHTS (sent in one sendmsg, then the rest if any)."""
    data = encode(message)
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)


def split_frame(buffer: bytes) -> tuple[dict | None, bytes]:
    """The first complete frame of ``buffer`` and what follows it, or ``(None, buffer)`` while incomplete."""
    if len(buffer) < _LEN.size:
        return None, buffer
    (size,) = _LEN.unpack_from(buffer)
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    end = _LEN.size + size
    if len(buffer) < end:
        return None, buffer
    try:
        message = json.loads(buffer[_LEN.size : end])
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"frame is not JSON: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message, buffer[end:]


def receive(sock: socket.socket, buffer: bytearray, fds: list[int] | None = None) -> dict | None:
    """Block (within the socket's timeout) until one frame is read; None at EOF before a whole frame.

    ``buffer`` keeps bytes read past the frame for the next call. With ``fds``, descriptors that
    arrive as SCM_RIGHTS are appended to it (the caller owns and closes them).
    """
    while True:
        message, rest = split_frame(bytes(buffer))
        if message is not None:
            buffer[:] = rest
            return message
        if fds is None:
            chunk = sock.recv(65536)
        else:
            chunk, received, _flags, _addr = socket.recv_fds(sock, 65536, 4)
            fds += received
        if not chunk:
            return None
        buffer += chunk


def fingerprint(path: str) -> list[int]:
    """What the stamp records of a file or directory: size, mtime_ns, ctime_ns, inode and device.

    A copy whose mtime was put back (``cp -p``, ``rsync -a``, ``tar x``) still changes the
    ctime (which no unprivileged call can set) and, unless written in place, the inode. Hashing
    the contents instead would cost every served start ~1.2 ms, against ~0.25 ms for these stats
    (about 100 files, 0.5 MB; bench/bench_server.py).
    """
    info = os.stat(path)
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket (SO_PEERCRED, set by the kernel)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return _UCRED.unpack(raw)[1]


def peer_allowed(uid: int, own_uid: int | None = None) -> bool:
    """Only the user who runs the server may use it (it runs commands as that user, with the caller's env)."""
    return uid == (os.getuid() if own_uid is None else own_uid)
