"""Step 9's end and step 10: fold the lanes into an attestation, sign it, record it, export it.

Signing is best effort (an unsigned attestation carries ``signingError``). Every attestation a run ends with,
fresh, cached or joined, leaves through :func:`export_result`, so ``--export`` behaves the same for all three.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentreview import __version__
from agentreview.engine import interrupt
from agentreview.engine.errors import Cancelled
from agentreview.engine.plan import RunPlan, check_export_dir
from agentreview.engine.result import RunResult
from agentreview.host import git
from agentreview.host.files import FileWriteError
from agentreview.host.home import hostname
from agentreview.model.attestation import Attestation, LaneResult
from agentreview.model.digests import attestation_sha256_of
from agentreview.model.errors import AgentreviewError
from agentreview.report.progress import Reporter

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.engine.freeze import FrozenRange
    from agentreview.share.trust import TrustedForeign
    from agentreview.store.ledger import Ledger, LedgerKey


def fold(plan: RunPlan, frozen: FrozenRange, lanes: Sequence[LaneResult]) -> Attestation:
    """The unsigned attestation; its verdict and rangeSha are computed from the lanes and range."""
    requester: dict[str, Any] = {}
    if plan.host.session_id:
        requester["sessionId"] = plan.host.session_id
    author = git.commit_author(plan.repo_root, frozen.head_sha)
    if author:
        requester["gitAuthor"] = {"name": author[0], "email": author[1]}
    lanes = _name_foreign_priors(plan, lanes)
    return Attestation.build(
        run_id=plan.run_id,
        review_id=plan.review_id,
        manifest_sha=plan.manifest_sha,
        binding=plan.binding_name,
        repo_remote=plan.repo_remote,
        base_sha=plan.base_sha,
        head_sha=frozen.head_sha,
        lanes=lanes,
        daemon=f"agentreview/{__version__}@{hostname()}",
        rubrics=plan.rubrics,
        packs=plan.packs,
        dirty=frozen.dirty,
        requester=requester or None,
        pr=plan.flags.pr,
    )


def _foreign_priors(plan: RunPlan, shas: set[str]) -> dict[str, TrustedForeign]:
    """The trusted foreign attestations (by digest) among ``shas``; empty when team trust is off."""
    if not shas:
        return {}
    from agentreview.share.trust import trusted_foreign

    def pinned(raw: dict[str, Any]) -> bool:
        try:
            return attestation_sha256_of(raw) in shas
        except Exception:  # not canonical-JSON-able: never a prior
            return False

    key = plan.key
    found = trusted_foreign(
        plan.host.home, plan.registry, key.repo_remote, key.manifest_sha, key.binding, want=pinned, digests=sorted(shas)
    )
    return {sha: f for f in found if (sha := f.attestation.attestation_sha256()) in shas}


def _name_foreign_priors(plan: RunPlan, lanes: Sequence[LaneResult]) -> Sequence[LaneResult]:
    """A lane composed on a teammate's attestation names its principal: ``composedFrom.principal``
    (an additive member, signed with the rest)."""
    foreign = _foreign_priors(plan, _pinned(lanes))
    if not foreign:
        return lanes
    named: list[LaneResult] = []
    for lane in lanes:
        prior = foreign.get(lane.composedFrom.attestationSha256) if lane.composedFrom is not None else None
        if prior is None:
            named.append(lane)
            continue
        data = lane.to_json_dict()
        data["composedFrom"]["principal"] = prior.principal
        named.append(LaneResult.from_json(data))
    return named


def record_run(
    plan: RunPlan,
    frozen: FrozenRange,
    lanes: Sequence[LaneResult],
    ledger: Ledger,
    reporter: Reporter,
    cancel: threading.Event,
) -> RunResult:
    """Fold, sign, record in the ledger, link the pull request, export; Cancelled when cancelled meanwhile."""
    from agentreview.signing.signers import sign_attestation
    from agentreview.store.ledger import LedgerKey

    att, signing_error = sign_attestation(
        fold(plan, frozen, lanes), registry=plan.registry, home=plan.host.home, repo_root=plan.repo_root
    )
    if signing_error:
        reporter.phase(f"signing: {signing_error}")
    interrupt.disarm()  # from the ledger write on, a signal no longer stops the run: it is recorded
    if cancel.is_set():
        raise Cancelled()
    host_info: dict[str, Any] = {"repoRoot": str(plan.repo_root), "manifestPath": str(plan.ledger_manifest_path)}
    if plan.export_dir:
        host_info["exportDir"] = str(plan.repo_root / plan.export_dir)
    try:
        ledger_path = ledger.put(att, host_info)
    except FileWriteError as exc:
        raise AgentreviewError(f"the review ended '{att.verdict}' but was not recorded: {exc}") from exc
    # The attestation's key names the frozen head, which a prepare step may have moved past plan.key's.
    _link_pr(plan, ledger, LedgerKey.of(att))
    # A headless run's ledger is temporary: its entry is gone when the run ends.
    result = RunResult.done(att, None if plan.flags.headless else ledger_path, signing_error=signing_error)
    export_result(plan, result, reporter, ledger)
    return result


def finish_cached(
    plan: RunPlan,
    att: Attestation,
    ledger: Ledger,
    reporter: Reporter,
    *,
    joined: bool,
    foreign: TrustedForeign | None = None,
) -> RunResult:
    """The result of a run served from the ledger: a cache hit, or an identical run just joined.

    A teammate's attestation (``foreign``) is returned untouched, never re-signed or copied into this
    host's own entries; the result names its principal and remote."""
    if foreign is not None:
        result = RunResult.done(att, foreign.path, cached=True)
        result.cached_from = {"principal": foreign.principal, "remote": foreign.remote}
    else:
        _link_pr(plan, ledger, plan.key)
        result = RunResult.done(att, ledger.entry_path(*plan.key), cached=not joined, joined=joined)
    export_result(plan, result, reporter, ledger)
    return result


def _link_pr(plan: RunPlan, ledger: Ledger, key: LedgerKey) -> None:
    """The attestation is never changed; a pull request known to this run is an annotation (best effort)."""
    if plan.flags.pr:
        with contextlib.suppress(Exception):
            ledger.set_pr(*key, plan.flags.pr)


def export_result(plan: RunPlan, result: RunResult, reporter: Reporter, ledger: Ledger) -> None:
    """Write the export file when ``--export`` or ``--export-to`` asked for one, and beside it
    every prior its ``composedFrom`` chain pins (from the ledger) that is not there yet."""
    if not plan.flags.exports or result.attestation is None:
        return
    from agentreview.store.export import composition_priors, export_path, write_export, write_prior

    att = result.attestation
    if plan.flags.export_to is not None:
        target = plan.flags.export_to.resolve()
    else:
        target = export_path(att, check_export_dir(plan.repo_root, plan.export_dir))
    recorded = "" if plan.flags.headless else " (the review is recorded: agentreview export writes it again)"
    try:
        result.export_path = write_export(att, target)
        reporter.phase(f"exported {result.export_path}")
        foreign = _foreign_priors(plan, _pinned(att.lanes))
        priors, missing = composition_priors(att, lambda range_sha: _recorded(ledger, att, range_sha, foreign))
        for prior in priors:
            written = write_prior(prior, target.parent)
            if written is not None:
                reporter.phase(f"exported composition prior {written}")
    except FileWriteError as exc:
        raise AgentreviewError(f"{exc}{recorded}") from exc
    for line in missing:
        reporter.phase(f"export: {line}; verify will not find it")


def _pinned(lanes: Sequence[LaneResult]) -> set[str]:
    """The digests of the priors ``lanes`` are composed on."""
    return {lane.composedFrom.attestationSha256 for lane in lanes if lane.composedFrom is not None}


def _recorded(
    ledger: Ledger, att: Attestation, range_sha: str, foreign: dict[str, TrustedForeign] | None = None
) -> Attestation | None:
    """The attestation the ledger holds for ``range_sha`` under ``att``'s repository, manifest and
    binding; else a trusted teammate's attestation for it that ``att`` pins (team trust)."""
    entry = ledger.get(att.target.repoRemote, att.manifestSha, att.binding, range_sha)
    if entry is not None or not foreign:
        return entry.attestation if entry is not None else None
    return next((f.attestation for f in foreign.values() if f.attestation.rangeSha == range_sha), None)
