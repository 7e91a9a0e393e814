"""``review_run``, ``review_status`` and ``review_cancel`` over this host's run registry.

A run asked for through MCP is an ordinary detached ``agentreview run`` (the run registry's
``start_detached``): it gets its runId at once, its status record is readable by every other
process (``agentreview status``, another MCP server), it outlives this server, and
``review_cancel`` stops it exactly as ``agentreview cancel`` does. ``wait: true`` polls that
record until the run settles, reporting each finished lane as progress.
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
        if self.nocache:
            out.append("--no-cache")  # implies compose: false
        if not self.compose:
            out.append("--no-compose")
        if self.supersede:
            out.append("--supersede")
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
        from agentreview.runs.detach import start_detached

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
            run_id = str(start_detached(request.cli_args(), env=request.env()))
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


def view(run_id: str) -> dict[str, Any]:
    """The run's view, or the error review_status answers for an unknown run."""
    args.run_id(run_id)
    found = registry().view(run_id)
    if found is None:
        raise ToolFailure(f"review run '{run_id}' not found")
    return dict(found)


def running_rows(repo: str | None) -> list[dict[str, Any]]:
    """Running runs as ``review_ledger`` rows (reference-notes 5.2: running rows)."""
    rows = []
    for v in registry().running(repo):
        rng = v.get("range") or {}
        row: dict[str, Any] = {"runId": v["runId"], "status": "running"}
        for key in ("reviewId", "binding", "repoRemote"):
            if v.get(key) is not None:
                row[key] = v[key]
        if v.get("requesterSessionId"):
            row["requester"] = v["requesterSessionId"]
        if rng.get("base"):
            row["baseSha"] = rng["base"]
        if rng.get("head"):
            row["headSha"] = rng["head"]
        if v.get("startedAt"):
            row["createdAt"] = v["startedAt"]
        row["lanes"] = v.get("lanes", [])
        rows.append(row)
    return rows


def poll(run_id: str) -> dict[str, Any] | None:
    """The run's view as its record says now (None until the record exists)."""
    found = registry().view(run_id)
    return None if found is None else dict(found)


async def wait(
    run_id: str,
    progress: Progress,
    sleep: Callable[[float], Awaitable[None]],
    read: Callable[[], Awaitable[dict[str, Any] | None]],
) -> dict[str, Any]:
    """Read the run's view until it settles; each newly finished lane is one progress step."""
    reported: set[str] = set()
    started = time.monotonic()
    while True:
        current = await read()
        if current is None:
            if time.monotonic() - started > START_GRACE_S:
                return {"runId": run_id, "status": "failed", "error": "the run's record never appeared"}
        else:
            lanes = current.get("lanes") or []
            for lane in lanes:
                if lane.get("status") in LANE_SETTLED and lane["id"] not in reported:
                    reported.add(lane["id"])
                    await progress(len(reported), len(lanes) or None, f"lane {lane['id']}: {lane['status']}")
            if current.get("status") in SETTLED:
                return current
        await sleep(POLL_S)
