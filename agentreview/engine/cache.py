"""Step 8: serve the run from the ledger cache, or join an identical run in flight.

The cache rule is the ledger's; this module decides when to ask, and how to wait on the per-request lock. A
joined run takes only the attestation one of the runs it waited for recorded, never another request's entry.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.engine.errors import Cancelled
from agentreview.engine.plan import RunPlan
from agentreview.engine.record import finish_cached
from agentreview.engine.result import RunResult
from agentreview.host.files import FileWriteError
from agentreview.host.locks import FileLock, Timeout
from agentreview.model.errors import AgentreviewError
from agentreview.model.record import record
from agentreview.report.progress import Reporter

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.store.ledger import Ledger

DEFAULT_JOIN_TIMEOUT_S = 24 * 3600.0
JOIN_POLL_S = 0.2


@record
class JoinWait:
    """This run found the join lock held: when it started waiting, and which runs it waited for."""

    since: float
    holders: frozenset[str]


def serve_cached(plan: RunPlan, ledger: Ledger, reporter: Reporter) -> RunResult | None:
    """The cached result for the plan's key, or None when the run must execute.

    A headless run is never answered from the ledger (the reference runs headless on a
    temporary ledger): a full run's verdict would otherwise stand in for a run that reviews less."""
    if plan.flags.no_cache or plan.flags.headless or (plan.checkout.dirty() and not plan.isolated):
        return None
    cached = ledger.lookup_cached(*plan.key, plan.rubrics, plan.packs)
    if cached is not None and not cached.attestor.signature and _can_sign_now(plan, cached):
        reporter.phase(f"the recorded review {cached.runId} is unsigned and this host can sign now: running again")
        return None
    if cached is None:
        return serve_foreign(plan, ledger, reporter)
    reporter.phase(f"cache hit: {cached.runId} ({cached.verdict})")
    return finish_cached(plan, cached, ledger, reporter, joined=False)


def _can_sign_now(plan: RunPlan, att: Attestation) -> bool:
    """Whether this host now signs what it could not sign when the review was recorded (a trial signature):
    the review then runs again, since what is signed is always what this run saw."""
    from agentreview.signing.signers import sign_attestation

    _, error = sign_attestation(att, registry=plan.registry, home=plan.host.home, repo_root=plan.repo_root)
    return error is None


def serve_foreign(plan: RunPlan, ledger: Ledger, reporter: Reporter) -> RunResult | None:
    """A teammate's verified attestation for the same key and base, under team trust: served as it is,
    never re-signed or copied, naming whose it is (``cachedFrom``)."""
    from agentreview.share.trust import trusted_foreign
    from agentreview.store.cache import servable

    key = plan.key
    home = plan.host.home

    def same_range(raw: dict[str, Any]) -> bool:  # only these are worth a signature check
        return raw.get("rangeSha") == key.range_sha

    for found in trusted_foreign(
        home, plan.registry, key.repo_remote, key.manifest_sha, key.binding, want=same_range, range_sha=key.range_sha
    ):
        att = found.attestation
        if att.rangeSha != key.range_sha or att.target.baseSha != plan.base_sha:
            continue
        if not servable(att, plan.rubrics, plan.packs):
            continue
        reporter.phase(
            f"cache hit: {att.runId} ({att.verdict}) from {found.principal}"
            + (f" via {found.remote}" if found.remote else "")
            + " (team trust)"
        )
        return finish_cached(plan, att, ledger, reporter, joined=False, foreign=found)
    return None


def serve_joined(plan: RunPlan, ledger: Ledger, waited: JoinWait, reporter: Reporter) -> RunResult | None:
    """After waiting for an identical run: its attestation when it recorded one meanwhile, else None."""
    entry = ledger.get(*plan.key)
    if entry is None or entry.attestation.runId not in waited.holders:
        return None
    if not _created_after(entry.attestation, waited.since):
        return None
    reporter.phase(f"joined identical run {entry.attestation.runId}")
    return finish_cached(plan, entry.attestation, ledger, reporter, joined=True)


@contextlib.contextmanager
def join_lock(
    path: Path,
    cancel: threading.Event,
    timeout_s: float | None,
    reporter: Reporter,
    holders: Callable[[], set[str]],
) -> Iterator[JoinWait | None]:
    """Hold the per-request lock; yields what this run waited for, or None when the lock was free.

    ``holders`` lists the in-flight runs with this run's join key; it is asked once the lock is
    found held (every run advertises itself before it takes the lock, so the holder is among them)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileWriteError(path.parent, exc) from exc
    lock = FileLock(str(path))
    waited: JoinWait | None = None
    try:
        lock.acquire(timeout=0)
    except Timeout:
        waited = JoinWait(time.time(), frozenset(holders()))
    if waited is not None:
        reporter.phase("an identical review is in flight on this host; waiting for its result")
        _wait_for(lock, path, cancel, timeout_s if timeout_s is not None else DEFAULT_JOIN_TIMEOUT_S)
    try:
        yield waited
    finally:
        with contextlib.suppress(Exception):
            lock.release()


def _wait_for(lock: FileLock, path: Path, cancel: threading.Event, limit: float) -> None:
    """Poll the lock so Ctrl-C and SIGTERM (which set ``cancel``) are seen within a poll."""
    deadline = time.monotonic() + limit
    while True:
        if cancel.is_set():
            raise Cancelled()
        try:
            lock.acquire(timeout=JOIN_POLL_S)
            return
        except Timeout:
            if time.monotonic() > deadline:
                raise AgentreviewError(
                    f"gave up waiting {limit:.0f}s for an identical review in flight (lock {path})"
                ) from None


def _created_after(att: Attestation, since: float) -> bool:
    try:
        created = datetime.fromisoformat(att.createdAt.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    return created >= since - 1.0
