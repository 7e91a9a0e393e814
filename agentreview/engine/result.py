"""How a review run ends: ``done`` (an attestation with a verdict), ``failed`` or ``cancelled``.

``RunResult.to_json`` is the ``agentreview run --json`` object; its shape is part of the
CLI's contract (docs/cli.md), so fields are only ever added.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.errors import EXIT_ERROR, EXIT_INCOMPLETE, VERDICT_EXIT

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.host.refs import ResolvedRef
    from agentreview.model.attestation import Attestation


@dataclass
class RunResult:
    """How a run ended: its status and verdict, the attestation and where it was recorded, and the exit code."""

    run_id: str
    status: str  # done | failed | cancelled
    verdict: str | None = None
    cached: bool = False
    joined: bool = False
    attestation: Attestation | None = None
    ledger_path: Path | None = None
    export_path: Path | None = None
    signing_error: str | None = None
    error: str | None = None
    superseded_by: str | None = None
    exit_code: int = EXIT_ERROR
    # a cache hit served from a teammate's signed attestation (team trust): {principal, remote}
    cached_from: dict[str, str] | None = None
    # the base and head names as resolved (each to exactly one full ref or commit); empty when unplanned
    refs: tuple[ResolvedRef, ...] = ()
    # --policy-from: the full ref (or commit) whose manifest, rubrics and packs the run reviewed under
    policy_from: ResolvedRef | None = None
    # the head asked for when it only adds exports: the review (and this result) is of its parent
    export_commit: str | None = None
    # what resolving the manifest ignored (overrides that cannot apply), also shown as progress
    warnings: tuple[str, ...] = ()

    @classmethod
    def done(
        cls,
        att: Attestation,
        ledger_path: Path | None,
        *,
        cached: bool = False,
        joined: bool = False,
        signing_error: str | None = None,
    ) -> RunResult:
        """A run that ends with an attestation (fresh, cached or joined)."""
        return cls(
            run_id=att.runId,
            status="done",
            verdict=att.verdict,
            attestation=att,
            ledger_path=ledger_path,
            exit_code=VERDICT_EXIT[att.verdict],
            cached=cached,
            joined=joined,
            signing_error=signing_error,
        )

    @classmethod
    def failed(cls, run_id: str, error: str, exit_code: int = EXIT_ERROR) -> RunResult:
        """A run that could not happen, or whose prepare step failed: nothing attested."""
        return cls(run_id=run_id, status="failed", error=error, exit_code=exit_code)

    @classmethod
    def cancelled(cls, run_id: str, superseded_by: str | None = None) -> RunResult:
        """Ctrl-C, SIGTERM or a newer run: nothing recorded."""
        return cls(
            run_id=run_id,
            status="cancelled",
            error="superseded by a newer run" if superseded_by else "review cancelled",
            superseded_by=superseded_by,
            exit_code=EXIT_INCOMPLETE,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runId": self.run_id,
            "status": self.status,
            "verdict": self.verdict,
            "cached": self.cached,
            "attestation": self.attestation.to_json_dict() if self.attestation else None,
            "ledgerPath": str(self.ledger_path) if self.ledger_path else None,
            "exportPath": str(self.export_path) if self.export_path else None,
            "signingError": self.signing_error,
            "exitCode": self.exit_code,
        }
        if self.refs:
            data["refs"] = [ref.as_dict() for ref in self.refs]
        if self.policy_from:
            data["policyFrom"] = self.policy_from.as_dict()
        if self.joined:
            data["joined"] = True
        if self.export_commit:
            data["exportCommit"] = self.export_commit
        if self.cached_from:
            data["cachedFrom"] = dict(self.cached_from)
        if self.error:
            data["error"] = self.error
        if self.superseded_by:
            data["supersededBy"] = self.superseded_by
        if self.warnings:
            data["warnings"] = list(self.warnings)
        return data
