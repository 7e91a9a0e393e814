"""The ledger's layout: an entry's key and the paths it names. Each key segment is checked before it names
anything, so a crafted binding or sha never climbs out of the root (drawn in docs/architecture.md, "State")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from agentreview.host.git import repo_slug

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation

HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
ENTRY_NAME = re.compile(r"^([0-9a-f]{64})\.json\Z")
PACK_NAME = re.compile(r"^pack-[0-9a-f]{24}\.jsonl\Z")  # foreign/: the entries one fetch imported, one a line
MEMBER = "#"  # ``<pack>#<offset>``: the entry on the line of a pack that starts at that byte
BINDING_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")
RUN_ID = re.compile(r"^review-[A-Za-z0-9._-]{1,200}\Z")
ENTRY_SUFFIX = ".json"
ANNOTATIONS_SUFFIX = ".annotations.json"
LOCK_SUFFIX = ".lock"
INDEX_NAME = "index.sqlite"
FOREIGN_DIR = "foreign"  # <repoSlug>/foreign/: the attestations `agentreview fetch` imported
MAX_SLUG = 255  # the longest name of one path segment (NAME_MAX on Linux, macOS and Windows)


class LedgerError(Exception):
    """A ledger operation that cannot be done as asked (bad key, lock timeout, no entry)."""


class LedgerKey(NamedTuple):
    """``(repoRemote, manifestSha, binding, rangeSha)``: one file per key."""

    repo_remote: str
    manifest_sha: str
    binding: str
    range_sha: str

    @classmethod
    def of(cls, att: Attestation) -> LedgerKey:
        return cls(att.target.repoRemote, att.manifestSha, att.binding, att.rangeSha)


def ledger_slug(repo_remote: str) -> str:
    """The directory of a repository: its repoSlug, or the spec's fallback ``repo`` when that is '.' or '..'
    (which would not name a directory below the root). A repoSlug longer than a path segment can be (a note's
    repoRemote is anyone's text) keeps its first characters and a digest of the whole remote, so it still names
    one directory per remote."""
    slug = repo_slug(repo_remote)
    if slug in (".", ".."):
        return "repo"
    if len(slug) > MAX_SLUG:  # a repoSlug is ASCII: its length is its size in bytes
        from agentreview.model.digests import sha256_hex  # the builtin sha256: a cache hit loads no OpenSSL

        digest = sha256_hex(repo_remote.encode("utf-8", "surrogatepass"))[:32]
        return f"{slug[: MAX_SLUG - len(digest) - 1]}_{digest}"
    return slug


def check_key(key: LedgerKey) -> None:
    """Raise :class:`LedgerError` unless every part of ``key`` can safely name a path segment."""
    folder = (key.repo_remote, key.manifest_sha, key.binding)
    try:
        known = folder in _CHECKED_FOLDERS
    except TypeError:  # a part that is not a string (unhashable): checked, and refused, below
        known = False
    if not known:
        _check_folder(*folder)
        if len(_CHECKED_FOLDERS) < MAX_CHECKED_FOLDERS:
            _CHECKED_FOLDERS.add(folder)
    if not HEX64.fullmatch(key.range_sha or ""):
        raise LedgerError(f"ledger key: rangeSha '{key.range_sha}' is not 64 lowercase hex")


MAX_CHECKED_FOLDERS = 1024
# (repoRemote, manifestSha, binding) already found good: a fetch checks thousands of keys that share a few
_CHECKED_FOLDERS: set[tuple[str, str, str]] = set()


def _check_folder(repo_remote: object, manifest_sha: object, binding: object) -> None:
    """Raise :class:`LedgerError` unless the parts of a key above its rangeSha can safely name path segments."""
    if not isinstance(repo_remote, str) or not repo_remote:
        raise LedgerError("ledger key: repoRemote must be a non-empty string")
    if not isinstance(manifest_sha, str) or not HEX64.fullmatch(manifest_sha):
        raise LedgerError(f"ledger key: manifestSha '{manifest_sha}' is not 64 lowercase hex")
    if not isinstance(binding, str) or not BINDING_SEGMENT.fullmatch(binding):
        raise LedgerError(
            f"ledger key: binding '{binding}' cannot name a ledger directory (letters, digits, '.', '_', '-')"
        )


def entry_path(root: Path, key: LedgerKey) -> Path:
    """``<root>/<repoSlug>/<manifestSha>/<binding>/<rangeSha>.json`` for a checked key."""
    check_key(key)
    return root / ledger_slug(key.repo_remote) / key.manifest_sha / key.binding / f"{key.range_sha}{ENTRY_SUFFIX}"


def sibling(entry: Path, suffix: str) -> Path:
    """The file beside an entry that shares its rangeSha: its annotations or its lock."""
    return entry.with_name(entry.name[: -len(ENTRY_SUFFIX)] + suffix)


def valid_child(depth: int, name: str) -> bool:
    """Which directory names belong to the layout at each depth (``runs/`` and stray names do not)."""
    if depth == 0:
        return name not in (".", "..")
    if depth == 1:
        return bool(HEX64.fullmatch(name))
    return bool(BINDING_SEGMENT.fullmatch(name))
