"""The one bounded reader of files another party could plant, and the one atomic writer.

:func:`read_regular_file` refuses anything but a regular file (checked on the descriptor, opened without
blocking); ``durable=False`` skips the writers' fsyncs for records whose loss in a power cut loses nothing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from agentreview.model.errors import AgentreviewError

DEFAULT_LIMIT = 4 * 1024 * 1024


class UnreadableFileError(OSError):
    """The file cannot be read as a bounded regular file. ``str(exc)`` is the reason, phrased to
    follow the file's name (``"is not a regular file — refusing to read it"``)."""


class MissingFileError(UnreadableFileError, FileNotFoundError):
    """The file does not exist (a subclass, so callers that treat absence differently can)."""


# What to do about the errors a write meets in practice; anything else gets the generic advice.
_WRITE_FIXES = {
    errno.ENOSPC: "no space left on the device — free space on that file system and run again",
    errno.EDQUOT: "disk quota exceeded — free space within your quota (or raise it) and run again",
    errno.EROFS: "the file system is read-only — make it writable or use a writable location, and run again",
    errno.EACCES: "permission denied — check the permissions of {dir} and run again",
    errno.EPERM: "operation not permitted — check the permissions of {dir} and run again",
    errno.EFBIG: "file too large for this process's file-size limit — raise the limit (ulimit -f) and run again",
}
# The errors of a file system that refuses a write (rather than of a bad path or a planted file).
WRITE_ERRNOS = frozenset({*_WRITE_FIXES, errno.EIO})


def describe_os_error(exc: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """One line for an OS error met while writing: the file, the cause in words, and the fix.

    ``path`` names the file when the error does not (or names a temporary file instead)."""
    raw = path if path is not None else exc.filename
    name = os.fsdecode(raw) if raw is not None else None
    where = f"cannot write {name}" if name else "cannot write"
    folder = (os.path.dirname(name) or ".") if name else "the directory"
    fix = _WRITE_FIXES.get(exc.errno or 0)
    if fix is None:
        cause = exc.strerror or type(exc).__name__
        fix = f"{cause} — check that file system and the permissions of {folder}, then run again"
    return f"{where}: {fix.format(dir=folder)}"


class FileWriteError(AgentreviewError, OSError):
    """A write that failed; ``str(exc)`` is one line naming the target file and the fix (exit 3).

    An :class:`OSError` (the cause's errno) and an :class:`AgentreviewError`, so no command prints ``[Errno 28]``."""

    def __init__(self, path: str | os.PathLike[str], cause: OSError):
        OSError.__init__(self, cause.errno, cause.strerror, os.fspath(path))
        self.message = describe_os_error(cause, path)

    def __str__(self) -> str:
        return self.message


def read_regular_file(
    path: str | os.PathLike[str],
    *,
    limit: int = DEFAULT_LIMIT,
    follow_symlinks: bool = True,
    plain_dir: bool = False,
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    Raises :class:`MissingFileError` when it does not exist and :class:`UnreadableFileError` for anything
    unsafe or impossible to read (a FIFO, device, directory, refused symlink, more than ``limit`` bytes)."""
    if plain_dir and Path(path).parent.is_symlink():
        raise UnreadableFileError("lies in a directory that is a symbolic link — refusing to read it")
    with _regular_file(path, follow_symlinks) as (fd, info):
        if info.st_size > limit:
            raise UnreadableFileError(f"is larger than {limit} bytes — refusing to read it")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew while being read
                raise UnreadableFileError(f"is larger than {limit} bytes — refusing to read it")
    return b"".join(chunks)


def read_regular_line(path: str | os.PathLike[str], offset: int, *, limit: int) -> bytes:
    """The line that starts at byte ``offset`` of the regular file ``path`` (without its newline),
    read as :func:`read_regular_file` reads a file (never through a symlink); raises
    :class:`UnreadableFileError` when it runs past ``limit`` bytes or the file's end."""
    with _regular_file(path, follow_symlinks=False) as (fd, _info):
        line = b""
        while len(line) <= limit:
            chunk = os.pread(fd, 64 * 1024, offset + len(line))
            end = chunk.find(b"\n")
            if end >= 0:
                return line + chunk[:end]
            if not chunk:
                raise UnreadableFileError(f"has no whole line at byte {offset}")
            line += chunk
    raise UnreadableFileError(f"has a line longer than {limit} bytes at byte {offset}")


@contextlib.contextmanager
def _regular_file(path: str | os.PathLike[str], follow_symlinks: bool) -> Iterator[tuple[int, os.stat_result]]:
    """The descriptor and stat of the regular file ``path``, opened without blocking; every OS
    error inside is an :class:`UnreadableFileError` (:class:`MissingFileError` when it is absent)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise MissingFileError(f"could not read ({exc.strerror or exc})") from exc
    except OSError as exc:
        if not follow_symlinks and os.path.islink(path):
            raise UnreadableFileError("is a symbolic link — refusing to follow it") from exc
        raise UnreadableFileError(f"could not read ({exc.strerror or exc})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFileError("is not a regular file — refusing to read it")
        yield fd, info
    except OSError as exc:
        if isinstance(exc, UnreadableFileError):
            raise
        raise UnreadableFileError(f"could not read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o600, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a part.

    An exclusive temporary file beside it (never through a symlink) is synced and renamed over it; on
    failure the target is unchanged and an OS error is raised as :class:`FileWriteError`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}.{os.urandom(6).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    except OSError as exc:
        raise FileWriteError(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise FileWriteError(path, exc) from exc
        raise
    if durable:  # the new file is in place; only its durability across a crash is in doubt
        fsync_path(path.parent, reported_as=path)
    return path


def fsync_path(path: Path, *, reported_as: Path | None = None) -> None:
    """fsync the file or folder ``path``; a failure is a :class:`FileWriteError` naming
    ``reported_as`` (default ``path``)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise FileWriteError(reported_as or path, exc) from exc


def atomic_write_text(path: Path, text: str, *, mode: int = 0o600, durable: bool = True) -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"), mode=mode, durable=durable)
