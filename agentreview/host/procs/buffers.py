"""Bounded output buffers: a child that prints gigabytes costs at most twice the limit in memory.

:class:`TailBuffer` keeps the last bytes (a command's error is at the end); :class:`HeadBuffer` keeps the
first (a reviewer's event stream is audited in order, so only a prefix is meaningful).
"""

from __future__ import annotations

OUTPUT_LIMIT = 64 * 1024


class Buffer:
    """At most ``limit`` bytes of what is fed, and how many were fed in all."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def feed(self, chunk: bytes) -> None:
        raise NotImplementedError

    def data(self) -> bytes:
        raise NotImplementedError

    def text(self) -> str:
        return self.data().decode("utf-8", errors="replace")


class TailBuffer(Buffer):
    """Keeps the last ``limit`` bytes fed to it."""

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._buf += chunk
        if len(self._buf) > 2 * self.limit:  # trim in bulk, not on every read
            del self._buf[: -self.limit]

    def data(self) -> bytes:
        """The kept bytes; when the cut split a UTF-8 sequence, its orphaned continuation bytes are dropped."""
        data = bytes(self._buf[-self.limit :])
        if self.total > len(data):
            skip = 0
            while skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
                skip += 1
            data = data[skip:]
        return data


class HeadBuffer(Buffer):
    """Keeps the first ``limit`` bytes fed to it and notes whether more came."""

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._buf += chunk[: max(0, self.limit - len(self._buf))]

    def data(self) -> bytes:
        return bytes(self._buf)
