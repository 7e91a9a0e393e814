"""AIP-62 verification step 4: the attestation's content against the expectation.

Problem strings and their order are reference-notes 2.11's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentreview.model.digests import range_sha
from agentreview.model.fold import fold_verdict
from agentreview.verify.exports import target_of
from agentreview.verify.result import EXPECTED_VERDICT_CHECK, CheckLine, short

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.verify.expectation import Expectation

SCHEMA = "agentproto.review.attestation/v1"
MAX_SHAPE_PROBLEMS = 8


def shape_problems(raw: dict[str, Any]) -> list[str]:
    """Shape errors of an attestation of the known schema, one readable line each."""
    from agentreview.model.attestation import Attestation, AttestationShapeError

    try:
        Attestation.read(raw)
    except AttestationShapeError as exc:
        lines = [f"attestation member {line}" for line in exc.lines()]
        if len(lines) > MAX_SHAPE_PROBLEMS:
            extra = len(lines) - MAX_SHAPE_PROBLEMS
            lines = [*lines[:MAX_SHAPE_PROBLEMS], f"attestation shape: and {extra} more problem(s)"]
        return lines
    return []


def _refold(raw: dict[str, Any]) -> str:
    lanes = raw.get("lanes")
    # A status of the wrong type only compares unequal, which the fold reads as not passing.
    pairs: Iterator[tuple[bool, Any]] = (
        (lane.get("blocking") is True, lane.get("status"))
        for lane in (lanes if isinstance(lanes, list) else [])
        if isinstance(lane, dict)
    )
    return fold_verdict(pairs)


def repo_free_checks(raw: dict[str, Any]) -> tuple[list[CheckLine], list[str]]:
    """The checks that need no repository: schema (and shape), rangeSha, the re-fold, dirty; also all
    a ``composedFrom`` prior must pass (besides its verdict)."""
    checks: list[CheckLine] = []
    problems: list[str] = []
    schema = raw.get("schema")
    ok = schema == SCHEMA
    checks.append(CheckLine("schema", ok, SCHEMA, str(schema)))
    if not ok:
        problems.append(f"unknown schema '{schema}'")
    else:
        # Only a document of the known schema has a known shape.
        problems.extend(shape_problems(raw))

    target = target_of(raw)
    base, head = target.get("baseSha"), target.get("headSha")
    expected_range = range_sha(base, head) if isinstance(base, str) and isinstance(head, str) else "(no target)"
    actual_range = raw.get("rangeSha")
    ok = actual_range == expected_range
    checks.append(CheckLine("rangeSha", ok, short(expected_range), short(actual_range)))
    if not ok:
        problems.append("rangeSha does not match target.baseSha..target.headSha")

    refold = _refold(raw)
    verdict = raw.get("verdict")
    ok = verdict == refold
    checks.append(CheckLine("verdict follows from lanes", ok, refold, str(verdict)))
    if not ok:
        problems.append(f"verdict '{verdict}' does not follow from its lanes (expected '{refold}')")
    return checks, problems


def dirty_check(raw: dict[str, Any]) -> tuple[CheckLine, list[str]]:
    """An attestation of a dirty working tree attests to no commit."""
    dirty = raw.get("dirty")
    line = CheckLine("clean working tree", not dirty, "not dirty", "dirty" if dirty else "not dirty")
    return line, (["attestation was produced from a dirty working tree"] if dirty else [])


def content_checks(raw: dict[str, Any], expect: Expectation) -> tuple[list[CheckLine], list[str]]:
    """AIP-62 verification step 4 / reference-notes 2.11, problems in the reference's order."""
    checks, problems = repo_free_checks(raw)

    actual_manifest = raw.get("manifestSha")
    ok = actual_manifest == expect.manifest_sha
    checks.append(CheckLine("manifestSha", ok, short(expect.manifest_sha), short(actual_manifest)))
    if not ok:
        problems.append("manifestSha mismatch")

    target = target_of(raw)
    for key, want, label in (
        ("baseSha", expect.base_sha, "target.baseSha"),
        ("headSha", expect.head_sha, "target.headSha"),
        ("repoRemote", expect.repo_remote, "target.repoRemote"),
    ):
        got = target.get(key)
        ok = got == want
        checks.append(CheckLine(label, ok, want, str(got)))
        if not ok:
            problems.append(f"{key} mismatch")

    if expect.binding is not None:
        got = raw.get("binding")
        ok = got == expect.binding
        checks.append(CheckLine("binding", ok, expect.binding, str(got)))
        if not ok:
            problems.append("binding mismatch")

    verdict = raw.get("verdict")
    if expect.verdict != "any":
        ok = verdict == expect.verdict
        checks.append(CheckLine(EXPECTED_VERDICT_CHECK, ok, expect.verdict, str(verdict)))
        if not ok:
            problems.append(f"verdict is '{verdict}', expected '{expect.verdict}'")

    line, dirty_problems = dirty_check(raw)
    checks.append(line)
    problems.extend(dirty_problems)
    return checks, problems


def lanes_match_binding(raw: dict[str, Any], parsed: ParsedReview) -> tuple[CheckLine | None, list[str]]:
    """One lane per check of the attested binding: a conformant host never drops or adds one.
    Only meaningful once manifestSha matched (the parsed manifest is the one attested)."""
    binding = raw.get("binding")
    lanes = raw.get("lanes")
    if not isinstance(binding, str) or not isinstance(lanes, list):
        return None, []
    declared = parsed.bindings.get(binding)
    if declared is None:
        names = ", ".join(sorted(parsed.bindings)) or "(none)"
        line = CheckLine("binding declared", False, names, binding)
        return line, [f"binding '{binding}' is not declared in the manifest (declared: {names})"]
    want = sorted(declared.checks)
    got = sorted(str(lane.get("id")) for lane in lanes if isinstance(lane, dict))
    ok = want == got
    line = CheckLine(f"lanes of binding '{binding}'", ok, ", ".join(want), ", ".join(got))
    if ok:
        return line, []
    return line, [f"lanes [{', '.join(got)}] do not match the checks of binding '{binding}' [{', '.join(want)}]"]
