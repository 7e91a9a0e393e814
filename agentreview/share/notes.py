"""Attestations in git notes ``refs/notes/agentreview``, one canonical-JSON attestation per line: data about a
commit, replicated by git, so sharing needs no export commit. A note is a *set* of lines (merged as git's
``cat_sort_uniq``). Its content is untrusted: oversized or non-JSON lines are skipped with a note, never a crash."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentreview.host.gitrun import GitError, run_git
from agentreview.model.digests import loads_strict, refuse_constant

NOTES_REF = "refs/notes/agentreview"
INCOMING_REF = "refs/notes/agentreview-incoming"
MAX_LINE_BYTES = 1024 * 1024
MAX_NOTE_BYTES = 64 * 1024 * 1024
PUSH_ATTEMPTS = 5
_LOOSE = json.JSONDecoder(parse_constant=refuse_constant)  # json.loads(line, parse_constant=...), built once
_FALLBACK_IDENT = {"user.name": "agentreview", "user.email": "agentreview@localhost"}


class NotesError(Exception):
    """A notes operation that cannot be done (no such remote, a push rejected every time, git failed)."""


def _ident(cwd: Path) -> dict[str, str]:
    """Notes are commits: a host without a configured identity (a CI runner) uses a neutral one."""
    proc = run_git(["var", "GIT_COMMITTER_IDENT"], cwd, check=False)
    return {} if proc.returncode == 0 else dict(_FALLBACK_IDENT)


def _notes(cwd: Path, args: list[str], *, check: bool = True, input_bytes: bytes | None = None) -> Any:
    return run_git(["notes", f"--ref={NOTES_REF}", *args], cwd, check=check, input_bytes=input_bytes,
                   config=_ident(cwd))  # fmt: skip


def read_note(cwd: Path, commit: str, ref: str = NOTES_REF) -> bytes:
    """The raw note of ``commit`` under ``ref`` (empty when none). Whoever can push writes notes, so its size is
    asked first: one of gigabytes, or one that is not a blob, is refused before it is read."""
    from agentreview.share.batch import object_sizes

    listed = run_git(["notes", f"--ref={ref}", "list", "--end-of-options", commit], cwd, check=False)
    blob = listed.stdout.decode("ascii", "replace").strip() if listed.returncode == 0 else ""
    if not blob:
        return b""
    size = object_sizes(cwd, [blob]).get(blob)
    if size is None:
        raise NotesError(f"the note of {commit[:12]} is not a readable blob — refusing to read it")
    if size > MAX_NOTE_BYTES:
        raise NotesError(f"the note of {commit[:12]} is larger than {MAX_NOTE_BYTES} bytes — refusing to read it")
    data: bytes = run_git(["cat-file", "blob", "--end-of-options", blob], cwd).stdout
    return data


def _loads_loose(line: bytes) -> Any:
    """``json.loads(line, parse_constant=refuse_constant)`` with its decoder built once, not per line."""
    utf8 = line[:1] == b"{" and line[1:2] != b"\x00"  # what json.detect_encoding says of such a line
    encoding = "utf-8" if utf8 else json.detect_encoding(line)
    return _LOOSE.decode(line.decode(encoding, "surrogatepass"))


def note_lines(data: bytes, where: str = "note") -> tuple[list[tuple[int, bytes]], list[str]]:
    """The lines of a note that are not blank, each with its number, and a message for every line over the bound."""
    if data.find(b"\n") == len(data) - 1 and len(data) <= MAX_LINE_BYTES + 1 and data.strip():
        return [(1, data[:-1])], []  # one line, as publish writes a note of one attestation
    out: list[tuple[int, bytes]] = []
    skipped: list[str] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            skipped.append(f"{where}: line {number} is larger than {MAX_LINE_BYTES} bytes — skipped")
            continue
        out.append((number, line))
    return out, skipped


def parse_line(number: int, line: bytes, where: str = "note", *, strict: bool = True) -> dict[str, Any] | str:
    """The JSON object of a note's line, or the message that skips it. ``strict``: duplicate keys refused too
    (else the later one wins, as in JavaScript); NaN and Infinity are refused either way."""
    try:
        value = loads_strict(line) if strict else _loads_loose(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # a note nested deep to crash a fetch
        return f"{where}: line {number} is not JSON ({str(exc)[:120]}) — skipped"
    if not isinstance(value, dict):
        return f"{where}: line {number} is not a JSON object — skipped"
    return value


def parse_note(
    data: bytes, where: str = "note", *, strict: bool = True
) -> tuple[list[tuple[int, bytes, dict[str, Any]]], list[str]]:
    """The JSON objects of a note, one per line, each with its line number and bytes, and a message
    for every line skipped; ``strict`` as :func:`parse_line` says."""
    lines, skipped = note_lines(data, where)
    out: list[tuple[int, bytes, dict[str, Any]]] = []
    for number, line in lines:
        value = parse_line(number, line, where, strict=strict)
        if isinstance(value, str):
            skipped.append(value)
        else:
            out.append((number, line, value))
    return out, skipped


def merge_lines(*notes: bytes) -> bytes:
    """The union of the lines of ``notes``, sorted and unique (git's ``cat_sort_uniq``)."""
    lines = {ln for note in notes for ln in note.split(b"\n") if ln.strip()}
    return b"".join(ln + b"\n" for ln in sorted(lines))


def add_lines(cwd: Path, commit: str, lines: Iterable[bytes]) -> bool:
    """Merge ``lines`` into the note of ``commit``; True when the note changed."""
    old = read_note(cwd, commit)
    new = merge_lines(old, b"\n".join(lines))
    if new == merge_lines(old) and old:
        return False
    _notes(cwd, ["add", "-f", "-F", "-", "--end-of-options", commit], input_bytes=new)
    return True


def _commits(cwd: Path, *refs: str) -> dict[str, str]:
    """The commit each of ``refs`` names (a ref that names none is left out), from one process."""
    proc = run_git(["for-each-ref", "--format=%(objecttype) %(objectname) %(refname)", "--", *refs], cwd)
    found = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        kind, _, rest = line.partition(" ")
        oid, _, name = rest.partition(" ")
        if kind == "commit" and name in refs:
            found[name] = oid
    return found


def remote_commit(cwd: Path, remote: str) -> str | None:
    """The commit the remote's notes ref names (None: it has none), from one ``git ls-remote``, fetching nothing."""
    proc = run_git(["ls-remote", "--refs", "--end-of-options", remote, NOTES_REF], cwd, check=False, timeout=120)
    if proc.returncode != 0:
        last = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        raise NotesError(f"git ls-remote {remote}: {last[-1] if last else 'failed'}")
    for line in proc.stdout.decode("ascii", "replace").splitlines():
        oid, _, name = line.partition("\t")
        if name.strip() == NOTES_REF and oid.strip():
            return oid.strip()
    return None


def fetch_and_merge(cwd: Path, remote: str) -> str | None:
    """Fetch the remote's notes and merge them into ours as a set; their commit (:data:`INCOMING_REF`) or None."""
    proc = run_git(["fetch", "--quiet", "--no-tags", "--end-of-options", remote, f"+{NOTES_REF}:{INCOMING_REF}"],
                   cwd, check=False, timeout=120)  # fmt: skip
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in message or "could not find remote ref" in message:
            return None
        last = [ln for ln in message.splitlines() if ln.strip()]
        raise NotesError(f"git fetch {remote}: {last[-1] if last else 'failed'}")
    refs = _commits(cwd, INCOMING_REF, NOTES_REF)
    incoming, local = refs.get(INCOMING_REF), refs.get(NOTES_REF)
    if incoming is None:
        return None
    if local is None:
        run_git(["update-ref", NOTES_REF, incoming], cwd)
    elif local != incoming:
        _notes(cwd, ["merge", "--quiet", "-s", "cat_sort_uniq", INCOMING_REF])
    return incoming


def push(cwd: Path, remote: str, *, attempts: int = PUSH_ATTEMPTS) -> None:
    """Push our notes ref; on a rejection fetch, merge and retry (at most ``attempts`` times)."""
    last = ""
    for _ in range(attempts):
        proc = run_git(["push", "--quiet", "--no-verify", "--end-of-options", remote, f"{NOTES_REF}:{NOTES_REF}"],
                       cwd, check=False, timeout=120)  # fmt: skip
        if proc.returncode == 0:
            return
        lines = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        last = lines[-1] if lines else f"git push exited with {proc.returncode}"
        text = "\n".join(lines)
        if "rejected" not in text and "fetch first" not in text and "non-fast-forward" not in text:
            raise NotesError(f"git push {remote}: {last}")
        fetch_and_merge(cwd, remote)
    raise NotesError(f"git push {remote}: rejected {attempts} times ({last}) — run it again")


def head_commit(cwd: Path, rev: str = "HEAD") -> str:
    try:
        proc = run_git(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"], cwd)
    except GitError as exc:
        raise NotesError(f"{os.fspath(cwd)}: {exc}") from exc
    return proc.stdout.decode().strip()
