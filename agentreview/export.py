"""Export: the attestation file a CI gate reads (AIP-62 §Export, reference-notes 2.14).

The default name is ``<exportDir>/<reviewId>-<binding>-<headSha[:12]>.json``; the
content is the attestation with two-space indent and a trailing newline, key order
as built (not canonical). Ledger host data is never part of an export.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.ledger import atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.documents.attestation import Attestation


def export_path(att: Attestation, export_dir: Path) -> Path:
    """The default export file for ``att`` inside ``export_dir``.

    The name is built from document fields; one that would not stay a single file
    name inside ``export_dir`` (a separator, NUL, or a leading dot) is refused.
    """
    name = f"{att.reviewId}-{att.binding}-{att.target.headSha[:12]}.json"
    if "/" in name or "\\" in name or "\0" in name or name.startswith("."):
        raise ValueError(f"export file name {name!r} (from reviewId, binding and headSha) is not a plain file name")
    return Path(export_dir) / name


def write_export(att: Attestation, path: Path) -> Path:
    """Write the export atomically (creating directories); readable by the repository's users."""
    return atomic_write_text(Path(path), att.export_text(), mode=0o644)
