"""Publish this host's attestations to git notes, and import other hosts' attestations from them.

Publishing adds the attestation's canonical JSON to the note of its head commit and pushes the
notes ref. Fetching merges the remote's notes and imports every attestation into the
:class:`~agentreview.store.foreign.ForeignStore`, with the remote it came from and the principal
whose signature verified against ``[team] allowed_signers`` (when that is configured; else no
principal: an imported entry is information, never trust, until team trust says otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.host.gitrun import run_git
from agentreview.share.notes import (
    NOTES_REF,
    NotesError,
    add_lines,
    fetch_and_merge,
    head_commit,
    parse_note,
    push,
    read_note,
)

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.plugins.registry import Registry
    from agentreview.store.foreign import ForeignStore


@dataclass
class Published:
    commit: str
    changed: bool
    pushed: str | None


@dataclass
class Fetched:
    remote: str
    found: int = 0
    new: int = 0
    notes: list[str] = field(default_factory=list)


def attestation_line(att: Attestation) -> bytes:
    """The one line a note holds for ``att``: its canonical JSON (signature included)."""
    from agentreview.model.digests import canonical_json

    return canonical_json(att.to_json_dict())


def publish(cwd: Path, att: Attestation, *, remote: str | None) -> Published:
    """Add ``att`` to the note of its head commit; push the notes ref to ``remote`` unless it is None."""
    commit = head_commit(cwd, att.target.headSha)
    changed = add_lines(cwd, commit, [attestation_line(att)])
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


def _annotated(cwd: Path) -> list[str]:
    proc = run_git(["notes", f"--ref={NOTES_REF}", "list"], cwd, check=False)
    if proc.returncode != 0:
        return []
    return [ln.split()[1] for ln in proc.stdout.decode("utf-8", "replace").splitlines() if len(ln.split()) == 2]


def fetch(cwd: Path, store: ForeignStore, *, remote: str, registry: Registry | None = None,
          signers: Path | None = None) -> Fetched:  # fmt: skip
    """Fetch and merge ``remote``'s notes; import every attestation they hold into ``store``."""
    from agentreview.store.layout import LedgerError

    out = Fetched(remote)
    fetch_and_merge(cwd, remote)
    for commit in _annotated(cwd):
        where = f"{NOTES_REF} note of {commit[:12]}"
        try:
            data = read_note(cwd, commit)
        except NotesError as exc:
            out.notes.append(f"{exc} — skipped")
            continue
        docs, skipped = parse_note(data, where)
        out.notes.extend(skipped)
        for raw in docs:
            out.found += 1
            principal = _principal(raw, signers, registry, where, out.notes)
            try:
                if store.add(raw, remote=remote, principal=principal):
                    out.new += 1
            except (LedgerError, ValueError) as exc:  # AttestationShapeError is a ValueError
                first = str(exc).splitlines()[0][:160]
                out.notes.append(f"{where}: a line is not a valid attestation ({first}) — skipped")
    return out


def note_attestations(cwd: Path, commit: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects in the note of ``commit`` and the notes on lines skipped (for ``verify --notes``)."""
    return parse_note(read_note(cwd, commit), f"{NOTES_REF} note of {commit[:12]}")
