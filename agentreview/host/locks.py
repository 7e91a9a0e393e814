"""Advisory ``flock`` locks for the ledger, the key, the pack cache and joining runs.

The lock belongs to an open file description, so the kernel releases it when the holder dies, even by SIGKILL;
the lock file stays, since removing it would race with a waiter.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time
from pathlib import Path
from types import TracebackType


class LockTimeout(TimeoutError):
    """The lock was not acquired within the timeout."""

    def __init__(self, path: str):
        super().__init__(f"could not lock {path} in time")
        self.lock_file = path


Timeout = LockTimeout


class FileLock:
    """An exclusive lock on ``path``, reentrant within one object; ``timeout`` < 0 waits forever, 0 tries once."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = -1):
        self.lock_file = os.fspath(path)
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0
        self._mutex = threading.Lock()

    def acquire(self, timeout: float | None = None, poll_interval: float = 0.02) -> FileLock:
        wait = self.timeout if timeout is None else timeout
        with self._mutex:
            if self._fd is not None:
                self._depth += 1
                return self
            Path(self.lock_file).parent.mkdir(parents=True, exist_ok=True)
            # Never through a symlink, never blocking on a FIFO planted where the lock file goes.
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
            fd = os.open(self.lock_file, flags, 0o600)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise OSError(errno.EINVAL, "lock file is not a regular file", str(self.lock_file))
            deadline = None if wait < 0 else time.monotonic() + wait
            delay = min(poll_interval, 0.005)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        os.close(fd)
                        raise LockTimeout(self.lock_file) from None
                    time.sleep(delay)
                    delay = min(delay * 2, poll_interval)
            self._fd = fd
            self._depth = 1
            return self

    def release(self) -> None:
        with self._mutex:
            if self._fd is None:
                return
            self._depth -= 1
            if self._depth > 0:
                return
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def is_held(lock_file: str | os.PathLike[str]) -> bool:
    """Whether some process holds an exclusive ``flock`` on ``lock_file`` now (how a live run is told from
    a dead one); anything but a regular file is not held. Never blocks."""
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
