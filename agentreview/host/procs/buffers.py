"""Bounded output buffers: a child that prints gigabytes costs at most twice the limit in memory.

:class:`TailBuffer` keeps the last bytes (a command's error is at the end); :class:`HeadBuffer` keeps the
first (a reviewer's event stream is audited in order, so only a prefix is meaningful).
"""

from __future__ import annotations

OUTPUT_LIMIT = 64 * 1024


class TailBuffer:
    """Keeps the last ``limit`` bytes fed to it."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

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

    def text(self) -> str:
        return self.data().decode("utf-8", errors="replace")


class HeadBuffer:
    """Keeps the first ``limit`` bytes fed to it and notes whether more came."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._chunks: list[bytes] = []
        self._size = 0

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - self._size
        if room > 0:
            kept = chunk[:room]
            self._chunks.append(kept)
            self._size += len(kept)

    def data(self) -> bytes:
        return b"".join(self._chunks)

    def text(self) -> str:
        return self.data().decode("utf-8", errors="replace")
