"""Export: the attestation file a CI gate reads (AIP-62 §Export, reference-notes 2.14).

The default name is ``<exportDir>/<reviewId>-<binding>-<headSha[:12]>.json``; the
content is the attestation with two-space indent and a trailing newline, key order
as built (not canonical). Ledger host data is never part of an export.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.host.files import atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation


def export_path(att: Attestation, export_dir: Path) -> Path:
    """The default export file for ``att`` inside ``export_dir``.

    The name is built from document fields; one that would not stay a single file
    name inside ``export_dir`` (a separator, NUL, or a leading dot) is refused.
    """
    name = f"{att.reviewId}-{att.binding}-{att.target.headSha[:12]}.json"
    if "/" in name or "\\" in name or "\0" in name or name.startswith("."):
        raise ValueError(f"export file name {name!r} (from reviewId, binding and headSha) is not a plain file name")
    return Path(export_dir) / name


def confined_export_dir(repo_root: Path, export_dir: str | Path) -> Path:
    """``verdict.exportDir`` resolved against ``repo_root``, refused when its real path leaves the
    repository (``..``, an absolute path, or a symlink the reviewed content committed).

    exportDir is authored in the reviewed REVIEW.md: a change must not make a reviewer's
    host write files wherever it likes. Raises ``ValueError`` naming the fix.
    """
    root_real = os.path.realpath(repo_root)
    real = os.path.realpath(os.path.join(root_real, export_dir))
    if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
        raise ValueError(
            f"verdict.exportDir {str(export_dir)!r} resolves to {real}, outside the repository {root_real}"
        )
    return Path(real)


def write_export(att: Attestation, path: Path) -> Path:
    """Write the export atomically (creating directories); readable by the repository's users."""
    return atomic_write_text(Path(path), att.export_text(), mode=0o644)
