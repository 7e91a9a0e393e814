"""A run's entries in the run registry (:mod:`agentreview.runs`): begun, planned, lanes, finished.

Every run goes through here so ``status`` and ``cancel`` see it; a record that cannot be written is a warning,
never a failed review. It also watches for a cancel request, so a run on any thread of any process can be cancelled.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from agentreview.engine.options import requester_from_env
from agentreview.runs.registry import RunRegistry

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from agentreview.engine.plan import RunPlan
    from agentreview.engine.result import RunResult
    from agentreview.report.progress import Reporter

__all__ = ["RunTracker", "requester_from_env"]

POLL_S = 0.2


class RunTracker:
    """One run's record: ``begin`` at once, ``planned`` once the plan is known, ``finish`` at the end."""

    def __init__(self, home: Path, run_id: str, cancel: threading.Event, requester: str | None) -> None:
        self.registry = RunRegistry(home)
        self.run_id = run_id
        self.cancel = cancel
        self.requester = requester
        self.warnings: list[str] = []
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def _safely(self, what: str, call: Any, *args: Any, **kwargs: Any) -> None:
        try:
            call(*args, **kwargs)
        except Exception as exc:  # the review goes on; status is best effort
            if len(self.warnings) < 3:
                self.warnings.append(f"run registry: cannot {what}: {exc}")

    def _begin(self, **fields: Any) -> None:
        self._safely(
            "record the run",
            self.registry.begin,
            self.run_id,
            pid=os.getpid(),
            requester_session_id=self.requester,
            signal_cancels=threading.current_thread() is threading.main_thread(),
            cancel_event=self.cancel,
            **fields,
        )

    def start(self) -> None:
        self._begin(repo_root=None, repo_remote=None, binding=None, base_sha=None, head_sha=None)
        self._watcher = threading.Thread(target=self._watch, name=f"cancel-watch-{self.run_id}", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            if self.registry.cancel_requested(self.run_id):
                self.cancel.set()
                return

    def planned(self, plan: RunPlan) -> None:
        self._begin(
            repo_root=plan.repo_root,
            repo_remote=plan.repo_remote,
            binding=plan.binding_name,
            review_id=plan.review_id,
            base_sha=plan.base_sha,
            head_sha=plan.pre_head_sha,
        )

    def reporter(self, inner: Reporter) -> Reporter:
        return _TrackingReporter(inner, self)

    def finish(self, result: RunResult) -> None:
        self._stop.set()
        fields: dict[str, Any] = {
            "status": result.status,
            "verdict": result.verdict,
            "error": result.error,
            "signing_error": result.signing_error,
            "superseded_by": result.superseded_by,
        }
        att = result.attestation
        if att is not None:
            fields["lanes"] = [{"id": lane.id, "status": lane.status} for lane in att.lanes]
            fields["attestation_run_id"] = att.runId
            fields["review_id"] = att.reviewId
            fields["cached"] = result.cached or result.joined
            if result.ledger_path is not None:  # a headless run's ledger is gone
                fields["attestation_path"] = str(result.ledger_path)
                fields["ledger_key"] = {
                    "repoRemote": att.target.repoRemote,
                    "manifestSha": att.manifestSha,
                    "binding": att.binding,
                    "rangeSha": att.rangeSha,
                }
        self._safely("record the end of the run", self.registry.finish, self.run_id, **fields)


class _TrackingReporter:
    """The caller's reporter, and each lane's start and end told to the registry."""

    def __init__(self, inner: Reporter, tracker: RunTracker) -> None:
        self._inner = inner
        self._tracker = tracker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def lanes_started(self, lanes: list[tuple[str, str, bool]]) -> None:
        tracker = self._tracker
        tracker._safely("record the lanes", tracker.registry.lanes_started, tracker.run_id, [lane[0] for lane in lanes])
        self._inner.lanes_started(lanes)

    def lane_finished(self, result: Any) -> None:
        tracker = self._tracker
        tracker._safely("record a lane", tracker.registry.lane, tracker.run_id, result.id, result.status)
        self._inner.lane_finished(result)
