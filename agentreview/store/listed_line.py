"""The index columns of a note line taken straight from its bytes: msgspec builds only the listed members and
checks their types in C, where a full parse builds every member and Python checks them, about six times the work
(a fetch reads thousands of lines). Whatever it does not read as the full read would, it leaves to that read."""

from __future__ import annotations

import msgspec

from agentreview.store.entries import Summary
from agentreview.store.foreign_entry import VERDICTS
from agentreview.store.layout import LedgerError, LedgerKey, check_key


class _Target(msgspec.Struct):
    baseSha: str
    headSha: str
    repoRemote: str


class _Listed(msgspec.Struct):
    """The members :func:`~agentreview.store.foreign_entry.listable_summary` reads, each of the type it requires;
    every other member is checked to be JSON and skipped. A repeated key: the last one, as the standard library."""

    target: _Target
    verdict: str
    runId: str
    reviewId: str
    createdAt: str
    lanes: msgspec.Raw
    manifestSha: str
    binding: str
    rangeSha: str
    dirty: msgspec.Raw = msgspec.Raw(b"")


_DECODER = msgspec.json.Decoder(_Listed)


def listed_summary(line: bytes) -> Summary | None:
    """The summary :func:`~agentreview.store.foreign_entry.listable_summary` makes of ``line``'s JSON, or None
    when the full read must decide: a line that is not JSON as msgspec reads it (the standard library also
    reads a lone surrogate, UTF-16 and a byte-order mark), or whose listed members are missing or malformed
    (the full read says which)."""
    if not line.isascii():
        try:  # a member msgspec skips is not checked for UTF-8; the full read refuses what is not
            line.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        listed = _DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError is a DecodeError
        return None
    if listed.verdict not in VERDICTS or bytes(listed.lanes)[:1] != b"[":
        return None
    target = listed.target
    key = LedgerKey(target.repoRemote, listed.manifestSha, listed.binding, listed.rangeSha)
    try:
        check_key(key)
    except LedgerError:
        return None
    dirty = bytes(listed.dirty) == b"true"  # ``dirty is True``, as the full read asks
    return Summary(key, target.baseSha, target.headSha, listed.runId, None, listed.createdAt, listed.verdict, dirty,
                   None)  # fmt: skip
