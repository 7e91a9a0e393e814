"""The parse memo: what a strict parse of some manifest bytes concluded, kept under the home for the next command.

Keyed by the parsing code and the bytes, rebuilt through the same reader; errors and plugin check kinds are never
stored, and any doubt is a miss. docs/architecture.md ("State") gives the key and why the home may hold it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview import __version__
from agentreview.model.digests import sha256

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.manifest import Binding, ReviewManifest, ReviewPack

FORMAT = "agentreview-parse-memo/2"
MAX_MEMO_BYTES = 4 << 20  # a manifest is at most 1 MiB; a parse whose records take more is not stored
KEEP = 256  # memos kept; past this the oldest go (each edit of a manifest makes a new one)

# The packages whose code decides a parse: their modules' files are part of the key.
_CODE_PACKAGES = ("manifest", "model")


@functools.cache
def code_stamp() -> str:
    """The ``stat`` of the files that decide what a parse concludes, as one string: a change is a miss.

    The parsing modules (an editable install changes them without a new version) and every ``*-packages``
    directory on ``sys.path``; taken once per process, since a process parses with the code it imported.
    """
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    parts = [sys.version, sys.prefix]
    for package in _CODE_PACKAGES:
        folder = os.path.join(root, package)
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if entry.name.endswith(".py"))
            parts += [f"{package}/{name}:{_stat(os.path.join(folder, name))}" for name in names]
    parts += [f"{entry}:{_stat(entry)}" for entry in sys.path if entry.endswith("-packages")]
    return "\n".join(parts)


def _stat(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_mtime_ns},{st.st_ctime_ns},{st.st_ino},{st.st_size}"


def memo_key(kind: str, source: bytes) -> str:
    """The content address of the parse of ``source`` as a ``kind`` document by this code."""
    digest = sha256()
    for part in (FORMAT, __version__, code_stamp(), kind):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(source)
    return digest.hexdigest()


def memo_path(home: Path, key: str) -> Path:
    from agentreview.host.home import cache_dir

    return cache_dir(home) / "parsed" / f"{key}.json"


def _payload_digest(payload: Any) -> str:
    text = json.dumps(payload, separators=(",", ":"))  # in order: the order of bindings is meaningful
    return sha256(text.encode("ascii")).hexdigest()


def recall(home: Path, kind: str, source: bytes) -> dict[str, Any] | None:
    """The stored payload for ``source`` parsed as ``kind``, or None (a miss) for anything short of an exact match."""
    from agentreview.host.files import read_regular_file

    try:
        key = memo_key(kind, source)
        raw = read_regular_file(memo_path(home, key), limit=MAX_MEMO_BYTES, follow_symlinks=False)
        document = json.loads(raw)
        if not isinstance(document, dict):
            return None
        payload = document.get("payload")
        matches = (
            document.get("format") == FORMAT
            and document.get("kind") == kind
            and document.get("key") == key
            and document.get("sourceSha256") == sha256(source).hexdigest()
            and isinstance(payload, dict)
            and document.get("payloadSha256") == _payload_digest(payload)
        )
    except Exception:  # absent, not a plain regular file, too large, not JSON...: a miss, never a failed command
        return None
    return payload if matches else None


def remember(home: Path, kind: str, source: bytes, payload: dict[str, Any]) -> None:
    """Store ``payload`` as the conclusion of parsing ``source`` as ``kind``; never raises."""
    from agentreview.host.files import atomic_write_bytes

    try:
        key = memo_key(kind, source)
        document = {
            "format": FORMAT,
            "kind": kind,
            "key": key,
            "sourceSha256": sha256(source).hexdigest(),
            "payloadSha256": _payload_digest(payload),
            "payload": payload,
        }
        data = json.dumps(document).encode("ascii")
        if len(data) > MAX_MEMO_BYTES:
            return
        path = atomic_write_bytes(memo_path(home, key), data, durable=False)
        _prune(path.parent)
    except Exception:  # a memo is an optimisation: a read-only or full home, or a bad folder, is no error
        pass


def _prune(folder: Path) -> None:
    """Keep the newest :data:`KEEP` memos (and no temporary file a killed writer left for an hour)."""
    with os.scandir(folder) as entries:
        listed = list(entries)
    if len(listed) <= KEEP and not any(".json.tmp." in entry.name for entry in listed):
        return
    found = [
        (entry.stat(follow_symlinks=False).st_mtime, entry.path)
        for entry in listed
        if entry.is_file(follow_symlinks=False)
    ]
    memos = sorted((item for item in found if item[1].endswith(".json")), reverse=True)
    stale = [path for mtime, path in found if ".json.tmp." in path and mtime < time.time() - 3600]
    for path in [path for _, path in memos[KEEP:]] + stale:
        with contextlib.suppress(OSError):
            os.unlink(path)


# --------------------------------------------------------------------------- the two documents


def recall_review(home: Path, source: bytes) -> tuple[ReviewManifest, dict[str, Binding], str] | None:
    """A ``kind: review`` parse of ``source`` rebuilt from its memo: manifest, bindings and body; None on a miss."""
    from agentreview.manifest.read import frontmatter_body
    from agentreview.model.manifest import ID, Binding, ReviewManifest
    from agentreview.model.reader import DictOf, Record, read

    payload = recall(home, "review", source)
    if payload is None or set(payload) != {"manifest", "bindings"}:
        return None
    body = frontmatter_body(source)
    try:
        manifest = read(ReviewManifest, payload["manifest"])
        bindings = read(DictOf(ID, Record(Binding)), payload["bindings"])
    except Exception:  # refused by the reader (ReadError), or anything else: a miss, never a failed command
        return None
    return None if body is None else (manifest, bindings, body)


def remember_review(home: Path, source: bytes, manifest: ReviewManifest, bindings: dict[str, Binding]) -> None:
    """Store a successful parse of a review whose checks are all built-in kinds (never raises)."""
    from agentreview.model.reader import to_json

    remember(home, "review", source, {"manifest": to_json(manifest), "bindings": to_json(bindings)})


def recall_pack(home: Path, source: bytes) -> ReviewPack | None:
    """A ``kind: review-pack`` parse of ``source`` rebuilt from its memo; None on a miss."""
    from agentreview.model.manifest import ReviewPack
    from agentreview.model.reader import read

    payload = recall(home, "review-pack", source)
    if payload is None or set(payload) != {"pack"}:
        return None
    try:
        pack: ReviewPack = read(ReviewPack, payload["pack"])
    except Exception:  # refused by the reader (ReadError), or anything else: a miss, never a failed command
        return None
    return pack


def remember_pack(home: Path, source: bytes, pack: ReviewPack) -> None:
    """Store a successful parse of a review pack (never raises)."""
    from agentreview.model.reader import to_json

    remember(home, "review-pack", source, {"pack": to_json(pack)})
