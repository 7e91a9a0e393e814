"""``review_run``, ``review_status`` and ``review_cancel``: each run is an ordinary detached ``agentreview run``.

A waiting call belongs to its request, so :func:`abandon` cancels the run when the request goes away, unless ``detach``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.mcp import args
from agentreview.mcp.args import ToolFailure

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.runs.registry import RunRegistry

ENV_SESSIONS = ("AGENTREVIEW_SESSION_ID", "AGENTPROTO_SESSION_ID")
SETTLED = frozenset({"done", "failed", "cancelled"})
LANE_SETTLED = frozenset({"pass", "fail", "timeout", "skipped", "error", "done", "failed", "cancelled"})
POLL_S = 0.25
# A run record not yet readable this long after start is reported as failed, never waited on forever.
START_GRACE_S = 30.0

Progress = Callable[[float, float | None, str], Awaitable[None]]
Log = Callable[[str, dict[str, Any]], Awaitable[None]]  # (level, data) of one notifications/message


@dataclass
class RunRequest:
    """review_run's arguments, checked."""

    cwd: Path
    manifest_path: str | None = None
    binding: str | None = None
    base: str | None = None
    head: str | None = None
    nocache: bool = False
    compose: bool = True
    requester: str | None = None
    pr: dict[str, Any] | None = None
    supersede: bool = False

    def cli_args(self) -> list[str]:
        """The ``agentreview run`` arguments (after ``run``) that ask for exactly this run."""
        out = ["--cwd", str(self.cwd)]
        for flag, value in (("--manifest", self.manifest_path), ("--binding", self.binding),
                            ("--base", self.base), ("--head", self.head)):
            if value is not None:
                if value.startswith("-") or "\0" in value:
                    raise ToolFailure(f"{flag.lstrip('-')} {value!r} is not a valid value")
                out += [flag, value]
        switches = (("--no-cache", self.nocache), ("--no-compose", not self.compose), ("--supersede", self.supersede))
        out += [flag for flag, on in switches if on]  # --no-cache implies compose: false
        if self.pr is not None:
            out += ["--pr", f"https://github.com/{self.pr['repo']}/pull/{self.pr['number']}"]
        return out

    def env(self) -> dict[str, str]:
        """The run's environment: the server's, without the variables it keeps for itself (the GitHub
        token ``review_pr`` uses, ``[lanes].withhold_env``: :mod:`agentreview.host.secrets`), with the
        requester's session id."""
        from agentreview.host.secrets import lane_env

        env = lane_env()
        for name in ENV_SESSIONS:
            env.pop(name, None)
        requester = self.requester or next((os.environ[n] for n in ENV_SESSIONS if os.environ.get(n)), None)
        if requester:
            env[ENV_SESSIONS[0]] = requester
        return env


def registry() -> RunRegistry:
    from agentreview.host.home import home_dir
    from agentreview.runs.registry import RunRegistry

    return RunRegistry(home_dir())


DEFAULT_MAX_RUNS = 8  # agentreview mcp --max-runs


class RunBook:
    """The runs this server started: at most ``max_runs`` in flight, and (unless ``cancel_any``) the only
    ones ``review_cancel`` may stop. A stdio server serves one client, so this is that client's book."""

    def __init__(self, max_runs: int = DEFAULT_MAX_RUNS, cancel_any: bool = False) -> None:
        self.max_runs = max_runs
        self.cancel_any = cancel_any
        self.started: set[str] = set()
        self._in_flight: set[str] = set()
        self._lock = threading.Lock()

    def start(self, request: RunRequest) -> str:
        """Start the run detached and note it; a :class:`ToolFailure` when ``max_runs`` are still running."""
        with self._lock:
            for run_id in list(self._in_flight):
                current = poll(run_id)
                if current is not None and current.get("status") in SETTLED:
                    self._in_flight.discard(run_id)
            if len(self._in_flight) >= self.max_runs:
                raise ToolFailure(
                    f"{len(self._in_flight)} reviews this server started are still running (the limit is "
                    f"{self.max_runs}, agentreview mcp --max-runs): wait for one (review_status) or cancel one "
                    "(review_cancel), then call review_run again"
                )
            run_id = start(request)
            self.started.add(run_id)
            self._in_flight.add(run_id)
            return run_id

    def cancel(self, run_id: str) -> dict[str, Any]:
        """``review_cancel``: only a run this server started, unless it was started with ``--cancel-any``
        (an unknown runId answers ``not_found``, as ``agentreview cancel`` does)."""
        args.run_id(run_id)
        if not self.cancel_any and run_id not in self.started and registry().view(run_id) is not None:
            raise ToolFailure(
                f"review run '{run_id}' was not started by this server, which cancels only its own runs "
                "(start it with agentreview mcp --cancel-any to cancel any run of this host)"
            )
        return dict(registry().cancel(run_id))


def start(request: RunRequest) -> str:
    """Start the run detached; its runId. The record names the repository and requester from the
    first moment, so ``review_ledger`` (includeRunning) lists the run under its repository at once."""
    from agentreview.host import git
    from agentreview.runs.detach import start_detached

    env = request.env()
    try:
        root: Path | None = git.repo_root(request.cwd)
        remote: str | None = git.repo_remote(root) if root is not None else None
    except git.GitError:  # not a repository: the run itself says so, as its failure
        root, remote = None, None
    return str(
        start_detached(
            request.cli_args(), env=env, repo_root=root, repo_remote=remote,
            requester_session_id=env.get(ENV_SESSIONS[0]),
        )
    )


def view(run_id: str) -> dict[str, Any]:
    """The run's view, or the error review_status answers for an unknown run."""
    args.run_id(run_id)
    found = registry().view(run_id)
    if found is None:
        raise args.unknown_run(run_id)
    return dict(found)


# the request is gone: the run is told at once; the wait only lets its record say so before the server exits
ABANDON_WAIT_S = 5.0
# The review_run calls of this server waiting now: runId -> whether the call asked to detach.
WAITING: dict[str, bool] = {}


def abandon(run_id: str) -> dict[str, Any]:
    """Cancel a run whose waiting request went away (cancelled, or its client disconnected): its
    lanes are stopped and nothing is recorded. A run that finished first keeps its record."""
    return dict(registry().cancel(run_id, wait_s=ABANDON_WAIT_S))


def abandon_waiting() -> None:
    """Cancel every waiting run that did not ask to detach (the server is stopping): all are told
    at once, then given :data:`ABANDON_WAIT_S` together to say so."""
    runs = registry()
    mine = [run_id for run_id, detach in list(WAITING.items()) if not detach]
    for run_id in mine:
        runs.cancel(run_id, wait_s=0)
    deadline = time.monotonic() + ABANDON_WAIT_S
    while time.monotonic() < deadline and any((runs.record(r) or {}).get("status") == "running" for r in mine):
        time.sleep(0.05)


def running_rows(
    repo: str | None, repo_root_allowed: Callable[[str | None], bool] | None = None
) -> list[dict[str, Any]]:
    """Running runs as ``review_ledger`` rows (reference-notes 5.2: running rows); with
    ``repo_root_allowed``, only those of a repository root it takes."""
    rows = []
    for v in registry().running(repo, newest_first=True, repo_root_allowed=repo_root_allowed):
        rng = v.get("range") or {}
        row: dict[str, Any] = {"runId": v["runId"], "status": "running"}
        for key in ("reviewId", "binding", "repoRemote"):
            if v.get(key) is not None:
                row[key] = v[key]
        for key, value in (("requester", v.get("requesterSessionId")), ("baseSha", rng.get("base")),
                           ("headSha", rng.get("head")), ("createdAt", v.get("startedAt"))):  # fmt: skip
            if value:
                row[key] = value
        row["lanes"] = v.get("lanes", [])
        rows.append(row)
    return rows


def poll(run_id: str) -> dict[str, Any] | None:
    """The run's view as its record says now (None until the record exists)."""
    found = registry().view(run_id)
    return None if found is None else dict(found)


class Steps:
    """What a waiting ``review_run`` tells its caller: run started (with its runId), each lane started and
    finished, run ended; each step one progress notification (two a lane; one for a ledger answer) and one
    log message ``{runId, event, lane?, status?, message}``."""

    def __init__(self, run_id: str, progress: Progress, log: Log) -> None:
        self.run_id = run_id
        self._progress = progress
        self._log = log
        self._done = 0
        self._started: set[str] = set()
        self._finished: set[str] = set()

    async def _step(self, total: float | None, message: str, level: str = "info", **data: Any) -> None:
        await self._progress(self._done, total, message)
        await self._log(level, {"runId": self.run_id, **data, "message": message})

    async def started(self) -> None:
        await self._step(None, f"review {self.run_id}: started", event="run_started")

    async def seen(self, view: dict[str, Any]) -> None:
        """Report every step ``view`` shows that was not reported yet."""
        lanes = [lane for lane in view.get("lanes") or [] if isinstance(lane, dict) and lane.get("id")]
        served = bool(view.get("cached"))  # nothing ran: no lane starts
        total = len(lanes) * (1 if served else 2) or None
        for lane in lanes:  # every start before any end: the lanes start together
            lane_id, status = str(lane["id"]), str(lane.get("status"))
            if lane_id not in self._started and not served and (status == "running" or status in LANE_SETTLED):
                self._started.add(lane_id)
                self._done += 1
                await self._step(total, f"lane {lane_id}: started", event="lane_started", lane=lane_id)
        for lane in lanes:
            lane_id, status = str(lane["id"]), str(lane.get("status"))
            if status in LANE_SETTLED and lane_id not in self._finished:
                self._finished.add(lane_id)
                self._done += 1
                await self._step(total, f"lane {lane_id}: {status}", event="lane_finished", lane=lane_id,
                                 status=status)  # fmt: skip

    async def ended(self, view: dict[str, Any]) -> None:
        status = str(view.get("status"))
        verdict = f" ({view['verdict']}{', cached' if view.get('cached') else ''})" if view.get("verdict") else ""
        await self._log("info" if status == "done" else "warning", {
            "runId": self.run_id, "event": "run_finished", "status": status,
            "message": f"review {self.run_id}: {status}{verdict}"})  # fmt: skip


async def wait(
    run_id: str,
    steps: Steps,
    sleep: Callable[[float], Awaitable[None]],
    read: Callable[[], Awaitable[dict[str, Any] | None]],
) -> dict[str, Any]:
    """Read the run's view until it settles, telling ``steps`` what changed."""
    started = time.monotonic()
    while True:
        current = await read()
        if current is None:
            if time.monotonic() - started > START_GRACE_S:
                final = {"runId": run_id, "status": "failed", "error": "the run's record never appeared"}
                await steps.ended(final)
                return final
        else:
            await steps.seen(current)
            if current.get("status") in SETTLED:
                await steps.ended(current)
                return current
        await sleep(POLL_S)
