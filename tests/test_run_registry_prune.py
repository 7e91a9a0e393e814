"""Pruning the run registry: finished records beyond the newest ``keep`` or older than ``days`` go,
and a live run's never does."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentreview.runs.registry import RunRegistry


def begin(registry: RunRegistry, run_id: str) -> None:
    registry.begin(
        run_id, pid=os.getpid(), repo_root=None, repo_remote=None, binding=None, base_sha=None, head_sha=None,
        requester_session_id=None, signal_cancels=False,
    )  # fmt: skip


def finished(registry: RunRegistry, run_id: str, age_s: float) -> None:
    begin(registry, run_id)
    registry.finish(run_id, status="done", verdict="pass")
    stamp = time.time() - age_s
    os.utime(registry.record_path(run_id), (stamp, stamp))


def files(registry: RunRegistry) -> set[str]:
    return {p.name for p in registry.dir.iterdir()}


def test_prune_keeps_the_newest_finished_runs_and_every_live_one(tmp_path: Path) -> None:
    registry, other = RunRegistry(tmp_path), RunRegistry(tmp_path)
    for n in range(1, 5):
        finished(registry, f"review-done-{n}", age_s=100 - n)  # done-4 is the newest
    begin(other, "review-live")  # another registry's run holds its lock: alive
    stamp = time.time() - 1000  # the oldest record of all
    os.utime(registry.record_path("review-live"), (stamp, stamp))
    registry.prune(keep=2)
    assert files(registry) == {
        "review-done-3.json", "review-done-3.lock", "review-done-4.json", "review-done-4.lock",
        "review-live.json", "review-live.lock",
    }  # fmt: skip


def test_prune_removes_a_record_older_than_the_age_limit_below_the_count(tmp_path: Path) -> None:
    registry = RunRegistry(tmp_path)
    finished(registry, "review-old", age_s=8 * 86400)
    finished(registry, "review-new", age_s=10)
    registry.prune(keep=200, days=7)
    assert files(registry) == {"review-new.json", "review-new.lock"}
