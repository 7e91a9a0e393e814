"""AIP-62 verification step 5: resolving ``composedFrom`` priors in the export files, one level deep as
the spec says; ``verify --full-chain`` follows every chain, bounded by :data:`MAX_CHAIN_DEPTH`."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentreview.model.digests import attestation_sha256_of
from agentreview.verify.checks import dirty_check, repo_free_checks
from agentreview.verify.exports import ExportDoc, target_of
from agentreview.verify.result import CheckLine, short

MAX_CHAIN_DEPTH = 64


def _lane_rubric(raw: dict[str, Any], check: str) -> str | None:
    rubrics = raw.get("rubrics")
    for entry in rubrics if isinstance(rubrics, list) else []:
        if isinstance(entry, dict) and entry.get("check") == check:
            value = entry.get("sha256")
            return value if isinstance(value, str) else None
    return None


def _prior_problems(raw: dict[str, Any], lane_id: str, prior: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Why ``prior`` cannot be the base ``raw``'s lane ``lane_id`` was composed from."""
    label = f"lane '{lane_id}': composedFrom prior"
    problems: list[str] = []
    _, free = repo_free_checks(prior)
    problems.extend(f"{label}: {p}" for p in free)
    if prior.get("verdict") != "pass":
        problems.append(f"{label}: verdict is '{prior.get('verdict')}', expected 'pass'")
    _, dirty = dirty_check(prior)
    problems.extend(f"{label}: {p}" for p in dirty)
    prior_target = target_of(prior)
    if ref.get("headSha") != prior_target.get("headSha"):
        problems.append(f"{label}: composedFrom.headSha does not match the prior's target.headSha")
    this_target = target_of(raw)
    for key in ("baseSha", "repoRemote"):
        if prior_target.get(key) != this_target.get(key):
            problems.append(f"{label}: target.{key} differs from the composed attestation's")
    if prior.get("manifestSha") != raw.get("manifestSha"):
        problems.append(f"{label}: manifestSha differs (composition needs the same manifest)")
    prior_lanes = prior.get("lanes")
    passed = any(
        isinstance(lane, dict) and lane.get("id") == lane_id and lane.get("status") == "pass"
        for lane in (prior_lanes if isinstance(prior_lanes, list) else [])
    )
    if not passed:
        problems.append(f"{label}: has no passing lane '{lane_id}'")
    if _lane_rubric(prior, lane_id) != _lane_rubric(raw, lane_id):
        problems.append(f"{label}: rubric digest for '{lane_id}' differs")
    return problems


def composed_from_checks(
    raw: dict[str, Any], docs: Sequence[ExportDoc], *, full_chain: bool = False
) -> tuple[list[CheckLine], list[str]]:
    """Resolve every ``composedFrom`` of ``raw`` in the export docs (with ``full_chain``, to the chain's end): the
    export of that rangeSha and binding whose attestationSha256 (raw canonical JSON) is the pinned one."""
    checks: list[CheckLine] = []
    problems: list[str] = []
    digests: dict[Path, str | None] = {}

    def digest_of(doc: ExportDoc) -> str | None:
        if doc.path not in digests:
            try:
                digests[doc.path] = attestation_sha256_of(doc.raw)
            except ValueError:
                digests[doc.path] = None
        return digests[doc.path]

    def walk(att: dict[str, Any], depth: int, seen: frozenset[Any], where: str) -> None:
        lanes = att.get("lanes")
        for lane in lanes if isinstance(lanes, list) else []:
            ref = lane.get("composedFrom") if isinstance(lane, dict) else None
            if ref is None:
                continue
            lane_id = str(lane.get("id"))
            label = f"{where}lane '{lane_id}' composedFrom"
            if not isinstance(ref, dict):
                problems.append(f"{label}: not an object")
                checks.append(CheckLine(label, False, "an object", short(ref)))
                continue
            if lane.get("kind") != "agent":
                problems.append(f"{label}: only agent lanes compose; a '{lane.get('kind')}' lane always runs in full")
                checks.append(CheckLine(label, False, "an agent lane", f"a {lane.get('kind')} lane"))
                continue
            pinned, range_ref = ref.get("attestationSha256"), ref.get("rangeSha")
            if depth >= MAX_CHAIN_DEPTH:
                problems.append(f"{label}: composition chain deeper than {MAX_CHAIN_DEPTH} attestations")
                continue
            if isinstance(pinned, str) and pinned in seen:
                problems.append(f"{label}: composition chain loops back to attestation {short(pinned)}")
                continue
            candidates = [
                d for d in docs if d.raw.get("rangeSha") == range_ref and d.raw.get("binding") == att.get("binding")
            ]
            prior = next((d for d in candidates if digest_of(d) == pinned), None)
            if prior is None:
                if candidates:
                    msg = (
                        f"{label}: prior for rangeSha {short(range_ref)} is exported but its attestationSha256 "
                        f"does not match the pinned {short(pinned)} (altered after composition?)"
                    )
                else:
                    msg = f"{label}: prior attestation (rangeSha {short(range_ref)}) is not in the export directory"
                problems.append(msg)
                checks.append(CheckLine(label, False, short(pinned), "not found"))
                continue
            prior_problems = _prior_problems(att, lane_id, prior.raw, ref)
            problems.extend(f"{where}{p}" for p in prior_problems)
            checks.append(CheckLine(label, not prior_problems, short(pinned), f"{prior.path.name}"))
            if full_chain:
                walk(prior.raw, depth + 1, seen | {pinned}, f"{where}prior {prior.path.name}: ")

    own = None
    with contextlib.suppress(ValueError):
        own = attestation_sha256_of(raw)
    walk(raw, 0, frozenset({own} if own else set()), "")
    return checks, problems
