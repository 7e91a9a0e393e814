"""AIP-62 verification step 2: what the attestation must say about this checkout.

The range comes from git (``--base``, else the merge-base of the manifest's
``target.base`` and the head), each name resolved to exactly one full ref or commit
(:mod:`agentreview.host.refs`); the manifest digest and remote from the checkout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.host.refs import RangeRefs


@dataclass(frozen=True)
class Expectation:
    """What the attestation must say about this checkout."""

    manifest_sha: str
    base_sha: str
    head_sha: str
    repo_remote: str
    binding: str | None = None
    verdict: str = "pass"


def resolve_expectation(root: Path, manifest_base: str, base: str | None, head_ref: str) -> RangeRefs:
    """The range: ``head_ref`` as a commit, and ``base`` or else ``merge-base(manifest_base, head)``,
    every name resolved exactly (an ambiguous one is refused, never guessed). Raises ``GitError``."""
    from agentreview.host.refs import head_ref as resolve_head
    from agentreview.host.refs import resolve_range

    return resolve_range(root, resolve_head(root, head_ref), base, manifest_base)


def resolve_expectation_shas(root: Path, manifest_base: str, base: str | None, head_ref: str) -> tuple[str, str]:
    """``(base_sha, head_sha)`` of :func:`resolve_expectation`."""
    found = resolve_expectation(root, manifest_base, base, head_ref)
    return found.base_sha, found.head.commit
