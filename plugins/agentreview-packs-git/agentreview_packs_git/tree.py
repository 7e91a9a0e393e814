"""Git object hashing of a folder on disk, and writing a commit's tree out ourselves.

The chain files -> tree id -> commit bytes -> pinned sha is checked in-process, so no tampered file survives
and a cache hit starts no git; files are written here, not by ``git checkout``, so no filter or hook runs.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_LINK = "120000"
_HEX40 = re.compile(rb"^[0-9a-f]{40}$")


class TreeMismatchError(Exception):
    """The folder on disk does not hold exactly the pinned tree."""


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    sha: str
    size: int
    path: bytes  # '/'-separated, relative to the tree root


def object_id(kind: bytes, data: bytes) -> str:
    """The git (SHA-1) object id of ``data`` stored as ``kind``."""
    return hashlib.sha1(kind + b" %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def commit_tree_id(commit_body: bytes, sha: str) -> str:
    """Check that ``commit_body`` hashes to ``sha`` and return the tree id it names."""
    if object_id(b"commit", commit_body) != sha:
        raise TreeMismatchError(f"the recorded commit object does not hash to {sha}")
    first = commit_body.split(b"\n", 1)[0]
    tree = first[len(b"tree ") :] if first.startswith(b"tree ") else b""
    if not _HEX40.match(tree):
        raise TreeMismatchError(f"commit {sha} does not start with a tree line")
    return tree.decode()


def _tree_sort_key(item: tuple[bytes, str, str]) -> bytes:
    name, mode, _ = item
    return name + b"/" if mode == "40000" else name


def disk_tree_id(
    root: Path, *, skip_top: Iterable[str] = (".git",), capture: str | None = None
) -> tuple[str, bytes | None]:
    """The git tree id of the folder ``root`` (empty folders and ``skip_top`` names left out), with the
    bytes of the top-level regular file ``capture`` from the same read that was hashed (or ``None``)."""
    captured: list[bytes | None] = [None]
    skip = {os.fsencode(name) for name in skip_top}
    tree_id = _dir_tree_id(os.fsencode(root), skip, os.fsencode(capture) if capture else None, captured)
    return tree_id or object_id(b"tree", b""), captured[0]


def _dir_tree_id(path: bytes, skip: set[bytes], capture: bytes | None, captured: list[bytes | None]) -> str | None:
    entries: list[tuple[bytes, str, str]] = []
    for name in os.listdir(path):
        if name in skip:
            continue
        full = os.path.join(path, name)
        info = os.lstat(full)
        if stat.S_ISLNK(info.st_mode):
            entries.append((name, MODE_LINK, object_id(b"blob", os.readlink(full))))
        elif stat.S_ISDIR(info.st_mode):
            sub = _dir_tree_id(full, set(), None, captured)
            if sub is not None:
                entries.append((name, "40000", sub))
        elif stat.S_ISREG(info.st_mode):
            with open(full, "rb") as fh:
                data = fh.read()
            if capture is not None and name == capture:
                captured[0] = data
            mode = MODE_EXEC if info.st_mode & stat.S_IXUSR else MODE_FILE
            entries.append((name, mode, object_id(b"blob", data)))
        else:
            raise TreeMismatchError(f"{os.fsdecode(full)} is not a file, folder or symlink")
    if not entries:
        return None
    entries.sort(key=_tree_sort_key)
    body = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(sha) for name, mode, sha in entries)
    return object_id(b"tree", body)


def write_tree(root: Path, entries: list[TreeEntry], blobs: dict[str, bytes]) -> None:
    """Write ``entries`` below the fresh folder ``root``: files first, symlinks last, so no file is
    ever written through a symlink the pack itself created; every create is exclusive."""
    base = os.fsencode(root)
    ordered = [e for e in entries if e.mode != MODE_LINK] + [e for e in entries if e.mode == MODE_LINK]
    for entry in ordered:
        target = os.path.join(base, *entry.path.split(b"/"))
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        data = blobs[entry.sha]
        if entry.mode == MODE_LINK:
            os.symlink(data, target)
            continue
        mode = 0o755 if entry.mode == MODE_EXEC else 0o644
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(target, mode)  # the umask must not change what the tree hash sees
