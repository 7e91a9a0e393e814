"""A bounded output buffer: a lane that prints gigabytes costs at most twice the limit in memory.

Bytes are kept, not text, so a multi-byte character split across two reads is
decoded whole; the tail is decoded once, at the end, with ``errors="replace"``.
"""

from __future__ import annotations

OUTPUT_LIMIT = 64 * 1024


class TailBuffer:
    """Keeps the last ``limit`` bytes fed to it."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._buf += chunk
        if len(self._buf) > 2 * self.limit:  # trim in bulk, not on every read
            del self._buf[: -self.limit]

    def text(self) -> str:
        data = bytes(self._buf[-self.limit :])
        if self.total > len(data):
            # The cut may have split a UTF-8 sequence: drop its orphaned continuation bytes.
            skip = 0
            while skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", errors="replace")
