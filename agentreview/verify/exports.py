"""AIP-62 verification step 3: finding the attestation among the export files, and reading one.

Strict, bounded JSON from regular files only; the ``HEAD^`` retry decided on repository paths, never through a
symlink, so neither ``exportDir: .`` nor a linked export folder waves an unreviewed commit through."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.digests import loads_strict
from agentreview.model.errors import EXIT_ERROR, EXIT_INVALID, EXIT_NOT_EXPORTED, EXIT_NOT_FOUND, EXIT_USAGE
from agentreview.model.record import record
from agentreview.store.exportcommit import head_only_touches_exports, repository_folder
from agentreview.verify.expectation import resolve_expectation
from agentreview.verify.result import VerifyStop

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.verify.result import VerifyOptions

# An export is a few KiB; anything this large is not one, and reading it must stay bounded.
MAX_ATTESTATION_BYTES = 8 * 1024 * 1024
# An attestation nests about six levels deep; far deeper input only serves to exhaust the
# recursion of whatever walks it next (shape check, canonical JSON).
MAX_JSON_DEPTH = 64


class UnreadableExport(Exception):
    """An export file that is not a readable, strict JSON object."""


def read_export(path: Path) -> dict[str, Any]:
    """Read one export as a strict JSON object, else raise :class:`UnreadableExport` saying why. Regular files
    only (a FIFO would block), bounded; duplicate keys and NaN/Infinity are refused: two parsers must never
    disagree about what a signed document says."""
    from agentreview.host.files import UnreadableFileError, read_regular_file

    try:
        # One non-blocking open, then fstat: no window for a FIFO swapped in between a check and the read.
        data = read_regular_file(path, limit=MAX_ATTESTATION_BYTES)
    except UnreadableFileError as exc:
        raise UnreadableExport(f"{exc}, not an attestation") from exc
    try:
        value = loads_strict(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableExport("not UTF-8 text") from exc
    except (ValueError, RecursionError) as exc:
        raise UnreadableExport(f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise UnreadableExport("not a JSON object")
    if _nesting_depth(value) > MAX_JSON_DEPTH:
        raise UnreadableExport(f"nested deeper than {MAX_JSON_DEPTH} levels, not an attestation")
    return value


def _nesting_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (iterative: no recursion to exhaust)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


@record
class ExportDoc:
    """One export file read from the export folder: where it is and its JSON as read."""

    path: Path
    raw: dict[str, Any]


def scan_export_dir(directory: Path) -> tuple[list[ExportDoc], list[str]]:
    """Every ``*.json`` directly inside ``directory`` (not recursive), and a note per file skipped."""
    docs: list[ExportDoc] = []
    notes: list[str] = []
    try:
        names = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".json"))
    except OSError as exc:
        raise VerifyStop(
            EXIT_NOT_FOUND, "not_found", f"cannot list export directory {directory}: {exc.strerror}"
        ) from exc
    for name in names:
        path = directory / name
        if path.is_dir():
            continue
        try:
            docs.append(ExportDoc(path, read_export(path)))
        except UnreadableExport as exc:
            notes.append(f"skipped {path}: {exc}")
    return docs, notes


def target_of(raw: dict[str, Any]) -> dict[str, Any]:
    """The ``target`` member, or an empty object when it is missing or not an object."""
    target = raw.get("target")
    return target if isinstance(target, dict) else {}


def created_at_key(raw: dict[str, Any]) -> float:
    """Sort key for "newest first": the createdAt instant; unparsable dates sort oldest."""
    value = raw.get("createdAt")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
    except ValueError:
        moment = None
    return moment.timestamp() if moment is not None and moment.tzinfo is not None else float("-inf")


def find_for_range(docs: Sequence[ExportDoc], base_sha: str, head_sha: str, binding: str | None) -> ExportDoc | None:
    """The newest export whose target is exactly ``base_sha..head_sha`` (and ``binding`` when given)."""
    matches = [
        doc
        for doc in docs
        if target_of(doc.raw).get("baseSha") == base_sha
        and target_of(doc.raw).get("headSha") == head_sha
        and (binding is None or doc.raw.get("binding") == binding)
    ]
    if not matches:
        return None
    # Newest createdAt first; the file name breaks ties so the choice never depends on the file system.
    matches.sort(key=lambda d: (created_at_key(d.raw), d.path.name), reverse=True)
    return matches[0]


# --------------------------------------------------------------------------- step 3


@record
class Located:
    """The attestation to verify, the export docs ``composedFrom`` priors are looked up in, and
    the expected range (moved to ``HEAD^`` when the head only commits exports)."""

    doc: ExportDoc
    docs: list[ExportDoc]
    base_sha: str
    head_sha: str


def _named_folder(root: Path, options: VerifyOptions) -> str | None:
    """The repository folder of a directory the caller named, read as written (a symlink on the
    way is not resolved: it would name another folder); ``None`` outside the repository."""
    assert options.path is not None
    lexical = os.path.abspath(os.path.join(options.cwd, options.path))
    rel = os.path.relpath(lexical, root)
    return repository_folder(rel.replace(os.sep, "/"))


def _scan_quietly(directory: Path) -> tuple[list[ExportDoc], list[str]]:
    try:
        return scan_export_dir(directory)
    except VerifyStop:
        return [], []


def locate(
    options: VerifyOptions,
    parsed: ParsedReview,
    root: Path,
    base_sha: str,
    head_sha: str,
    *,
    absolute: Callable[[Path], Path],
    notes: list[str],
) -> Located:
    """Step 3: the named file, or the newest export for the range in the named or declared directory, else
    :class:`VerifyStop`. Skipped files and the ``HEAD^`` retry go to ``notes`` at once, shown even on a stop."""
    if options.notes:
        return locate_in_notes(options, root, base_sha, head_sha, notes=notes)
    if options.path is not None:
        given = absolute(options.path)
        if not given.is_dir():
            if not given.exists():
                raise VerifyStop(EXIT_NOT_FOUND, "not_found", f"no attestation at {given}")
            try:
                raw = read_export(given)
            except UnreadableExport as exc:
                # A file the caller named is not skipped: it is the claim, and it is invalid.
                raise VerifyStop(EXIT_INVALID, "invalid", f"{given}: {exc}", path=given) from exc
            docs, skipped = _scan_quietly(given.parent)
            notes.extend(skipped)
            return Located(ExportDoc(given, raw), docs, base_sha, head_sha)
        directory = given
        folder = _named_folder(root, options)
    else:
        export_dir = parsed.manifest.verdict.exportDir
        if export_dir is None:
            if options.if_exported:
                raise VerifyStop(
                    EXIT_NOT_EXPORTED,
                    "not_exported",
                    "the manifest declares no verdict.exportDir; nothing exported",
                )
            raise VerifyStop(
                EXIT_USAGE,
                "usage",
                "no attestation path given and the manifest declares no verdict.exportDir — pass the export "
                "file or directory, or add --if-exported to make 'not exported' its own outcome (exit 5)",
            )
        directory = root / export_dir
        folder = repository_folder(export_dir)
    if not directory.is_dir():
        stop = VerifyStop(EXIT_NOT_FOUND, "not_found", f"export directory {directory} does not exist")
        return _published_instead(stop, options, root, base_sha, head_sha, notes)
    docs, skipped = scan_export_dir(directory)
    notes.extend(skipped)
    found = find_for_range(docs, base_sha, head_sha, options.binding)
    if found is None and options.head is None and head_only_touches_exports(root, folder, head_sha):
        from agentreview.host.git import GitError

        try:
            retry = resolve_expectation(root, parsed.manifest.target.base, options.base, f"{head_sha}^")
        except GitError as exc:
            raise VerifyStop(EXIT_ERROR, "error", str(exc)) from exc
        base_retry, head_retry = retry.base_sha, retry.head.commit
        found = find_for_range(docs, base_retry, head_retry, options.binding)
        if found is not None:
            notes.append(
                f"HEAD {head_sha[:10]} only adds exports under {directory}; verified its parent "
                f"{head_retry[:10]} as the attested head"
            )
            base_sha, head_sha = base_retry, head_retry
    if found is None and options.path is None:
        stop = _not_found(base_sha, head_sha, options.binding, f"in {directory}")
        return _published_instead(stop, options, root, base_sha, head_sha, notes)
    if found is None:
        raise _not_found(base_sha, head_sha, options.binding, f"in {directory}")
    return Located(found, docs, base_sha, head_sha)


def _not_found(base_sha: str, head_sha: str, binding: str | None, where: str) -> VerifyStop:
    """No attestation for the range (and ``binding``) ``where`` the gate looked."""
    named = f"{base_sha[:10]}..{head_sha[:10]}" + (f" (binding '{binding}')" if binding else "")
    return VerifyStop(EXIT_NOT_FOUND, "not_found", f"no attestation for {named} {where}")


def _published_instead(
    stop: VerifyStop, options: VerifyOptions, root: Path, base_sha: str, head_sha: str, notes: list[str]
) -> Located:
    """The attestation in the head's ``refs/notes/agentreview`` note, verified exactly as an export is (a review
    published as a note needs no export commit), when the export directory has none for the range; else ``stop``."""
    from agentreview.host.gitrun import run_git
    from agentreview.share.notes import NOTES_REF

    listed = run_git(["notes", f"--ref={NOTES_REF}", "list", "--end-of-options", head_sha], root, check=False)
    if listed.returncode != 0 or not listed.stdout.strip():
        raise _looked_in_both(stop, f"HEAD {head_sha[:10]} has no {NOTES_REF} note here (a published one is read "
                                    f"once fetched: {_fetch_notes()})", options.binding)  # fmt: skip
    try:
        located = locate_in_notes(options, root, base_sha, head_sha, notes=notes)
    except VerifyStop:
        raise _looked_in_both(stop, f"the {NOTES_REF} note of {head_sha[:10]} has none for {base_sha[:10]}.."
                                    f"{head_sha[:10]}", options.binding) from None  # fmt: skip
    notes.append(f"no export for the range; the attestation checked is the one published in the {NOTES_REF} note "
                 f"of {head_sha[:10]}")  # fmt: skip
    return located


def _fetch_notes() -> str:
    """How a checkout gets the published notes, as the refusals that did not find one say."""
    from agentreview.share.notes import NOTES_REF

    return f"'git fetch origin {NOTES_REF}:{NOTES_REF}' or 'agentreview fetch'"


def _looked_in_both(stop: VerifyStop, in_notes: str, binding: str | None) -> VerifyStop:
    """``stop`` (nothing for the range where the exports are) saying what the head's note held too, and the two
    ways to hand the gate a review: the most common failure of a gate, read by whoever opened the pull request."""
    run = "agentreview run" + (f" --binding {binding}" if binding else "")
    return VerifyStop(stop.exit_code, stop.reason, f"{stop}, and {in_notes} — review the change and publish it "
                      f"('{run} --publish'), or export and commit it ('{run} --export')", path=stop.path)  # fmt: skip


# --------------------------------------------------------------------------- step 3 from git notes

MAX_NOTE_COMMITS = 256  # composedFrom chains followed through notes, at most this many notes read


def _note_docs(root: Path, commit: str, notes: list[str]) -> list[ExportDoc]:
    """The attestations in the note of ``commit``, pseudo-paths naming ref, commit and line. An unreadable note
    is skipped with a note, as a bad line is: a missing claim is "not found"."""
    from agentreview.host.gitrun import GitError
    from agentreview.share.exchange import note_attestations
    from agentreview.share.notes import NOTES_REF, NotesError

    try:
        raws, skipped = note_attestations(root, commit)
    except (NotesError, GitError) as exc:
        notes.append(f"skipped the {NOTES_REF} note of {commit[:12]}: {exc}")
        return []
    notes.extend(skipped)
    docs = []
    for number, raw in enumerate(raws, start=1):
        if _nesting_depth(raw) > MAX_JSON_DEPTH:
            notes.append(f"skipped {NOTES_REF} note of {commit[:12]} entry {number}: nested too deep")
            continue
        docs.append(ExportDoc(Path(f"{NOTES_REF}@{commit}#{number:06d}"), raw))
    return docs


def _prior_heads(raw: dict[str, Any]) -> list[str]:
    lanes = raw.get("lanes")
    heads: list[str] = []
    if not isinstance(lanes, list):
        return heads
    for lane in lanes:
        prior = lane.get("composedFrom") if isinstance(lane, dict) else None
        head = prior.get("headSha") if isinstance(prior, dict) else None
        if isinstance(head, str) and len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head):
            heads.append(head)
    return heads


def locate_in_notes(options: VerifyOptions, root: Path, base_sha: str, head_sha: str, *, notes: list[str]) -> Located:
    """Step 3 from ``refs/notes/agentreview``: the newest attestation for the range in the note of
    the head commit, matched exactly as in an export directory. No ``HEAD^`` rule: a note is not a
    commit, so the reviewed head is the head. Priors are looked up in the notes of their heads."""
    from agentreview.share.notes import NOTES_REF

    if options.path is not None:
        raise VerifyStop(EXIT_USAGE, "usage", "--notes reads the attestation from git notes: give no PATH with it")
    docs = _note_docs(root, head_sha, notes)
    found = find_for_range(docs, base_sha, head_sha, options.binding)
    if found is None:
        where = f"in the {NOTES_REF} note of {head_sha[:10]} — publish it ('agentreview publish') and fetch the notes"
        raise _not_found(base_sha, head_sha, options.binding, f"{where} ({_fetch_notes()})")
    seen = {head_sha}
    pending = _prior_heads(found.raw)
    while pending and len(seen) < MAX_NOTE_COMMITS:
        head = pending.pop()
        if head in seen:
            continue
        seen.add(head)
        more = _note_docs(root, head, notes)
        docs.extend(more)
        for doc in more:
            pending.extend(_prior_heads(doc.raw))
    return Located(found, docs, base_sha, head_sha)
