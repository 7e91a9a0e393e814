"""Running the compiled review: prepare steps in order, then every lane in parallel.

Each lane runs on a daemon thread, so an executor that never returns cannot hold the run hostage: after
``timeoutMs`` plus a grace period it is recorded as ``timeout``. Status is decided by ``agentreview.model.lanes``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.engine.errors import Cancelled, PrepareFailed
from agentreview.engine.plan import LanePlan
from agentreview.model.attestation import LaneResult
from agentreview.model.contracts.lanes import LaneExecutor, LaneOutcome, LaneRequest
from agentreview.model.lanes import skipped_result, tail, to_lane_result

__all__ = ["Cancelled", "LaneContext", "LanePlan", "PrepareFailed", "run_lanes", "run_prepare"]

EXECUTOR_GRACE_S = 30.0

PLUGIN_FOR_KIND = {"command": "agentreview-command", "agent": "agentreview-agent"}


@dataclass
class LaneContext:
    """What every lane of one run shares: the frozen range, its placeholders, the executors and the cancel event."""

    review_id: str
    repo_root: Path
    base_sha: str
    head_sha: str
    placeholders: Mapping[str, str]
    run_dir: Path
    cancel: threading.Event
    executors: Mapping[str, LaneExecutor]
    headless: bool = False
    presets: Mapping[str, Any] = field(default_factory=dict)
    providers: Mapping[str, Any] = field(default_factory=dict)
    requester_session_id: str | None = None
    home: Path | None = None
    authored_by: frozenset[str] = frozenset()
    withheld_env: frozenset[str] | None = None  # the host's own variables (agentreview.host.secrets)


def _missing_executor_error(kind: str, headless: bool) -> str:
    if headless and kind == "agent":
        return "agent lanes are not run in --headless mode (no reviewer host); run without --headless to review"
    plugin = PLUGIN_FOR_KIND.get(kind)
    if plugin is None:
        return (
            f"no lane executor for kind '{kind}' is installed — install the plugin that provides it "
            "(agentreview plugins lists what is installed)"
        )
    return f"no lane executor for kind '{kind}' is installed — install {plugin} (pip install {plugin})"


def _request(plan: LanePlan, ctx: LaneContext) -> LaneRequest:
    return LaneRequest(
        check=plan.check,
        review_id=ctx.review_id,
        repo_root=ctx.repo_root,
        base_sha=ctx.base_sha,
        head_sha=ctx.head_sha,
        placeholders=dict(ctx.placeholders),
        run_dir=ctx.run_dir,
        cancel=ctx.cancel,
        command=plan.command,
        rubric_path=plan.rubric_path,
        delta=plan.delta,
        presets=ctx.presets,
        providers=ctx.providers,
        requester_session_id=ctx.requester_session_id,
        home=ctx.home,
        authored_by=ctx.authored_by,
        withheld_env=ctx.withheld_env,
    )


def run_prepare(steps: Sequence[LanePlan], ctx: LaneContext, report: Callable[[str], None]) -> None:
    """Run prepare steps one after another; raise :class:`PrepareFailed` on the first failure."""
    executor = ctx.executors.get("command")
    for plan in steps:
        if ctx.cancel.is_set():
            raise Cancelled()
        if executor is None:
            raise PrepareFailed(f"prepare step '{plan.check.id}': {_missing_executor_error('command', False)}")
        report(f"prepare {plan.check.id}: {plan.command}")
        started = time.monotonic()
        try:
            outcome = executor.run_lane(_request(plan, ctx))
        except Exception as exc:  # an executor must not raise; treat it as a failed step
            outcome = LaneOutcome.skipped(f"executor error: {type(exc).__name__}: {exc}")
        if ctx.cancel.is_set():
            raise Cancelled()
        elapsed = time.monotonic() - started
        if outcome.kind == "exited" and outcome.exit_code == 0:
            report(f"prepare {plan.check.id}: ok in {elapsed:.1f}s")
            continue
        if outcome.kind == "exited":
            detail = f"exited with code {outcome.exit_code}"
        elif outcome.kind == "timeout":
            detail = f"exceeded {plan.check.timeoutMs}ms and was killed"
        else:
            detail = outcome.error or "could not run"
        output = tail(outcome.output, 2000)
        raise PrepareFailed(
            f"prepare step '{plan.check.id}' {detail}" + (f"; output:\n{output}" if output.strip() else "")
        )


def _run_one(plan: LanePlan, ctx: LaneContext) -> LaneResult:
    check = plan.check
    started = time.monotonic()
    if ctx.cancel.is_set():
        return skipped_result(check, "review cancelled before this lane started")
    executor = None if (ctx.headless and check.kind == "agent") else ctx.executors.get(check.kind)
    if executor is None:
        return skipped_result(check, _missing_executor_error(check.kind, ctx.headless))
    if check.kind == "agent" and plan.rubric_path is None:
        rubric = getattr(check, "rubric", "?")
        return skipped_result(check, f"rubric not found: {rubric}")
    try:
        outcome = executor.run_lane(_request(plan, ctx))
        if not isinstance(outcome, LaneOutcome):
            outcome = LaneOutcome.skipped(f"lane executor returned {type(outcome).__name__}, not a LaneOutcome")
    except BaseException as exc:  # the executor contract says never raise; enforce it here
        outcome = LaneOutcome.skipped(f"lane executor failed: {type(exc).__name__}: {exc}")
    duration_ms = int((time.monotonic() - started) * 1000)
    delta = plan.delta if outcome.kind == "reported" else None
    try:
        return to_lane_result(check, outcome, duration_ms, delta)
    except Exception as exc:  # an outcome the attestation cannot hold (e.g. a malformed finding)
        return skipped_result(check, f"lane outcome could not be recorded: {exc}", duration_ms)


def run_lanes(
    plans: Sequence[LanePlan],
    ctx: LaneContext,
    on_finished: Callable[[LaneResult], None] | None = None,
    poll_s: float = 0.05,
) -> list[LaneResult]:
    """Run every lane in parallel; results come back in binding order."""
    results: list[LaneResult | None] = [None] * len(plans)
    done = threading.Condition()

    def worker(index: int, plan: LanePlan) -> None:
        result = _run_one(plan, ctx)
        with done:
            if results[index] is None:
                results[index] = result
                if on_finished is not None:
                    on_finished(result)
            done.notify_all()

    started = time.monotonic()
    for index, plan in enumerate(plans):
        threading.Thread(target=worker, args=(index, plan), name=f"lane-{plan.check.id}", daemon=True).start()
    deadlines = [started + plan.check.timeoutMs / 1000 + EXECUTOR_GRACE_S for plan in plans]
    with done:
        while any(r is None for r in results):
            # Short waits keep the main thread responsive to signals (Ctrl-C / SIGTERM).
            done.wait(timeout=poll_s)
            now = time.monotonic()
            for index, plan in enumerate(plans):
                if results[index] is None and now > deadlines[index]:
                    result = to_lane_result(
                        plan.check,
                        LaneOutcome.timeout(
                            f"lane executor did not return within {plan.check.timeoutMs}ms "
                            f"(+{EXECUTOR_GRACE_S:.0f}s grace) and was abandoned"
                        ),
                        int((now - started) * 1000),
                    )
                    results[index] = result
                    if on_finished is not None:
                        on_finished(result)
    return [r for r in results if r is not None]
