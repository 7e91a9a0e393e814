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


def _check(checks: list[CheckLine], problems: list[str], line: CheckLine, problem: str) -> None:
    """Add ``line``, and ``problem`` when its check failed."""
    checks.append(line)
    if not line.ok:
        problems.append(problem)


def repo_free_checks(raw: dict[str, Any]) -> tuple[list[CheckLine], list[str]]:
    """The checks that need no repository: schema (and shape), rangeSha, the re-fold, dirty; also all
    a ``composedFrom`` prior must pass (besides its verdict)."""
    checks: list[CheckLine] = []
    problems: list[str] = []
    schema = raw.get("schema")
    _check(checks, problems, CheckLine("schema", schema == SCHEMA, SCHEMA, str(schema)), f"unknown schema '{schema}'")
    if schema == SCHEMA:  # only a document of the known schema has a known shape
        problems.extend(shape_problems(raw))

    target = target_of(raw)
    base, head = target.get("baseSha"), target.get("headSha")
    expected_range = range_sha(base, head) if isinstance(base, str) and isinstance(head, str) else "(no target)"
    actual_range = raw.get("rangeSha")
    line = CheckLine("rangeSha", actual_range == expected_range, short(expected_range), short(actual_range))
    _check(checks, problems, line, "rangeSha does not match target.baseSha..target.headSha")

    refold = _refold(raw)
    verdict = raw.get("verdict")
    line = CheckLine("verdict follows from lanes", verdict == refold, refold, str(verdict))
    _check(checks, problems, line, f"verdict '{verdict}' does not follow from its lanes (expected '{refold}')")
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
    line = CheckLine("manifestSha", ok, short(expect.manifest_sha), short(actual_manifest))
    _check(checks, problems, line, "manifestSha mismatch")

    target = target_of(raw)
    for key, want, label in (
        ("baseSha", expect.base_sha, "target.baseSha"),
        ("headSha", expect.head_sha, "target.headSha"),
        ("repoRemote", expect.repo_remote, "target.repoRemote"),
    ):
        got = target.get(key)
        _check(checks, problems, CheckLine(label, got == want, want, str(got)), f"{key} mismatch")

    if expect.binding is not None:
        got = raw.get("binding")
        line = CheckLine("binding", got == expect.binding, expect.binding, str(got))
        _check(checks, problems, line, "binding mismatch")

    verdict = raw.get("verdict")
    if expect.verdict != "any":
        line = CheckLine(EXPECTED_VERDICT_CHECK, verdict == expect.verdict, expect.verdict, str(verdict))
        _check(checks, problems, line, f"verdict is '{verdict}', expected '{expect.verdict}'")

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
