"""Step 9, before the lanes: prepare steps, then freeze the range, then plan each lane.

Prepare steps may change the tree, so head and dirtiness are read after them and every lane then sees the same
``{head}``. The freeze refuses a head that is not the commit the :class:`~agentreview.engine.worktree.LaneTree`
holds: an attestation never names a commit its lanes did not run at.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.engine import interrupt
from agentreview.engine.compose import find_prior
from agentreview.engine.errors import PrepareFailed
from agentreview.engine.execute import LaneContext, LanePlan, run_prepare
from agentreview.engine.plan import RunPlan
from agentreview.engine.priors import Priors, find_priors
from agentreview.engine.worktree import LaneTree, tree_dirty, tree_head
from agentreview.host import git
from agentreview.host.files import read_regular_file
from agentreview.manifest.placeholders import substitute
from agentreview.model.digests import sha256_hex
from agentreview.model.errors import AgentreviewError
from agentreview.model.record import record
from agentreview.model.suggest import did_you_mean
from agentreview.packs.confine import MAX_PACK_FILE_BYTES
from agentreview.report.progress import Reporter

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.store.ledger import Ledger


@record
class FrozenRange:
    """The range the lanes review and the attestation names, read after prepare."""

    head_sha: str
    dirty: bool  # uncommitted changes to tracked files: the attestation says so and is never cached
    placeholders: Mapping[str, str]  # the plan's host values plus {head}


def prepare_context(plan: RunPlan, run_dir: Path, cancel: threading.Event, tree: LaneTree) -> LaneContext:
    """What prepare steps see: the host values, no head yet; the tree they (and the lanes) run in; never
    the host's own variables (a bad ``[lanes]`` in config.toml stops the run here, before anything runs)."""
    from agentreview.host.secrets import withheld_names

    return LaneContext(
        review_id=plan.review_id,
        repo_root=tree.root,
        base_sha=plan.base_sha,
        head_sha="",
        placeholders=plan.host_values,
        run_dir=run_dir,
        cancel=cancel,
        executors=plan.executors,
        headless=plan.flags.headless,
        requester_session_id=plan.host.session_id,
        home=plan.host.home,
        authored_by=plan.flags.authored_by,
        withheld_env=withheld_names(plan.host.home),
    )


def prepare_and_freeze(plan: RunPlan, ctx: LaneContext, reporter: Reporter, tree: LaneTree) -> FrozenRange:
    """Run the prepare steps in order (PrepareFailed on the first failure), then freeze head and
    dirtiness; PrepareFailed too when ``tree`` does not hold the head (a prepare step moved one of them)."""
    if plan.prepare:
        with interrupt.shielded():  # a prepare step stops through the cancel event, its processes reaped
            run_prepare(plan.prepare, ctx, reporter.phase)
    head_sha = git.rev_parse_commit(plan.repo_root, plan.head_ref)
    # the checkout's HEAD is the head itself by definition; anything else is compared
    tested = head_sha if plan.head_ref == "HEAD" and not tree.detached else tree_head(tree)
    if tested != head_sha:
        where = "the review's worktree" if tree.detached else "the checkout"
        raise PrepareFailed(
            f"'{plan.head_ref}' is {head_sha[:12]} after the prepare steps, but {where} holds {tested[:12]}: "
            "the lanes would not run at the head they attest, so nothing is attested "
            "(a prepare step that commits needs the head checked out and --head left at HEAD)"
        )
    # the checkout's status, asked before the cache, still holds unless a prepare step ran since
    dirty = plan.checkout.dirty() if not (plan.prepare or tree.detached) else tree_dirty(tree)
    if dirty:
        reporter.phase("working tree has uncommitted changes to tracked files: the attestation will be dirty")
    return FrozenRange(head_sha=head_sha, dirty=dirty, placeholders={**plan.host_values, "head": head_sha})


def refuse_unknown_presets(plan: RunPlan) -> None:
    """Before any step runs: every agent lane's preset is one this host knows, else exit 3 (a fact about
    REVIEW.md, better found before the other lanes run). Unknown fallbacks are left to the lane: a team's
    manifest may list one only some hosts define."""
    if not plan.wants_reviewers:
        return
    from agentreview.host.presets import load_presets, presets_path
    from agentreview.model.manifest import AgentCheck

    providers = plan.registry.objects("providers")
    if not providers:  # no reviewer plugin at all: the lanes say so (skipped), nothing to misspell
        return
    presets = load_presets(plan.host.home, providers)
    for ref in plan.binding.checks:
        check = plan.resolved.checks[ref].check
        if isinstance(check, AgentCheck) and check.preset and check.preset not in presets:
            raise AgentreviewError(
                f"{plan.manifest_path}: checks '{ref}' preset: unknown preset '{check.preset}'"
                f"{did_you_mean(check.preset, presets)} — set preset to one of "
                f"{', '.join(sorted(presets)) or '(none)'} "
                f"(see agentreview presets) or define [presets.{check.preset}] in {presets_path(plan.host.home)}"
            )


def lane_context(plan: RunPlan, frozen: FrozenRange, prepared: LaneContext) -> LaneContext:
    """What lanes see: the frozen head, and reviewer providers and presets when agent lanes run."""
    ctx = replace(prepared, head_sha=frozen.head_sha, placeholders=frozen.placeholders)
    if plan.wants_reviewers:
        from agentreview.host.presets import load_presets

        providers = plan.registry.objects("providers")
        ctx = replace(ctx, providers=providers, presets=load_presets(plan.host.home, providers))
    return ctx


def plan_lanes(
    plan: RunPlan, frozen: FrozenRange, ledger: Ledger, reporter: Reporter, tree: LaneTree
) -> list[LanePlan]:
    """One LanePlan per binding check, in binding order: a command substituted, or a rubric and maybe a delta."""
    from agentreview.model.manifest import AgentCheck, CommandCheck

    # headless: agent lanes are skipped, and the run's ledger is its own (empty) one
    compose = not (plan.flags.no_cache or plan.flags.no_compose or plan.flags.headless) and not frozen.dirty
    priors: Priors | None = None
    lanes: list[LanePlan] = []
    for ref in plan.binding.checks:
        rc = plan.resolved.checks[ref]
        check = rc.check
        lane = LanePlan(check=check)
        if isinstance(check, CommandCheck):
            lane.command = substitute(check.run, frozen.placeholders, label=f"check '{ref}'")
        elif isinstance(check, AgentCheck):  # a plugin's check kind needs neither a command nor a rubric
            digest = plan.rubric_sha256(ref)
            lane.rubric_path = _rubric_in(tree, plan, plan.rubric_paths.get(ref), digest)
            if compose and digest is not None:
                if priors is None:
                    priors = find_priors(plan, ledger, frozen.head_sha)
                lane.delta = find_prior(
                    priors.candidates,
                    base_sha=plan.base_sha,
                    head_sha=frozen.head_sha,
                    check_id=ref,
                    rubric_sha256=digest,
                    pack_digest=plan.pack_digest(rc),
                    is_ancestor=priors.is_ancestor,
                )
                if lane.delta is not None:
                    reporter.phase(
                        f"lane {ref}: delta review over {lane.delta.prior_head_sha[:10]}..{frozen.head_sha[:10]}"
                    )
        lanes.append(lane)
    return lanes


def _rubric_in(tree: LaneTree, plan: RunPlan, path: Path | None, digest: str | None) -> Path | None:
    """The rubric as the lane's tree has it: in a worktree of the head, the same file there when its
    bytes are the ones digested before prepare (so the reviewer needs nothing outside the head's
    tree), else the file that was digested."""
    if path is None or digest is None or not tree.detached:
        return path
    try:
        mirrored = tree.root / path.relative_to(plan.repo_root.resolve())
        same = sha256_hex(read_regular_file(mirrored, limit=MAX_PACK_FILE_BYTES, follow_symlinks=False)) == digest
    except (ValueError, OSError):  # outside the checkout (a pack's), or not the same file there
        return path
    return mirrored if same else path
