"""What a verification is asked (:class:`VerifyOptions`) and answers (:class:`VerifyResult`), apart from the
steps so each step module can use :class:`CheckLine` and :class:`VerifyStop` without importing the others."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.errors import EXIT_OK
from agentreview.model.record import record

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.host.refs import ResolvedRef
    from agentreview.plugins.registry import Registry

VERDICT_CHOICES = ("pass", "block", "incomplete", "any")
# The step-4 check of the verdict the caller expects (--verdict): the one check an attestation may
# fail and still be an authentic claim (a signed, valid block is a verified block).
EXPECTED_VERDICT_CHECK = "verdict"


@record
class VerifyOptions:
    """What the caller asked for. Relative paths are resolved against ``cwd``."""

    cwd: Path = field(default_factory=Path.cwd)
    path: Path | None = None  # an attestation .json file or a directory of exports
    manifest: Path | None = None  # default: <repo root>/REVIEW.md
    base: str | None = None
    head: str | None = None
    binding: str | None = None
    ci_binding: bool = False  # require the policy's binding meant for CI (expectation.ci_binding)
    verdict: str = "pass"  # pass | block | incomplete | any
    if_exported: bool = False
    allowed_signers: Path | None = None
    policy_from: str | None = None  # read the manifest and allowed_signers from this commit, not the checkout
    require_signed: bool = False
    full_chain: bool = False  # follow composedFrom to the end of the chain, not one level (spec step 5)
    registry: Registry | None = None  # default: the installed plugins
    home: Path | None = None  # default: AGENTREVIEW_HOME (the git pack cache lives there)
    notes: bool = False  # find the attestation in refs/notes/agentreview of the head, not in exports


@record
class CheckLine:
    """One check performed: expected and actual. ``unverified``: it could not be made here (packs not
    resolved or not fetched); never shown as passed, not a failure either, a note says why."""

    name: str
    ok: bool
    expected: str
    actual: str
    unverified: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.name, "ok": self.ok, "expected": self.expected, "actual": self.actual}
        if self.unverified:
            out["unverified"] = True
        return out


@dataclass
class VerifyResult:
    """The outcome. ``exit_code`` is the CLI's: 0 verified, 1 invalid, 3 could not run,
    4 not found, 5 not exported, 6 signature, 64 usage."""

    exit_code: int
    reason: str  # verified | invalid | signature | not_found | not_exported | error | usage
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: list[CheckLine] = field(default_factory=list)
    path: Path | None = None
    attestation: dict[str, Any] | None = None
    principal: str | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    error: str | None = None  # the one-line message for exit 3 and 64
    refs: list[ResolvedRef] = field(default_factory=list)  # every name the gate resolved, as resolved
    # --policy-from: set when the change edits the review policy and was verified as reviewed under REF's
    policy_change: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def verdict(self) -> str | None:
        """The attestation's own claim, verified or not."""
        value = (self.attestation or {}).get("verdict")
        return value if isinstance(value, str) else None

    @property
    def attested_verdict(self) -> str | None:
        """The verdict of an attestation that verified: its signature checked against a trusted
        allowed_signers (``principal``) and every problem found, if any, the expected verdict's. None
        otherwise: an unsigned, forged or mismatched export's claim is never an answer."""
        if self.principal is None or self.reason not in ("verified", "invalid"):
            return None
        missed = [c for c in self.checks if c.name == EXPECTED_VERDICT_CHECK and not c.ok]
        others = [c for c in self.checks if c.name != EXPECTED_VERDICT_CHECK and not c.ok and not c.unverified]
        if others or len(self.problems) != len(missed):
            return None
        return self.verdict if self.verdict in ("pass", "block", "incomplete") else None


@dataclass
class StepCheck:
    """What one verification step found: its check lines, its problems, and notes."""

    checks: list[CheckLine] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class VerifyStop(Exception):
    """Ends verification early with a distinct outcome (could not run, usage, not found, or a
    named file that is not an attestation: then ``path`` is that file)."""

    def __init__(self, exit_code: int, reason: str, message: str, *, path: Path | None = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.reason = reason
        self.path = path


def short(value: Any, width: int = 16) -> str:
    """A value as it appears in a check line: strings as they are, others as JSON, cut at ``width``."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[:width] + "…"
