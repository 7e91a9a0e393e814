"""``run_review``: one review run — plan, then cache or join, then execute, then record.

Ends ``done``, ``failed`` (nothing attested) or ``cancelled`` (nothing recorded). A headless run records into a
temporary ledger of its own, as the reference does, so it never answers from, joins, or replaces a full run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.engine import interrupt
from agentreview.engine.cache import join_lock, serve_cached, serve_joined
from agentreview.engine.coordination import InflightRegistry, join_lock_path
from agentreview.engine.errors import Cancelled, PrepareFailed
from agentreview.engine.options import RunOptions, requester_from_env
from agentreview.engine.plan import LanePlan, RunPlan, build_plan
from agentreview.engine.record import record_run
from agentreview.engine.result import RunResult
from agentreview.host import git
from agentreview.host.files import WRITE_ERRNOS, describe_os_error
from agentreview.host.home import home_dir
from agentreview.model.errors import EXIT_USAGE, AgentreviewError
from agentreview.report.progress import QuietReporter, Reporter
from agentreview.runs.detach import new_run_id
from agentreview.runs.registry import RUN_ID
from agentreview.store.layout import ledger_slug

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.engine.execute import LaneContext
    from agentreview.engine.tracking import RunTracker
    from agentreview.model.attestation import LaneResult
    from agentreview.plugins.registry import Registry
    from agentreview.store.ledger import Ledger

__all__ = ["RunOptions", "RunResult", "new_run_id", "run_review"]


# After a review of a pushed commit that ran in a worktree of it (the checkout had uncommitted changes) and did
# not pass: what only the checkout holds was not there, which may be why.
ISOLATED_HINT = (
    "the lanes ran in a worktree of the pushed commit, as pushed, since the checkout has uncommitted changes to "
    "tracked files; what only the checkout holds (node_modules, a virtualenv, build outputs) was not there — if a "
    "lane needs it, stash the changes (git stash), push, then git stash pop"
)


def run_review(options: RunOptions, reporter: Reporter | None = None, *, registry: Registry | None = None) -> RunResult:
    """Run one review; never raises for a run that could not happen (status ``failed``).

    The run is in the run registry (:mod:`agentreview.runs`) from its first moment to its end:
    ``running``, each lane as it finishes, then ``done``, ``cancelled`` or ``failed``."""
    from agentreview.engine.tracking import RunTracker

    run_id = options.run_id or new_run_id()
    if not RUN_ID.match(run_id):
        return RunResult.failed(run_id, f"run id '{run_id}' is not review-<id>", exit_code=EXIT_USAGE)
    if options.session_id is None:
        options = dataclasses.replace(options, session_id=requester_from_env())
    cancel = threading.Event()
    tracker = RunTracker(options.home or home_dir(), run_id, cancel, options.session_id)
    result: RunResult | None = None
    with interrupt.handle_signals(cancel):
        tracker.start()
        try:
            tracked = tracker.reporter(reporter or QuietReporter())
            result = _guarded(run_id, lambda: _run(run_id, options, tracked, registry, cancel, tracker))
        finally:  # even an exception that escapes (AGENTREVIEW_DEBUG) ends the record
            tracker.finish(result or RunResult.failed(run_id, "the run ended with an internal error"))
    return result


def _guarded(run_id: str, run: Callable[[], RunResult]) -> RunResult:
    """``run()``, with a signal, a usage error or any failure turned into a cancelled or failed result."""
    try:
        with interrupt.armed():
            return run()
    except (Cancelled, interrupt.Interrupted):
        return RunResult.cancelled(run_id)
    except AgentreviewError as exc:
        # a usage error keeps its exit code 64; a failed write (FileWriteError) names the file and the fix
        return RunResult.failed(run_id, str(exc), exit_code=exc.exit_code)
    except git.GitError as exc:
        return RunResult.failed(run_id, str(exc))
    except Exception as exc:  # could-not-run, never a traceback
        if os.environ.get("AGENTREVIEW_DEBUG"):
            raise

        if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS and exc.filename is not None:
            # a directory or lock under the home that cannot be made (a full disk, say): the file and the fix
            return RunResult.failed(run_id, describe_os_error(exc))
        return RunResult.failed(run_id, f"{type(exc).__name__}: {exc}")


def _run(
    run_id: str,
    options: RunOptions,
    reporter: Reporter,
    registry: Registry | None,
    cancel: threading.Event,
    tracker: RunTracker,
) -> RunResult:
    if options.policy_from is None:
        plan = build_plan(run_id, options, registry)
        result = _run_planned(plan, reporter, cancel, tracker)
    else:
        from agentreview.manifest.policy_tree import manifest_rel, policy_tree

        cwd = options.cwd.resolve()
        root = git.repo_root(cwd)
        # REF's rubrics and packs are read by the lanes: the folder lives until the run has ended
        rel = manifest_rel(root, cwd, options.manifest, options.policy_from)
        with policy_tree(root, options.policy_from, rel) as policy:
            plan = build_plan(run_id, options, registry, policy=policy)
            reporter.phase(f"reviewing under {policy.ref}'s policy ({policy.sha[:10]}:{policy.rel})")
            result = _run_planned(plan, reporter, cancel, tracker)
        result.policy_from = policy.resolved
    result.refs = plan.refs  # the report names the full refs and commits the range came from
    result.export_commit = plan.export_commit
    result.warnings = plan.resolved.warnings
    return result


def _run_planned(plan: RunPlan, reporter: Reporter, cancel: threading.Event, tracker: RunTracker) -> RunResult:
    if plan.export_commit:
        reporter.phase(
            f"{plan.export_commit[:10]} only adds exports under {plan.export_dir}: "
            f"reviewing its parent {plan.pre_head_sha[:10]}"
        )
    tracker.planned(plan)
    for warning in (*tracker.warnings, *(f"warning: {w}" for w in plan.resolved.warnings)):
        reporter.phase(warning)
    if cancel.is_set():
        raise Cancelled()
    slug_dir = plan.host.home / "reviews" / ledger_slug(plan.repo_remote)
    inflight = InflightRegistry(slug_dir)
    me = plan.inflight_run()
    with inflight.advertise(me), _ledger_for(plan) as ledger:
        # 6. supersede
        if plan.flags.supersede:
            for victim in inflight.supersede(me, lambda a, b: git.is_ancestor(plan.repo_root, a, b)):
                reporter.phase(f"superseded in-flight run {victim}")
        # 8. cache, or join an identical run in flight (never headless)
        cached = serve_cached(plan, ledger, reporter)
        if cached is not None:
            return cached
        key = plan.join_key
        if key is None:
            return _execute(plan, ledger, inflight, cancel, reporter)

        def holders() -> set[str]:
            return inflight.holders(key, plan.run_id)

        lock = join_lock_path(slug_dir, key)
        with join_lock(lock, cancel, plan.flags.join_timeout_s, reporter, holders) as waited:
            joined = serve_joined(plan, ledger, waited, reporter) if waited is not None else None
            if joined is not None:
                return joined
            if waited is not None:  # the tree may have changed while this run waited
                plan.checkout.forget()
            # 9–10. execute and record
            return _execute(plan, ledger, inflight, cancel, reporter)


@contextlib.contextmanager
def _ledger_for(plan: RunPlan) -> Iterator[Ledger]:
    """This host's ledger; for a headless run, a temporary one removed when the run ends."""
    from agentreview.store.ledger import Ledger

    if not plan.flags.headless:
        with Ledger(plan.host.home / "reviews") as ledger:
            yield ledger
        return
    import tempfile

    scratch = tempfile.mkdtemp(prefix="agentreview-headless-")
    try:
        with Ledger(Path(scratch)) as ledger:
            yield ledger
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _execute(
    plan: RunPlan, ledger: Ledger, inflight: InflightRegistry, cancel: threading.Event, reporter: Reporter
) -> RunResult:
    """Prepare, freeze, run the lanes, record; the run directory never outlives the run."""
    from agentreview.engine.freeze import (
        lane_context,
        plan_lanes,
        prepare_and_freeze,
        prepare_context,
        refuse_unknown_presets,
    )
    from agentreview.engine.worktree import lane_tree

    refuse_unknown_presets(plan)
    run_dir = ledger.run_dir(plan.repo_remote, plan.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        # the checkout, or a worktree of the head removed when the lanes are done (cancel included)
        with lane_tree(plan.repo_root, plan.head_ref, plan.host.home, plan.run_id, reporter.phase,
                       isolated=plan.isolated) as tree:  # fmt: skip
            prepared = prepare_context(plan, run_dir, cancel, tree)
            frozen = prepare_and_freeze(plan, prepared, reporter, tree)
            ctx = lane_context(plan, frozen, prepared)
            lane_plans = plan_lanes(plan, frozen, ledger, reporter, tree)
            with interrupt.shielded():  # lanes stop through the cancel event, their processes reaped
                lanes = _run_lanes(lane_plans, ctx, reporter)
        if cancel.is_set():
            raise Cancelled()
        result = record_run(plan, frozen, lanes, ledger, reporter, cancel)
        if tree.isolated and result.verdict != "pass":
            reporter.phase(ISOLATED_HINT)
        return result
    except PrepareFailed as exc:
        return RunResult.failed(plan.run_id, str(exc))
    except Cancelled:
        return RunResult.cancelled(plan.run_id, superseded_by=inflight.superseded_by(plan.run_id))
    finally:
        inflight.clear_marker(plan.run_id)
        shutil.rmtree(run_dir, ignore_errors=True)


def _run_lanes(plans: list[LanePlan], ctx: LaneContext, reporter: Reporter) -> list[LaneResult]:
    from agentreview.engine.execute import run_lanes

    reporter.lanes_started([(p.check.id, p.check.kind, p.check.blocking) for p in plans])
    try:
        return run_lanes(plans, ctx, on_finished=reporter.lane_finished)
    finally:
        reporter.close()
