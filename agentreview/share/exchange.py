"""Publish attestations to git notes, and import other hosts' as foreign entries (with a principal only when the
signature verifies against ``[team] allowed_signers``). Whoever can push decides how many notes there are, so a
fetch reads only what changed, bounded in notes, bytes and signature checks; the next one goes on from there."""

from __future__ import annotations

import contextlib
import gc
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.host.gitrun import GitError
from agentreview.model.digests import canonical_json
from agentreview.share import fetchstate, notes
from agentreview.share.batch import NoteEntry, changed_notes, commits_and_sizes, object_sizes, stream_blobs
from agentreview.share.fetchstate import FetchState
from agentreview.share.notes import (
    NOTES_REF,
    add_lines,
    fetch_and_merge,
    head_commit,
    note_lines,
    parse_line,
    parse_note,
    push,
    read_note,
    remote_commit,
)
from agentreview.store.layout import LedgerError

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from agentreview.model.attestation import Attestation
    from agentreview.plugins.registry import Registry
    from agentreview.store.entries import Summary
    from agentreview.store.foreign import ForeignStore


@dataclass
class Published:
    commit: str
    changed: bool
    pushed: str | None


MAX_NOTES_PER_FETCH = 20_000  # notes read by one fetch; the next fetch goes on from where it stopped
MAX_FETCH_BYTES = 64 * 1024 * 1024  # note bytes read by one fetch (the first note is always read)
MAX_SIGNATURE_CHECKS_PER_FETCH = 1000  # signer processes one fetch starts (team trust on)


@dataclass
class Fetched:
    """What one fetch did: attestations found and stored, notes read, whether a cap stopped it, and what it skipped."""

    remote: str
    found: int = 0
    new: int = 0
    read: int = 0
    complete: bool = True
    unchanged: bool = False
    notes: list[str] = field(default_factory=list)


def publish(cwd: Path, att: Attestation, *, remote: str | None) -> Published:
    """Add ``att`` to the note of its head commit; push the notes ref to ``remote`` unless it is None."""
    commit = head_commit(cwd, att.target.headSha)
    changed = add_lines(cwd, commit, [canonical_json(att.to_json_dict())])  # the note's line: its canonical JSON
    if remote is not None:
        push(cwd, remote)
    return Published(commit, changed, remote)


def team_signers(home: Path | None = None) -> Path | None:
    """``[team] allowed_signers`` of config.toml, when it names a file (relative to the home)."""
    from agentreview.host.home import home_dir, load_config

    team = load_config(home).get("team")
    value = team.get("allowed_signers") if isinstance(team, dict) else None
    if not isinstance(value, str) or not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else (home or home_dir()) / path


def _principal(
    raw: dict[str, Any], signers: Path | None, registry: Registry | None, where: str, notes: list[str]
) -> str | None:
    if signers is None or registry is None:
        return None
    from agentreview.model.contracts.errors import SignatureInvalidError
    from agentreview.signing.signers import verify_signature

    try:
        return verify_signature(raw, signers, registry)
    except (SignatureInvalidError, OSError, ValueError) as exc:
        # Kept, so `ledger` shows it, but with no principal: never trusted.
        notes.append(f"{where}: signature not verified against {signers} ({str(exc)[:160]}) — imported untrusted")
        return None


@dataclass
class _Budget:
    """What one fetch may still spend: notes read, their bytes, signature checks."""

    notes: int
    bytes: int
    signatures: int


def unchanged(cwd: Path, remote: str, state_file: Path) -> bool:
    """True when ``remote``'s notes ref is the notes commit imported last in full (one ``git ls-remote``)."""
    return _unchanged(cwd, remote, fetchstate.load(state_file))


def _unchanged(cwd: Path, remote: str, state: FetchState) -> bool:
    return state.importing is None and state.imported is not None and remote_commit(cwd, remote) == state.imported


def fetch(cwd: Path, store: ForeignStore, *, remote: str, registry: Registry | None = None,
          signers: Path | None = None, state_file: Path | None = None, limit: int = MAX_NOTES_PER_FETCH,
          rescan: bool = False, checked: bool = False) -> Fetched:  # fmt: skip
    """Fetch and merge ``remote``'s notes; import their new attestations into ``store``. ``state_file`` keeps the
    notes commit imported last (``rescan`` ignores it); ``checked``: :func:`unchanged` already said the ref moved."""
    out = Fetched(remote)
    state = FetchState() if state_file is None or rescan else fetchstate.load(state_file)
    if not checked and _unchanged(cwd, remote, state):
        out.unchanged = True
        return out
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentreview-load") as side:
        loading = side.submit(_load_readers)  # while git fetches (on this thread, so an interrupt stops git)
        incoming = fetch_and_merge(cwd, remote)
        loading.result()
    if incoming is None:
        return out
    with _no_cycle_collection():
        state = _import_until(cwd, store, state, incoming, limit, out, signers=signers, registry=registry)
        store.sync()  # every imported entry is on disk before the state says it was read
    if state_file is not None:
        fetchstate.save(state_file, state)
    return out


def _import_until(cwd: Path, store: ForeignStore, state: FetchState, incoming: str, limit: int, out: Fetched, *,
                  signers: Path | None, registry: Registry | None) -> FetchState:  # fmt: skip
    """Import the notes changed from ``state`` up to the notes commit ``incoming``, within one fetch's caps; the
    state to record once the entries are on disk."""
    budget = _Budget(max(1, limit), MAX_FETCH_BYTES, MAX_SIGNATURE_CHECKS_PER_FETCH)
    while True:
        target = state.importing or incoming
        if target == state.imported:
            break
        if budget.notes <= 0 or budget.bytes <= 0:  # a newer notes commit waits for the next fetch
            out.complete = False
            out.notes.append("fetch: more notes arrived; run 'agentreview fetch' again to read them")
            break
        try:
            entries = changed_notes(cwd, state.imported, target)
        except GitError:
            if state == FetchState():
                raise
            state = FetchState()  # a notes commit recorded earlier is gone (pruned): read everything again
            continue
        if state.cursor is not None:
            entries = [e for e in entries if e.commit > state.cursor]
        done, last = _import(cwd, store, entries, budget, out, signers=signers, registry=registry)
        if not done:  # the cap stopped it: the next fetch goes on after ``last``
            state = FetchState(state.imported, target, last or state.cursor)
            out.complete = False
            break
        state = FetchState(target)
        if target == incoming:
            break
    return state


def _load_readers() -> None:
    """Import what reading notes needs (msgspec, sqlite, the index): done while git fetches, it costs no time."""
    import agentreview.host.locks
    import agentreview.store.index
    import agentreview.store.listed_line  # noqa: F401


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused: an import makes tens of thousands of objects that form no cycle, and the
    collector walked all of them again and again (~7% of a fetch's CPU for 10,000 notes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _import(cwd: Path, store: ForeignStore, entries: list[NoteEntry], budget: _Budget, out: Fetched, *,
            signers: Path | None, registry: Registry | None) -> tuple[bool, str | None]:  # fmt: skip
    """Import ``entries`` within ``budget``: whether all were read, and the id of the last note read in full."""
    from agentreview.store.listed_line import listed_summary  # msgspec: loaded only by a fetch that reads notes

    trusting = signers is not None and registry is not None
    listed = None if trusting else listed_summary  # a line whose signature is checked is read whole
    # which commits are here, and the sizes of the first notes: one git process
    present, sizes = commits_and_sizes(cwd, [e.commit for e in entries], [e.blob for e in entries[: budget.notes]])
    relevant = [e for e in entries if e.commit in present]
    if unsized := [e.blob for e in relevant[: budget.notes] if e.blob not in sizes]:  # absent commits' notes first
        sizes.update(object_sizes(cwd, unsized))
    if len(relevant) < len(entries):
        out.notes.append(
            f"{len(entries) - len(relevant)} note(s) of commits not in this repository skipped — fetch their "
            "branches, then run 'agentreview fetch --rescan' to read them"
        )
    note_limit = notes.MAX_NOTE_BYTES
    readable = {blob for blob, size in sizes.items() if size is not None and size <= note_limit}
    chosen: list[NoteEntry] = []
    counted: set[str] = set()
    for entry in relevant[: budget.notes]:
        cost = (sizes[entry.blob] or 0) if entry.blob in readable and entry.blob not in counted else 0
        if cost > budget.bytes and chosen:
            break
        chosen.append(entry)
        counted.add(entry.blob)
        budget.bytes -= cost
    # one process for every blob (git's delta-base cache serves them all), each note read as soon as git has it
    wanted = [e.blob for e in chosen if e.blob in readable]
    twice = {blob for blob, count in Counter(wanted).items() if count > 1}  # one note's blob kept for another
    kept: dict[str, bytes | None] = {}
    last: str | None = None
    with contextlib.closing(stream_blobs(cwd, list(dict.fromkeys(wanted)))) as stream:
        for entry in chosen:
            out.read += 1
            budget.notes -= 1
            blob, data = entry.blob, None
            if blob in readable:
                if blob in kept:
                    data = kept[blob]
                elif (read := next(stream, None)) is not None and read[0] == blob:  # asked in this order
                    data = read[1]
                if blob in twice:
                    kept[blob] = data
            if (size := sizes.get(blob)) is not None and size > note_limit:
                out.notes.append(f"the note of {entry.commit[:12]} is larger than {note_limit} bytes — skipped")
            elif data is None:
                out.notes.append(f"{NOTES_REF} note of {entry.commit[:12]} is not a readable blob — skipped")
            elif not _import_note(data, f"{NOTES_REF} note of {entry.commit[:12]}", store, out, budget,
                                  listed=listed, signers=signers, registry=registry):  # fmt: skip
                out.notes.append(
                    f"fetch: {MAX_SIGNATURE_CHECKS_PER_FETCH} signatures checked, the most one fetch checks; run "
                    "'agentreview fetch' again to read the rest"
                )
                return False, last
            last = entry.commit
    if len(chosen) == len(relevant):
        return True, last
    out.notes.append(
        f"fetch: {len(relevant)} new note(s), only the first {len(chosen)} read; run 'agentreview fetch' again "
        "to read the rest"
    )
    return False, last


def _import_note(data: bytes, where: str, store: ForeignStore, out: Fetched, budget: _Budget, *,
                 listed: Callable[[bytes], Summary | None] | None, signers: Path | None,
                 registry: Registry | None) -> bool:  # fmt: skip
    """Import the attestations of one note; False when the signature budget ran out before its end (what it
    stored stays stored, and is not checked again when the note is read again). ``listed``: the index columns
    straight from a line's bytes, or None when it cannot tell (then, and without it, the line is read whole)."""
    trusting = signers is not None and registry is not None
    lines, skipped = note_lines(data, where)
    out.notes.extend(skipped)
    for number, line in lines:
        # the strict read waits for the entry's use; a signature is checked over the document the standard
        # library reads, and so is every line ``listed`` cannot read
        if listed is not None and (summary := listed(line)) is not None:  # the common case: no document built
            out.found += 1
            if store.take(line, summary, remote=out.remote):
                out.new += 1
            continue
        document = parse_line(number, line, where, strict=False)
        if isinstance(document, str):
            out.notes.append(document)
            continue
        out.found += 1
        try:
            incoming = store.accept(document, line)
            principal = None
            if trusting:
                if store.has(incoming):  # a stored one is not checked again
                    continue
                store.check(document)  # the whole shape is checked before any signer runs
                if budget.signatures <= 0:
                    out.found -= 1
                    return False
                budget.signatures -= 1
                principal = _principal(document, signers, registry, where, out.notes)
            if store.add(incoming, remote=out.remote, principal=principal, durable=False):  # False: stored
                out.new += 1
        except (LedgerError, ValueError) as exc:  # AttestationShapeError is a ValueError
            first = str(exc).splitlines()[0][:160]
            out.notes.append(f"{where}: line {number} is not a valid attestation ({first}) — skipped")
    return True


def note_attestations(cwd: Path, commit: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects in the note of ``commit`` and the notes on lines skipped (for ``verify --notes``)."""
    found, skipped = parse_note(read_note(cwd, commit), f"{NOTES_REF} note of {commit[:12]}")
    return [document for _number, _line, document in found], skipped
