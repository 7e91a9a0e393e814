"""Export: the attestation file a CI gate reads (AIP-62 §Export), with the priors a composed one pins beside it
(it verifies only with them)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.host.files import UnreadableFileError, atomic_write_text, read_regular_file

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.store.entries import LedgerEntry

# As deep as verify follows a chain (agentreview.verify.composition.MAX_CHAIN_DEPTH).
MAX_PRIOR_DEPTH = 64
MAX_EXPORT_BYTES = 16 * 1024 * 1024


def export_path(att: Attestation, export_dir: Path) -> Path:
    """The default export file for ``att`` in ``export_dir``; a name from document fields that would not stay one
    plain file name (a separator, NUL, a leading dot) is refused."""
    name = f"{att.reviewId}-{att.binding}-{att.target.headSha[:12]}.json"
    if "/" in name or "\\" in name or "\0" in name or name.startswith("."):
        raise ValueError(f"export file name {name!r} (from reviewId, binding and headSha) is not a plain file name")
    return Path(export_dir) / name


def confined_export_dir(repo_root: Path, export_dir: str | Path) -> Path:
    """``verdict.exportDir`` resolved against ``repo_root``; ValueError when it leaves the repository or passes a
    symbolic link. It is authored by the reviewed change, which must not make this host write where it likes, nor
    (through ``.reviews -> config``) beside files the gate's ``HEAD^`` rule must never let a commit touch."""
    root_real = os.path.realpath(repo_root)
    joined = os.path.join(root_real, export_dir)
    real = os.path.realpath(joined)
    if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
        raise ValueError(
            f"verdict.exportDir {str(export_dir)!r} resolves to {real}, outside the repository {root_real}"
        )
    rel = os.fspath(export_dir)
    if os.path.isabs(rel):
        rel = os.path.relpath(os.path.normpath(rel), root_real)
        if rel.split(os.sep)[0] == "..":  # inside only through a link on the way to the root
            raise ValueError(
                f"verdict.exportDir {str(export_dir)!r} names the repository {root_real} through another path: "
                "give it relative to the repository root"
            )
    link = linked_component(root_real, rel)
    if link is not None:
        raise ValueError(
            f"verdict.exportDir {str(export_dir)!r} goes through the symbolic link {link!r}: exports are "
            "written only into a real folder of the repository"
        )
    return Path(real)


def linked_component(root: str | Path, rel: str) -> str | None:
    """The first prefix of the path ``rel`` (from ``root``, as written: ``a/../b`` checks ``a`` too)
    that is a symbolic link on disk, ``None`` when there is none (components that do not exist
    yet are no links)."""
    current = os.fspath(root)
    parts = [part for part in rel.split(os.sep) if part not in ("", ".")]
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        if os.path.islink(current):
            return "/".join(parts[: index + 1])
        if not os.path.lexists(current):
            return None
    return None


def recorded_export_target(entry: LedgerEntry) -> Path | None:
    """Where a recorded entry exports by default, confined to the repository (None: no ``verdict.exportDir``);
    ValueError naming the fix for a directory or name that escapes."""
    if not entry.host.export_dir:
        return None
    directory = confined_export_dir(Path(entry.host.repo_root), entry.host.export_dir)
    return export_path(entry.attestation, directory)


def write_export(att: Attestation, path: Path) -> Path:
    """Write the export atomically (creating directories); readable by the repository's users."""
    return atomic_write_text(Path(path), att.export_text(), mode=0o644)


def composition_priors(
    att: Attestation, lookup: Callable[[str], Attestation | None]
) -> tuple[list[Attestation], list[str]]:
    """Every prior ``att``'s ``composedFrom`` chain names, nearest first (``lookup(rangeSha)`` under the same key;
    only the pinned attestationSha256 counts), and what could not be found. The depth is bounded."""
    priors: list[Attestation] = []
    missing: list[str] = []
    seen = {att.attestation_sha256()}
    frontier = [att]
    for _ in range(MAX_PRIOR_DEPTH):
        following: list[Attestation] = []
        for current in frontier:
            for lane in current.lanes:
                ref = lane.composedFrom
                if ref is None or ref.attestationSha256 in seen:
                    continue
                seen.add(ref.attestationSha256)
                prior = lookup(ref.rangeSha)
                if prior is None or prior.attestation_sha256() != ref.attestationSha256:
                    missing.append(
                        f"lane '{lane.id}': prior {ref.attestationSha256[:12]} (head {ref.headSha[:12]}) "
                        "is no longer in this host's ledger"
                    )
                    continue
                priors.append(prior)
                following.append(prior)
        if not following:
            break
        frontier = following
    return priors, missing


def write_prior(prior: Attestation, export_dir: Path) -> Path | None:
    """Write ``prior`` into ``export_dir``; None when it is already there. A name holding another attestation keeps
    it, and the prior goes beside as ``<name>-<sha[:12]>.json`` (verify finds priors by digest, not name)."""
    path = export_path(prior, export_dir)
    digest = prior.attestation_sha256()
    for candidate in (path, path.with_name(f"{path.stem}-{digest[:12]}.json")):
        held = _digest_at(candidate)
        if held == digest:
            return None
        if held is None:
            return write_export(prior, candidate)
    return write_export(prior, path.with_name(f"{path.stem}-{digest[:12]}.json"))


def _digest_at(path: Path) -> str | None:
    """The attestationSha256 of the export at ``path``; None when there is none, "" when it is not one."""
    from agentreview.model.digests import attestation_sha256_of

    try:
        raw = json.loads(read_regular_file(path, limit=MAX_EXPORT_BYTES, follow_symlinks=False))
        return attestation_sha256_of(raw) if isinstance(raw, dict) else ""
    except FileNotFoundError:
        return None
    except (UnreadableFileError, ValueError):
        return ""
