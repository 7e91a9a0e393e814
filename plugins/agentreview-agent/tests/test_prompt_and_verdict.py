"""The pointer-style prompt (reference-notes 2.20) and verdict-file parsing (2.21)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agentreview_agent.prompt import LanePrompt, time_budget_minutes
from agentreview_agent.verdict import MAX_VERDICT_BYTES, VerdictError, parse_verdict_text, read_verdict

BASE, HEAD, PRIOR = "a" * 40, "b" * 40, "c" * 40


@pytest.mark.parametrize(
    ("timeout_ms", "minutes"),
    [(900000, 12), (600000, 8), (1200000, 16), (60000, 1), (1000, 1), (187500, 3), (112500, 2)],
)
def test_time_budget_rounds_halves_up(timeout_ms: int, minutes: int) -> None:
    assert time_budget_minutes(timeout_ms) == minutes


def _prompt(**kw) -> LanePrompt:
    fields = dict(
        check_id="core/sec",
        review_id="rev-1",
        base_sha=BASE,
        head_sha=HEAD,
        rubric_path=Path("/r/sec.md"),
        verdict_path=Path("/l/runs/x/core__sec.verdict.json"),
        timeout_ms=900000,
        block_on="medium",
    )
    fields.update(kw)
    return LanePrompt(**fields)


def test_file_prompt_is_the_reference_text() -> None:
    text = _prompt().render("file")
    expected = "\n".join(
        [
            f"You are review lane 'core/sec' of review 'rev-1'. Review the committed git range {BASE}..{HEAD} in this "
            "repository.",
            "",
            "Your rubric — what to look for and how to grade it — is at /r/sec.md. Read it first; it overrides any "
            "general reviewing habits.",
            "",
            "How to work:",
            f"- Scope is the committed range only: `git diff {BASE}..{HEAD}`, `git log {BASE}..{HEAD}`, and whatever "
            "files those touch. Ignore uncommitted or untracked changes in the working tree.",
            "- Read whole files, callers, and neighbors — never judge from a hunk alone. "
            "Verify every claim against the file on disk.",
            "- Run the touched packages' tests or type-checks if the rubric asks for it or a finding depends on it.",
            "- READ-ONLY: do not edit, commit, push, or switch branches. Your only permitted write is the verdict file "
            "below.",
            "- Time budget: about 12 minute(s). Depth on the riskiest changes beats shallow coverage of all of them.",
            "",
            "When done, write EXACTLY ONE file — /l/runs/x/core__sec.verdict.json — containing ONLY this JSON (no "
            "markdown fence):",
            '{ "decision": "approve" | "request_changes", "summary": "<one line>", "findings": [{ "severity": "high" | '
            '"medium" | "low", "title": "<one line>", "detail": "<why it matters>", "file": "<repo-relative path>", '
            '"line": <number> }] }',
            "",
            'Severity semantics: this lane blocks on any "medium"-or-higher finding. Reserve "high" for real '
            "correctness or security regressions INTRODUCED by this range; pre-existing issues and nits are "
            '"medium"/"low". An empty "findings" array means you found nothing.',
        ]
    )
    assert text == expected


def test_delta_prompt_narrows_the_range_and_says_so() -> None:
    text = _prompt(base_sha=PRIOR, prior_head_sha=PRIOR).render("file")
    lines = text.split("\n")
    assert f"range {PRIOR}..{HEAD} in" in lines[0]
    assert lines[1] == ""
    assert lines[2] == (
        f"This is a DELTA re-review: everything up to and including {PRIOR} already passed this lane in an earlier "
        f"review. Review ONLY what changed in {PRIOR}..{HEAD} — you do not need to re-review commits before {PRIOR}."
    )
    assert BASE not in text


def test_answer_prompt_asks_for_a_final_answer_not_a_file() -> None:
    text = _prompt().render("answer")
    assert "write EXACTLY ONE file" not in text
    assert "You write no file at all" in text and "final answer ONLY this JSON" in text
    assert "READ-ONLY: do not edit, commit, push, or switch branches." in text
    assert 'blocks on any "medium"-or-higher finding' in text


# ----------------------------------------------------------------------------- verdict


def test_verdict_fence_tolerated_decision_ignored_unknown_keys_dropped() -> None:
    text = (
        '```json\n{"decision": "request_changes", "summary": "s", "extra": 1, "findings": ['
        '{"severity": "low", "title": "t", "file": "a.py", "line": 3, "confidence": 0.2}]}\n```\n'
    )
    verdict = parse_verdict_text(text)
    assert verdict.summary == "s"
    (finding,) = verdict.findings
    assert (finding.severity, finding.title, finding.detail, finding.file, finding.line) == ("low", "t", "", "a.py", 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "verdict file is not valid JSON — "),
        ("[]", "verdict file does not match the lane contract — (root): expected an object"),
        ('{"summary": "looks fine"}', "findings: required"),
        ('{"findings": {}}', "findings: must be an array"),
        ('{"findings": [{"severity": "critical", "title": "x"}]}', "findings.0.severity: must be one of"),
        ('{"findings": [{"severity": "high", "title": ""}]}', "findings.0.title: must be a non-empty string"),
        ('{"findings": [{"severity": "high", "title": "x", "line": 0}]}', "findings.0.line: must be a positive"),
        ('{"findings": [{"severity": "high", "title": "x", "line": true}]}', "findings.0.line: must be a positive"),
        ('{"findings": [{"severity": "high", "title": "x", "file": null}]}', "findings.0.file: must be a string"),
        ('{"decision": "lgtm", "findings": []}', "decision: must be 'approve' or 'request_changes'"),
        ('{"findings": [], "findings": []}', "duplicate key 'findings'"),
        ('{"findings": [{"severity": "high", "title": "x", "line": NaN}]}', "not valid JSON"),
    ],
)
def test_bad_verdicts_are_errors_never_passes(text: str, message: str) -> None:
    with pytest.raises(VerdictError, match=None) as info:
        parse_verdict_text(text)
    assert message in str(info.value)


def test_a_refused_verdict_shows_the_findings_it_holds_bounded_and_redacted() -> None:
    secret = "token=sk-abcdefghijklmnopqrstuvwxyz0123456789"
    rce = {"severity": "critical", "title": "RCE in app.py", "detail": f"eval of input; {secret}", "file": "app.py",
           "line": 3}  # fmt: skip
    findings = [rce] + [{"severity": "critical", "title": f"t{i}"} for i in range(9)]
    with pytest.raises(VerdictError) as info:
        parse_verdict_text(json.dumps({"findings": findings}))
    message = str(info.value)
    assert message.startswith("verdict file does not match the lane contract — findings.0.severity: must be one of")
    assert "excerpt: findings.0: [critical] RCE in app.py at app.py:3 — eval of input; token=[redacted]" in message
    assert "sk-abcdef" not in message
    assert "findings.4: [critical] t3" in message and "t4" not in message  # at most five findings quoted
    with pytest.raises(VerdictError) as info:  # not JSON, but finding-shaped lines: those lines are quoted
        parse_verdict_text('{"findings": [ HIGH src/db.py:12 SQL injection\n')
    assert str(info.value).endswith('excerpt: {"findings": [ HIGH src/db.py:12 SQL injection')
    with pytest.raises(VerdictError) as info:  # nothing finding-shaped: nothing quoted
        parse_verdict_text('{"summary": "fine"}')
    assert "excerpt" not in str(info.value)


def test_verdict_file_missing_empty_oversized(tmp_path: Path) -> None:
    path = tmp_path / "v.verdict.json"
    with pytest.raises(VerdictError, match="reviewer ended its turn without writing"):
        read_verdict(path)
    path.write_text("  \n")
    with pytest.raises(VerdictError, match="is empty"):
        read_verdict(path)
    path.write_text(json.dumps({"findings": [], "summary": "x" * MAX_VERDICT_BYTES}))
    with pytest.raises(VerdictError, match="is larger than 1048576 bytes"):
        read_verdict(path)


def test_verdict_file_that_is_a_fifo_or_symlink_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.verdict.json"
    os.mkfifo(fifo)
    with pytest.raises(VerdictError, match="not a regular file"):
        read_verdict(fifo)
    target = tmp_path / "elsewhere.json"
    target.write_text('{"findings": []}')
    link = tmp_path / "link.verdict.json"
    link.symlink_to(target)
    with pytest.raises(VerdictError, match="cannot be read"):
        read_verdict(link)
