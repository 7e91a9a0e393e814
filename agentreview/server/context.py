"""A process's context as the kernel reports it under ``/proc``: what must be equal on both ends of the server socket.

Why: the warm server forks the command from its own process, so the command runs with the
server's credentials, namespaces, privileges and limits, not the caller's. A caller inside a
sandbox (a user, network or mount namespace, no_new_privs, a seccomp filter, dropped
capabilities, low rlimits, another cgroup, a chroot) would otherwise have its command lanes run
outside that sandbox. So a command is handed over only when both processes' contexts are equal:

* ``Uid``/``Gid`` (real, effective, saved, filesystem) and the supplementary ``Groups``;
* the inode of every namespace in ``/proc/<pid>/ns`` (user, mnt, net, pid, ipc, uts, cgroup,
  time, and the ``*_for_children`` ones);
* ``NoNewPrivs``, ``Seccomp`` and ``Seccomp_filters``, every capability set (``CapInh``,
  ``CapPrm``, ``CapEff``, ``CapBnd``, ``CapAmb``), the CPU and memory-node affinity;
* every resource limit, soft and hard (``/proc/<pid>/limits``);
* the cgroup (``/proc/<pid>/cgroup``), the root directory, the LSM label, nice and scheduling policy.

Each side reads the other through a pidfd taken from the socket itself, so a pid reused by an
unrelated process is never read in its place (:func:`peer_context`); the client also sends its
own view, which the server compares with what it read. Stdlib only (``os``, ``socket``,
``signal``): the client reads its own context and the server's on every served start.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import struct

STATUS_FIELDS = (
    "Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "Seccomp_filters",
    "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "Cpus_allowed_list", "Mems_allowed_list",
)
_UCRED = struct.Struct("3i")  # struct ucred {pid_t pid; uid_t uid; gid_t gid;}
# SO_PEERPIDFD (Linux >= 6.5) is 77 where asm-generic/socket.h numbers socket options; Python >= 3.13 names it.
_GENERIC_MACHINES = frozenset({"x86_64", "i386", "i686", "aarch64", "arm64", "armv7l", "armv6l", "armv8l",
                               "riscv64", "s390x", "ppc64", "ppc64le", "loongarch64"})
_LIMIT_NAME_WIDTH = 26  # /proc/<pid>/limits: a left-aligned name column, then soft, hard, units


class ContextError(Exception):
    """The other end's context could not be read (it exited, or /proc denies it): never hand a command over."""


def own_context() -> dict[str, str]:
    """This process's context."""
    fd = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return read_context(fd)
    finally:
        os.close(fd)


def read_context(proc_fd: int) -> dict[str, str]:
    """The context of the process whose ``/proc/<pid>`` directory ``proc_fd`` is; ContextError when unreadable.

    Every file is opened relative to ``proc_fd``: such a descriptor stays bound to the one
    process it was opened on (reads fail once it is gone), whatever process later gets its pid.
    """
    try:
        context = {f"status {k}": v for k, v in _status(_read(proc_fd, "status")).items()}
        ns_fd = os.open("ns", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=proc_fd)
        try:
            for name in sorted(os.listdir(ns_fd)):
                context[f"namespace {name}"] = os.readlink(name, dir_fd=ns_fd)
        finally:
            os.close(ns_fd)
        for line in _read(proc_fd, "limits").splitlines()[1:]:
            name = line[:_LIMIT_NAME_WIDTH].strip()
            if name:
                context[f"rlimit {name}"] = " ".join(line[_LIMIT_NAME_WIDTH:].split()[:2])
        context["cgroup"] = _read(proc_fd, "cgroup").strip()
        root = os.stat("root", dir_fd=proc_fd)
        context["root directory"] = f"{root.st_dev}:{root.st_ino}"
        fields = _read(proc_fd, "stat").rsplit(")", 1)[1].split()
        context["nice and scheduling policy"] = f"{fields[16]} {fields[38]}"
    except (OSError, IndexError) as exc:
        raise ContextError(f"cannot read its /proc entries ({_why(exc)})") from exc
    context["LSM label"] = _lsm_label(proc_fd)
    for name in STATUS_FIELDS:
        context.setdefault(f"status {name}", "")
    return context


def _read(proc_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc_fd)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _status(text: str) -> dict[str, str]:
    wanted = set(STATUS_FIELDS)
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            found[key] = " ".join(value.split())
    return found


def _lsm_label(proc_fd: int) -> str:
    """The LSM label (AppArmor profile, SELinux context); without an LSM that answers, why not (equal on both ends)."""
    try:
        return _read(proc_fd, "attr/current").strip("\0\n ")
    except OSError as exc:
        return f"none ({errno.errorcode.get(exc.errno or 0, exc.errno)})"


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
    return type(exc).__name__


def differences(own: dict[str, str], other: object) -> list[str]:
    """The keys on which ``other`` (a context from the wire or /proc) is not ``own``, in ``own``'s order."""
    if not isinstance(other, dict):
        return ["the whole context (missing)"]
    keys = [*own, *(k for k in other if k not in own)]
    return [key for key in keys if own.get(key) != other.get(key)]


def describe(own: dict[str, str], other: dict[str, str], keys: list[str], other_name: str) -> str:
    """One line naming what differs, e.g. ``rlimit Max open files: '512 512' in the client, '1024 1024' here``."""
    shown = [f"{key}: {other.get(key)!r} in the {other_name}, {own.get(key)!r} here" for key in keys[:3]]
    more = f"; also {', '.join(keys[3:])}" if len(keys) > 3 else ""
    return "; ".join(shown) + more


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """``(pid, uid, gid)`` of the process that connected (SO_PEERCRED, set by the kernel, in our namespaces)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


def peer_context(sock: socket.socket) -> dict[str, str]:
    """The context of the process at the other end of ``sock``, read while the connection is open.

    The pid from SO_PEERCRED could already belong to another process if the peer exited; a
    pidfd pins the peer (from the socket itself, SO_PEERPIDFD, on Linux >= 6.5; else
    ``pidfd_open`` at once), ``/proc/<pid>`` is opened, and only if the pidfd's process is still
    alive after that is the directory known to be the peer's. Raises ContextError otherwise.
    """
    try:
        pid = peer_credentials(sock)[0]
    except OSError as exc:
        raise ContextError(f"no peer credentials ({_why(exc)})") from exc
    if pid <= 0:
        raise ContextError("the peer is in a pid namespace this process cannot see")
    pidfd = _peer_pidfd(sock, pid)
    try:
        try:
            proc_fd = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ContextError(f"the peer (pid {pid}) is gone ({_why(exc)})") from exc
        try:
            try:
                signal.pidfd_send_signal(pidfd, 0)  # alive now, so /proc/<pid> was opened on it
            except OSError as exc:
                raise ContextError(f"the peer (pid {pid}) exited ({_why(exc)})") from exc
            return read_context(proc_fd)
        finally:
            os.close(proc_fd)
    finally:
        os.close(pidfd)


def _peer_pidfd(sock: socket.socket, pid: int) -> int:
    option = getattr(socket, "SO_PEERPIDFD", 77 if os.uname().machine in _GENERIC_MACHINES else None)
    if option is not None:
        try:
            fd = sock.getsockopt(socket.SOL_SOCKET, option)
        except OSError as exc:
            if exc.errno not in (errno.ENOPROTOOPT, errno.EINVAL):
                raise ContextError(f"the peer (pid {pid}) has exited ({_why(exc)})") from exc
        else:
            found = _pidfd_pid(fd)
            if found == pid:
                return fd
            os.close(fd)
            raise ContextError(f"the peer (pid {pid}) " + ("has exited" if found == -1 else "has no pidfd"))
    try:  # a kernel before 6.5: the peer could have exited just now, the client's own view is the backstop
        return os.pidfd_open(pid)
    except OSError as exc:
        raise ContextError(f"the peer (pid {pid}) is gone ({_why(exc)})") from exc


def _pidfd_pid(fd: int) -> int | None:
    """The pid a pidfd refers to (``Pid:`` in its fdinfo; -1 once the process is gone), None if not a pidfd."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/self/fdinfo/{fd}", "rb") as info:
        for line in info.read().splitlines():
            if line.startswith(b"Pid:"):
                return int(line[4:])
    return None
