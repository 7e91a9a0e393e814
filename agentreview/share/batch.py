"""Many notes read in a few git processes: whoever can push the notes ref decides how many there are, so no step
starts a process per note, and a note's size is asked before its bytes are read."""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import re
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, NamedTuple

from agentreview.host.gitrun import GitError, run_git

BATCH_TIMEOUT_S = 120.0
READ_CHUNK = 1024 * 1024  # bytes of git's output the draining thread reads at once
_HEX_DIGITS = b"0123456789abcdef"
# one record of `git ls-tree -r -z` that can be a note: "<mode> blob <oid>\t<path>\0", a file whose path is hex
# digits split by fan-out directories; matched only where a record starts (a path cannot hold a NUL, so no match
# begins inside one)
_LS_TREE_NOTE = re.compile(rb"(?<![^\0])(?:100644|100755) blob ([0-9a-f]{40,64})\t([0-9a-f/]+)(?:\0|\Z)")


class NoteEntry(NamedTuple):
    """One note of a notes tree: the object it annotates and the blob holding it."""

    commit: str
    blob: str


def _entry(path: bytes, mode: bytes, oid: bytes) -> NoteEntry | None:
    """A notes-tree path is the annotated object id, split by fan-out directories; anything
    else (another file kept in the notes tree, a submodule entry) is not a note."""
    commit = path.replace(b"/", b"")
    if mode not in (b"100644", b"100755") or len(commit) not in (40, 64) or commit.strip(_HEX_DIGITS):
        return None
    return NoteEntry(commit.decode("ascii"), oid.decode("ascii"))


def changed_notes(cwd: Path, base: str | None, target: str) -> list[NoteEntry]:
    """The notes of ``target`` added or changed since ``base`` (all of them when ``base`` is None),
    sorted by annotated object id. Deleted notes are not listed: nothing is un-imported."""
    out: list[NoteEntry | None] = []
    if base is None:  # records "<mode> <type> <oid>\t<path>\0", read in a few passes over all of them at once
        proc = run_git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", target], cwd,
                       timeout=BATCH_TIMEOUT_S)  # fmt: skip
        if found := _LS_TREE_NOTE.findall(proc.stdout):
            blobs = b"\n".join(oid for oid, _path in found).decode("ascii").split("\n")
            commits = b"\n".join(path for _oid, path in found).replace(b"/", b"").decode("ascii").split("\n")
            out.extend(NoteEntry(commit, blob) for commit, blob in zip(commits, blobs, strict=True)
                       if len(commit) in (40, 64))  # fmt: skip
    else:  # records ":<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0"
        proc = run_git(["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", "--end-of-options",
                        base, target], cwd, timeout=BATCH_TIMEOUT_S)  # fmt: skip
        fields_ = proc.stdout.split(b"\0")
        for meta, path in zip(fields_[0::2], fields_[1::2], strict=False):
            parts = meta.split(b" ")
            if len(parts) == 5 and parts[4] in (b"A", b"M", b"T"):
                out.append(_entry(path, parts[1], parts[3]))
    unique = {entry.commit: entry for entry in out if entry is not None}  # one note per object, whatever the fan-out
    return [unique[commit] for commit in sorted(unique)]


def _batch_check(cwd: Path, oids: Sequence[str]) -> list[str]:
    """``git cat-file --batch-check`` of ``oids`` (hex object ids), one answer each in their order:
    ``<type> <size>``, or ``<oid> missing``."""
    if not oids:
        return []
    proc = run_git(["cat-file", "--buffer", "--batch-check=%(objecttype) %(objectsize)"], cwd,
                   input_bytes="".join(f"{oid}\n" for oid in oids).encode("ascii"),
                   timeout=BATCH_TIMEOUT_S)  # fmt: skip
    answers = proc.stdout.decode("ascii", "replace").split("\n")
    if len(answers) != len(oids) + 1 or answers[-1]:
        raise GitError(f"git cat-file --batch-check answered {len(answers) - 1} lines for {len(oids)} objects")
    return answers[:-1]


def _blob_sizes(blobs: Sequence[str], answers: Sequence[str]) -> dict[str, int | None]:
    """The size of each of ``blobs`` whose answer says it is a blob (None: missing, or not a blob)."""
    return {oid: int(answer[5:]) if answer.startswith("blob ") else None
            for oid, answer in zip(blobs, answers, strict=True)}  # fmt: skip


def object_sizes(cwd: Path, oids: Iterable[str]) -> dict[str, int | None]:
    """The size of each blob of ``oids`` (None: missing, or not a blob), from one process."""
    wanted = list(dict.fromkeys(oids))
    return _blob_sizes(wanted, _batch_check(cwd, wanted))


def existing_commits(cwd: Path, oids: Iterable[str]) -> set[str]:
    """Those of ``oids`` that are commits here, their type read with ``git cat-file --batch-check``; where a
    promisor remote would fetch a missing object (a round trip per junk note), ``git rev-list --missing=print``."""
    return commits_and_sizes(cwd, list(dict.fromkeys(oids)), [])[0]


def commits_and_sizes(cwd: Path, commits: Sequence[str],
                      blobs: Sequence[str]) -> tuple[set[str], dict[str, int | None]]:  # fmt: skip
    """Which of ``commits`` are commits here, and the size of each of ``blobs`` (None: missing, or not a blob),
    from one ``git cat-file --batch-check``; two processes where a promisor remote would fetch missing commits."""
    if commits and _has_promisor(cwd):
        return _listed_commits(cwd, commits), object_sizes(cwd, blobs)
    answers = _batch_check(cwd, [*commits, *blobs])
    present = {oid for oid, answer in zip(commits, answers, strict=False) if answer.startswith("commit ")}  # then blobs
    return present, _blob_sizes(blobs, answers[len(commits) :])


def _listed_commits(cwd: Path, oids: Sequence[str]) -> set[str]:
    """Those of ``oids`` that are commits here, asked of ``git rev-list --missing=print`` (which, unlike
    ``cat-file``, never fetches a missing object from a promisor remote)."""
    asked = "".join(f"{oid}\n" for oid in oids).encode("ascii")
    proc = run_git(["rev-list", "--no-walk", "--ignore-missing", "--missing=print", "--stdin"], cwd,
                   input_bytes=asked, timeout=BATCH_TIMEOUT_S)  # fmt: skip
    return {ln.strip() for ln in proc.stdout.decode("ascii", "replace").splitlines()}.intersection(oids)


def _has_promisor(cwd: Path) -> bool:
    """Whether the repository is a partial clone (or names any promisor remote)."""
    pattern = r"^(extensions\.partialclone|remote\..*\.promisor)$"
    proc = run_git(["config", "--get-regexp", pattern], cwd, check=False)
    return bool(proc.stdout.strip())


def stream_blobs(cwd: Path, oids: Sequence[str]) -> Generator[tuple[str, bytes | None], None, None]:
    """``(oid, bytes)`` of each of ``oids`` in that order (None: missing, or not a blob), handed over while one
    ``git cat-file --batch`` still reads the rest, so the caller's work overlaps git's (the caller bounds their
    sizes first). A thread drains git's output as it comes: git never waits on the caller, and its timeout is
    its own. Closing the iterator early ends git (its next write fails)."""
    if not oids:
        return
    asked = "".join(f"{oid}\n" for oid in oids).encode("ascii")
    found: queue.SimpleQueue[list[tuple[str, bytes | None]] | BaseException | None] = queue.SimpleQueue()
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError, AttributeError):  # Linux: git writes a chunk a read takes, not 64 KiB
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, READ_CHUNK)
    stop = threading.Event()

    def git() -> None:
        with _file(write_fd, "wb") as sink:  # closed once git has exited: the drain then sees the end
            run_git(["cat-file", "--buffer", "--batch"], cwd, input_bytes=asked, stdout=sink, timeout=BATCH_TIMEOUT_S)

    def drain() -> None:
        try:
            with _file(read_fd, "rb", buffering=0) as source:  # closed early when the caller stops: git's next
                for records in _record_chunks(source):  # write fails
                    if stop.is_set():
                        return
                    found.put(records)
            found.put(None)
        except BaseException as exc:  # handed to the caller
            found.put(exc)

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="agentreview-blobs") as pool:
        running, _drained = pool.submit(git), pool.submit(drain)
        try:
            while (item := found.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield from item
        except BaseException:
            stop.set()
            raise
        running.result()  # git's own failure (a timeout) is raised, not taken for the end of its output


def _file(fd: int, mode: str, buffering: int = -1) -> IO[bytes]:
    """``fd`` as a file object that owns it (closed even when wrapping it fails, so no end of the pipe is left open
    for the other to wait on)."""
    try:
        return open(fd, mode, buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def _record_chunks(source: IO[bytes]) -> Iterator[list[tuple[str, bytes | None]]]:
    """The records of ``git cat-file --batch`` output, ``<oid> <type> <size>\n<bytes>\n`` or ``<oid> missing\n``,
    as ``(oid, bytes)`` (None: not a blob), those complete after each read of up to :data:`READ_CHUNK` bytes
    together: a thread that took the interpreter lock back once per record would wait for it behind a busy
    caller every time."""
    buffer = bytearray()
    while chunk := source.read(READ_CHUNK):
        buffer += chunk
        records: list[tuple[str, bytes | None]] = []
        start = 0
        while (newline := buffer.find(b"\n", start)) != -1:
            parts = buffer[start:newline].split()
            if len(parts) != 3 or not parts[2].isdigit():
                records.append(((parts[0].decode("ascii", "replace") if parts else ""), None))  # no body follows
                start = newline + 1
                continue
            end = newline + 1 + int(parts[2])
            if end >= len(buffer):  # the body and its newline are not all here yet
                break
            if buffer[end] != 0x0A:
                oid = parts[0][:12].decode("ascii", "replace")
                raise GitError(f"git cat-file --batch: the output of {oid} is cut short")
            body = bytes(buffer[newline + 1 : end]) if parts[1] == b"blob" else None
            records.append((parts[0].decode("ascii"), body))
            start = end + 1
        del buffer[:start]
        if records:
            yield records
    if buffer:
        oid = bytes(buffer[:12]).decode("ascii", "replace")
        raise GitError(f"git cat-file --batch: the output of {oid} is cut short")
