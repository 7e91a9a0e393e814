"""The pointer-style reviewer prompt (reference-notes 2.20): it names the range and rubric, never inlines a
diff (nothing is truncated), and names only what the reviewer can do and how it answers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Tools = Literal["shell", "sandbox", "read"]

VERDICT_SHAPE = (
    '{ "decision": "approve" | "request_changes", "summary": "<one line>", "findings": '
    '[{ "severity": "high" | "medium" | "low", "title": "<one line>", "detail": "<why it matters>", '
    '"file": "<repo-relative path>", "line": <number> }] }'
)


def time_budget_minutes(timeout_ms: int) -> int:
    """``max(1, round(timeoutMs/60000*0.8))`` with halves rounded up (900000 → 12)."""
    return max(1, math.floor(timeout_ms / 60000 * 0.8 + 0.5))


@dataclass(frozen=True)
class LanePrompt:
    check_id: str
    review_id: str
    base_sha: str  # the reviewed base: the prior head for a delta lane
    head_sha: str
    rubric_path: Path
    verdict_path: Path
    timeout_ms: int
    block_on: str
    prior_head_sha: str | None = None

    @property
    def range(self) -> str:
        return f"{self.base_sha}..{self.head_sha}"

    def render(self, form: Literal["file", "answer"] = "file", tools: Tools = "shell") -> str:
        rng = self.range
        lines = [
            f"You are review lane '{self.check_id}' of review '{self.review_id}'. "
            f"Review the committed git range {rng} in this repository."
        ]
        if self.prior_head_sha:
            prior = self.prior_head_sha
            lines += [
                "",
                f"This is a DELTA re-review: everything up to and including {prior} already passed this lane "
                f"in an earlier review. Review ONLY what changed in {rng} — you do not need to re-review "
                f"commits before {prior}.",
            ]
        only_write = (
            "Your only permitted write is the verdict file below."
            if form == "file"
            else "You write no file at all: your final answer is the verdict."
        )
        if tools == "read":
            scope = (
                f"- Scope is the committed range {rng} only: the host wrote its `git diff` and `git log` to the "
                "files named at the end of this prompt; read those, then whatever files they touch. Ignore "
                "uncommitted or untracked changes in the working tree."
            )
        else:
            scope = (
                f"- Scope is the committed range only: `git diff {rng}`, `git log {rng}`, and whatever files those "
                "touch. Ignore uncommitted or untracked changes in the working tree."
            )
        can_run = {
            "shell": "- Run the touched packages' tests or type-checks if the rubric asks for it or a finding "
            "depends on it.",
            "sandbox": "- You may run read-only commands (git, grep, cat, ls) in your sandbox. It refuses every "
            "write, and an attempt to write — tests or builds that write files included — ends the review, so "
            "run no tests.",
            "read": "- You have read tools only, no shell: run no commands and no tests; judge from the code on disk.",
        }[tools]
        lines += [
            "",
            f"Your rubric — what to look for and how to grade it — is at {self.rubric_path}. "
            "Read it first; it overrides any general reviewing habits.",
            "",
            "How to work:",
            scope,
            "- Read whole files, callers, and neighbors — never judge from a hunk alone. "
            "Verify every claim against the file on disk.",
            can_run,
            f"- READ-ONLY: do not edit, commit, push, or switch branches. {only_write}",
            f"- Time budget: about {time_budget_minutes(self.timeout_ms)} minute(s). "
            "Depth on the riskiest changes beats shallow coverage of all of them.",
            "",
        ]
        if form == "file":
            lines.append(
                f"When done, write EXACTLY ONE file — {self.verdict_path} — containing ONLY this JSON "
                "(no markdown fence):"
            )
        else:
            lines.append(
                "When done, give as your final answer ONLY this JSON (no markdown fence); the host records it "
                f"as {self.verdict_path}:"
            )
        lines += [
            VERDICT_SHAPE,
            "",
            f'Severity semantics: this lane blocks on any "{self.block_on}"-or-higher finding. Reserve "high" '
            "for real correctness or security regressions INTRODUCED by this range; pre-existing issues and nits "
            'are "medium"/"low". An empty "findings" array means you found nothing.',
        ]
        return "\n".join(lines)
