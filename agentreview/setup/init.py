"""The order of ``agentreview init`` and what it reports: written, skipped, next steps.

The CLI hands in what needs the plugin registry (providers, the allowed_signers line); this module decides and writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.host import git as repo
from agentreview.model.record import record
from agentreview.setup.choose import choose_checks
from agentreview.setup.detect import DetectedCheck, detect_checks, read_text
from agentreview.setup.hooks import install_pre_push
from agentreview.setup.hostprobe import HostProbe
from agentreview.setup.manifest import (
    FALLBACK_PRESET,
    RUBRIC,
    RUBRIC_PATH,
    default_base,
    pick_preset,
    render_manifest,
    review_id,
)
from agentreview.setup.signers import ALLOWED_SIGNERS, UNTRUSTED, write_allowed_signers
from agentreview.setup.workflow import DEFAULT_ACTION_REF, write_workflow
from agentreview.setup.writer import Outcome, place

__all__ = ["InitOptions", "InitReport", "init_repository"]


@record
class InitOptions:
    """What ``agentreview init`` was asked for: the checkout, the CI and hook to set up, the reviewer."""

    root: Path
    ci: str | None = None
    hook: str = "pre-push"
    reviewer: str | None = None
    force: bool = False
    action_ref: str = DEFAULT_ACTION_REF  # the project's Action, OWNER/REPO@COMMIT (validated by the CLI)


@dataclass
class InitReport:
    """What ``agentreview init`` did: each file written or skipped and why, the checks it found, warnings."""

    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checks: list[DetectedCheck] = field(default_factory=list)
    preset: str | None = None
    base: str = ""
    adopted: bool = False  # REVIEW.md is committed already: this is a teammate's first init, not the adoption

    def as_json(self) -> dict[str, Any]:
        return {
            "written": [o.path for o in self.outcomes if o.status == "written"],
            "skipped": [o.path for o in self.outcomes if o.status != "written"],
            "reasons": {o.path: o.reason for o in self.outcomes if o.reason},
            "warnings": self.warnings,
            "checks": [{"id": c.id, "run": c.run, "why": c.reason} for c in self.checks],
            "preset": self.preset,
            "base": self.base,
        }

    def next_steps(self) -> list[str]:
        """What to do now: adopt (commit what was written, merge it), or, in a repository that has adopted
        agentreview already (a teammate's first ``init``), have this host's key trusted, then review and push."""
        untrusted = any(o.path == ALLOWED_SIGNERS and o.reason == UNTRUSTED for o in self.outcomes)
        steps = ["agentreview check    # what each binding runs"]
        if not self.adopted:
            paths = ["REVIEW.md", "rubrics", ".agentproto"]
            paths += [o.path for o in self.outcomes if o.path.startswith(".github/")]
            steps.append(f"git add {' '.join(paths)} && git commit -m 'review: adopt agentreview'")
            steps.append("  and merge it first: the gate reads REVIEW.md and allowed_signers from the base branch")
        if untrusted:
            steps.append(f"agentreview key | tail -1 >> {ALLOWED_SIGNERS}   # the gate does not trust this key yet")
        if untrusted and self.adopted:
            steps.append("  on a branch: a teammate whose key it trusts attests the pull request (docs/sharing.md, "
                         "adding a new teammate's key)")  # fmt: skip
        steps.append("on a branch: agentreview run --publish   # the signed review as a git note")
        steps.append("  (a fork, which cannot push notes: --export && git add .reviews && git commit)")
        steps.append("git push             # the pre-push hook reviews what you push; the gate verifies the review")
        return steps


NO_REVIEWER = (
    "no reviewer CLI is usable here, so REVIEW.md has no agent check: set one up (`agentreview presets` "
    "lists them; e.g. npm install -g @anthropic-ai/claude-code, then sign in with `claude`), then "
    "`agentreview init --force --reviewer PRESET`"
)


def init_repository(
    opts: InitOptions,
    *,
    providers: Mapping[str, Any],
    signers_line: str | None,
    signer_error: str | None = None,
    presets: Mapping[str, Any] | None = None,
    probe: HostProbe | None = None,
) -> InitReport:
    """Write every file ``init`` owns under the never-overwrite rule, in a fixed order."""
    root = opts.root
    report = InitReport()
    chosen = choose_checks(root, detect_checks(root), probe or HostProbe(root), read_text)
    report.checks = chosen.checks
    report.warnings += chosen.warnings
    if opts.reviewer:
        report.preset = opts.reviewer
    else:
        report.preset = pick_preset(providers, presets)
        if report.preset is None and report.checks:
            report.warnings.append(NO_REVIEWER)
        elif report.preset is None:
            report.preset = FALLBACK_PRESET  # a review needs a blocking check; this one is the one to set up
            report.warnings.append(
                f"no command check runs here and no reviewer CLI is usable: the agent check names '{FALLBACK_PRESET}', "
                "and every review is incomplete until it is set up (`agentreview presets`; "
                "npm install -g @anthropic-ai/claude-code, then sign in with `claude`)"
            )
    report.base, warning = default_base(root)
    if warning:
        report.warnings.append(warning)
    text = render_manifest(
        rid=review_id(root),
        name=root.name or "repository",
        base=report.base,
        checks=report.checks,
        preset=report.preset,
    )
    report.adopted = repo.in_head(root, "REVIEW.md")
    report.outcomes.append(place(root / "REVIEW.md", text.encode(), root=root, force=opts.force))
    report.outcomes.append(place(root / RUBRIC_PATH, RUBRIC.encode(), root=root, force=opts.force))
    if signers_line is not None:
        report.outcomes.append(write_allowed_signers(root, signers_line, force=opts.force))
    else:
        report.outcomes.append(Outcome(".agentproto/allowed_signers", "skipped", f"no signing key: {signer_error}"))
    if opts.hook == "pre-push":
        report.outcomes.append(install_pre_push(root, force=opts.force))
    if opts.ci == "github":
        report.outcomes.append(write_workflow(root, force=opts.force, action_ref=opts.action_ref))
    return report
