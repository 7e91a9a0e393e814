"""AIP-62 verification step 2: what the attestation must say about this checkout.

The range comes from git (``--base``, else the merge-base of the manifest's
``target.base`` and the head); the manifest digest and remote from the checkout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Expectation:
    """What the attestation must say about this checkout."""

    manifest_sha: str
    base_sha: str
    head_sha: str
    repo_remote: str
    binding: str | None = None
    verdict: str = "pass"


def resolve_expectation_shas(root: Path, manifest_base: str, base: str | None, head_ref: str) -> tuple[str, str]:
    """``(base_sha, head_sha)``: ``head_ref`` as a commit, and ``base`` or else
    ``merge-base(manifest_base, head)``. Raises ``GitError``."""
    from agentreview.host.git import merge_base, rev_parse_commit

    head_sha = rev_parse_commit(root, head_ref)
    base_sha = rev_parse_commit(root, base) if base else merge_base(root, manifest_base, head_sha)
    return base_sha, head_sha
