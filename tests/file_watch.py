"""Know the moment another process opens a file (inotify, through ctypes).

Some steps leave no trace a test can poll: a run trying a lock another run holds opens the lock
file and goes back to waiting. Watching for that open lets a test act right after the step, where
a fixed sleep would only guess how long a loaded machine takes to reach it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
from pathlib import Path
from types import TracebackType

IN_OPEN = 0x20


class OpenWatch:
    """Opens of one existing file, from the moment the watch is made."""

    def __init__(self, path: Path) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        if libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN) < 0:
            errno = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(errno, f"inotify_add_watch failed: {path}")

    def opened(self, timeout: float) -> bool:
        """Whether the file was opened since the watch was made, waiting up to ``timeout`` seconds."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        return bool(ready)

    def __enter__(self) -> OpenWatch:
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _value: BaseException | None, _tb: TracebackType | None
    ) -> None:
        os.close(self.fd)
