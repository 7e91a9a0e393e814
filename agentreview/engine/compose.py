"""Composition: an agent lane reuses a prior passing attestation and reviews only the delta.

Candidates come from this host's ledger, then (under team trust only) from teammates' verified attestations;
the first that satisfies the spec's six rules is used. Command lanes never compose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agentreview.model.contracts.lanes import DeltaRange


def find_prior(
    candidates: Iterable[Any],
    *,
    base_sha: str,
    head_sha: str,
    check_id: str,
    rubric_sha256: str,
    pack_digest: dict[str, Any] | None,
    is_ancestor: Callable[[str, str], bool],
) -> DeltaRange | None:
    """The delta range for ``check_id`` from the first qualifying prior, or None; ``pack_digest`` is the
    current digest record of the check's pack (None for a local check)."""
    for prior in candidates:
        # 1. a pass that is not dirty
        if prior.verdict != "pass" or prior.dirty:
            continue
        # 2. same base
        if prior.target.baseSha != base_sha:
            continue
        # 3. the same lane passed
        if not any(lane.id == check_id and lane.status == "pass" for lane in prior.lanes):
            continue
        # 4. the same rubric bytes
        if not any(r.check == check_id and r.sha256 == rubric_sha256 for r in prior.rubrics):
            continue
        # 5. the same pack content for a pack check
        if pack_digest is not None and not any(
            p.id == pack_digest["id"] and p.alg == pack_digest["alg"] and p.sha256 == pack_digest["sha256"]
            for p in (prior.packs or [])
        ):
            continue
        # 6. the prior head is a strict ancestor of the new head
        prior_head = prior.target.headSha
        if prior_head == head_sha or not is_ancestor(prior_head, head_sha):
            continue
        return DeltaRange(
            prior_head_sha=prior_head,
            prior_range_sha=prior.rangeSha,
            prior_attestation_sha256=prior.attestation_sha256(),
        )
    return None
