"""Where every run on this host says what it is doing, for other processes to read and cancel.

A run is alive only while it holds its ``flock`` (a pid could be reused); records are read bounded, since
anything under the home may be planted. A pruned cached run's record moves to ``runs/served/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import stat
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentreview.host.files import UnreadableFileError, atomic_write_text, read_regular_file
from agentreview.host.home import ledger_root, runs_dir
from agentreview.host.locks import is_held
from agentreview.model.digests import json_text

RUN_ID = re.compile(r"^review-[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
ENV_LOCK_FD = "AGENTREVIEW_RUN_LOCK_FD"  # a detached run's inherited lock (see module doc)
RECORD_LIMIT = 1 << 20
KEEP_FINISHED = 200
KEEP_DAYS = 7
SERVED_DIR = "served"  # the records of pruned cached runs (see the module doc)
KEEP_SERVED = 10_000
STATUSES = ("running", "done", "cancelled", "failed")
DIED = "the run's process ended without finishing the run (killed, or it crashed)"

# Runs of this process whose cancel event the registry may set directly (an in-thread run).
_local_cancels: dict[str, threading.Event] = {}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class RunRegistry:
    """The run records of one ``$AGENTREVIEW_HOME``; cheap to make, safe to share between threads."""

    def __init__(self, home: Path):
        self.home = Path(home)
        self.dir = runs_dir(self.home)
        self._mutex = threading.Lock()
        self._locks: dict[str, int] = {}  # run id -> the fd holding its lock (runs of this process)
        self._records: dict[str, dict[str, Any]] = {}  # run id -> its record (runs of this process)

    # ------------------------------------------------------------------ paths

    def _path(self, run_id: str, suffix: str) -> Path:
        if not RUN_ID.match(run_id):
            raise ValueError(f"run id '{run_id}' is not a review run id (expected review-<id>)")
        return self.dir / f"{run_id}{suffix}"

    def record_path(self, run_id: str) -> Path:
        return self._path(run_id, ".json")

    def lock_path(self, run_id: str) -> Path:
        return self._path(run_id, ".lock")

    def log_path(self, run_id: str) -> Path:
        return self._path(run_id, ".log")

    def _make_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    # ------------------------------------------------------------------ the run's side

    def hold_lock(self, run_id: str) -> int:
        """Take (or adopt, for a detached child) the run's lock; kept until :meth:`finish`."""
        with self._mutex:
            if run_id in self._locks:
                return self._locks[run_id]
            self._make_dir()
            path = self.lock_path(run_id)
            fd = self._adopt(path)
            if fd is None:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(f"{path}: not a regular file — remove it")
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BaseException:
                    os.close(fd)
                    raise
            self._locks[run_id] = fd
            return fd

    @staticmethod
    def _adopt(path: Path) -> int | None:
        """The lock descriptor a detaching parent passed down, when it is this run's lock file."""
        value = os.environ.get(ENV_LOCK_FD, "")
        if not value.isdigit():
            return None
        fd = int(value)
        try:
            held, mine = os.fstat(fd), os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        if (held.st_dev, held.st_ino) != (mine.st_dev, mine.st_ino) or not stat.S_ISREG(held.st_mode):
            return None  # not our lock: leave whatever that descriptor is alone
        os.environ.pop(ENV_LOCK_FD, None)
        os.set_inheritable(fd, False)  # lane processes must not keep the run "alive"
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already (same open file): never blocks
        return fd

    def release_lock(self, run_id: str) -> None:
        """Close this process's descriptor of the lock (a detaching parent, once the child holds it)."""
        with self._mutex:
            self._records.pop(run_id, None)
            fd = self._locks.pop(run_id, None)
            if fd is not None:
                os.close(fd)

    def _write(self, run_id: str, record: dict[str, Any]) -> None:
        self._make_dir()
        atomic_write_text(self.record_path(run_id), json_text(record, indent=None), durable=False)

    def begin(
        self,
        run_id: str,
        *,
        pid: int | None,
        repo_root: Path | str | None,
        repo_remote: str | None,
        binding: str | None,
        base_sha: str | None,
        head_sha: str | None,
        requester_session_id: str | None,
        review_id: str | None = None,
        signal_cancels: bool = True,
        cancel_event: threading.Event | None = None,
    ) -> None:
        """The run has started: write its record as ``running`` and hold its lock until :meth:`finish`;
        called again once the plan is known, keeping the start time and lanes."""
        self.hold_lock(run_id)
        with self._mutex:
            previous = self._records.get(run_id) or self._read(run_id) or {}
            before: dict[str, Any] = previous["range"] if isinstance(previous.get("range"), dict) else {}
            record: dict[str, Any] = {
                "runId": run_id,
                "status": "running",
                "pid": pid,
                "signalCancels": signal_cancels,
                # what an earlier begin knew (the detaching parent's cwd, say) stands until this one knows better
                "repoRoot": str(repo_root) if repo_root is not None else previous.get("repoRoot"),
                "repoRemote": repo_remote or previous.get("repoRemote"),
                "reviewId": review_id or previous.get("reviewId"),
                "binding": binding or previous.get("binding"),
                "range": {"base": base_sha or before.get("base"), "head": head_sha or before.get("head")},
                "requesterSessionId": requester_session_id or previous.get("requesterSessionId"),
                "lanes": previous.get("lanes") or [],
                "startedAt": previous.get("startedAt") or _now(),
            }
            first = run_id not in self._records
            self._records[run_id] = record
            self._write(run_id, record)
        if cancel_event is not None and pid == os.getpid():
            _local_cancels[run_id] = cancel_event
        if first:  # once per run, not again when the plan is known
            self.prune()

    def lanes_started(self, run_id: str, lane_ids: list[str], head_sha: str | None = None) -> None:
        """Every lane is running (and the head is frozen): the view lists them before any finishes."""
        with self._mutex:
            record = self._records.get(run_id)
            if record is None:
                return
            record["lanes"] = [{"id": lane_id, "status": "running"} for lane_id in lane_ids]
            if head_sha:
                record["range"] = {**record["range"], "head": head_sha}
            self._write(run_id, record)

    def lane(self, run_id: str, lane_id: str, status: str) -> None:
        """One lane finished with ``status``."""
        with self._mutex:
            record = self._records.get(run_id)
            if record is None:
                return
            lanes = record.setdefault("lanes", [])
            for lane in lanes:
                if lane["id"] == lane_id:
                    lane["status"] = status
                    break
            else:
                lanes.append({"id": lane_id, "status": status})
            self._write(run_id, record)

    def finish(
        self,
        run_id: str,
        *,
        status: str,
        verdict: str | None = None,
        ledger_key: dict[str, str] | None = None,
        attestation_path: str | None = None,
        attestation_run_id: str | None = None,
        error: str | None = None,
        lanes: list[dict[str, str]] | None = None,
        review_id: str | None = None,
        cached: bool | None = None,
        signing_error: str | None = None,
        superseded_by: str | None = None,
    ) -> None:
        """The run ended: write its final record, then let go of its lock.

        ``cached``: the attestation was served from the ledger (or from an identical run in
        flight), not made by this run; ``attestation_run_id`` then names the run that made it."""
        if status not in ("done", "cancelled", "failed"):
            raise ValueError(f"a run finishes done, cancelled or failed, not {status!r}")
        _local_cancels.pop(run_id, None)
        with self._mutex:
            record = self._records.pop(run_id, None) or self._read(run_id) or {"runId": run_id, "lanes": []}
            record.update(status=status, finishedAt=_now())
            for lane in record.get("lanes") or []:
                if isinstance(lane, dict) and lane.get("status") == "running":  # killed, or never started
                    lane["status"] = status
            for name, value in (
                ("verdict", verdict),
                ("ledgerKey", ledger_key),
                ("attestationPath", attestation_path),
                ("attestationRunId", attestation_run_id),
                ("error", error),
                ("lanes", lanes),
                ("reviewId", review_id),
                ("cached", cached),
                ("signingError", signing_error),
                ("supersededBy", superseded_by),
            ):
                if value is not None:
                    record[name] = value
            try:
                self._write(run_id, record)
            finally:
                fd = self._locks.pop(run_id, None)
                if fd is not None:
                    os.close(fd)
            with contextlib.suppress(OSError):
                self._path(run_id, ".cancel").unlink()

    def cancel_requested(self, run_id: str) -> bool:
        """Whether :meth:`cancel` asked this run to stop (the run polls this)."""
        try:
            return stat.S_ISREG(self._path(run_id, ".cancel").lstat().st_mode)
        except OSError:
            return False

    # ------------------------------------------------------------------ everyone else's side

    def _read(self, run_id: str, folder: str = "") -> dict[str, Any] | None:
        path = self.dir / folder / f"{run_id}.json" if folder else self.record_path(run_id)
        try:
            data = json.loads(read_regular_file(path, limit=RECORD_LIMIT, follow_symlinks=False))
        except (UnreadableFileError, OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("runId") != run_id or data.get("status") not in STATUSES:
            return None
        return data

    def alive(self, run_id: str) -> bool:
        """Whether the run's process still holds its lock."""
        return run_id in self._locks or is_held(self.lock_path(run_id))

    def record(self, run_id: str) -> dict[str, Any] | None:
        """The stored record, with ``running`` turned into ``failed`` when its process is gone."""
        if not RUN_ID.match(run_id):
            return None
        data = self._read(run_id)
        if data is not None and data["status"] == "running" and not self.alive(run_id):
            data = self._read(run_id)  # it may have finished between the two reads
            if data is not None and data["status"] == "running":
                data.update(status="failed", error=DIED)
        return data

    def view(self, run_id: str) -> dict[str, Any] | None:
        """The reference host's view of a run, or None for an unknown id; a run whose record is gone but
        whose attestation is in the ledger is ``done``, its view taken from the ledger."""
        data = self.record(run_id)
        if data is not None:
            return self._view(data)
        if not RUN_ID.match(run_id):
            return None
        view = self._ledger_view(run_id)
        served = self._read(run_id, SERVED_DIR) if view is None else None  # a pruned cached run's kept record
        return view or (self._view(served) if served and served["status"] == "done" else None)

    def _ledger_view(self, run_id: str) -> dict[str, Any] | None:
        from agentreview.store.ledger import Ledger

        root = ledger_root(self.home)
        if not root.is_dir():
            return None
        try:
            with Ledger(root) as ledger:
                rows = ledger.list(run_id=run_id, limit=1)
        except (OSError, ValueError):
            return None
        if not rows:
            return None
        row = rows[0].to_json()
        return self._view(
            {
                "runId": run_id,
                "status": "done",
                "reviewId": row.get("reviewId"),
                "binding": row.get("binding"),
                "repoRemote": row.get("repoRemote"),
                "range": {"base": row.get("baseSha"), "head": row.get("headSha")},
                "ledgerKey": {
                    "repoRemote": row.get("repoRemote"),
                    "manifestSha": row.get("manifestSha"),
                    "binding": row.get("binding"),
                    "rangeSha": row.get("rangeSha"),
                },
                "attestationPath": str(rows[0].path),
                "attestationRunId": run_id,
                "verdict": row.get("verdict"),
            }
        )

    def _view(self, data: dict[str, Any]) -> dict[str, Any]:
        """The reference's run view of one record (reference-notes 5.2); a done run's attestation is read
        from the ledger, and a run whose entry a later run of the same key replaced says ``superseded``."""
        rng: dict[str, Any] = data["range"] if isinstance(data.get("range"), dict) else {}
        view: dict[str, Any] = {
            "runId": data["runId"],
            "status": data["status"],
            "lanes": [
                {"id": str(lane.get("id")), "status": str(lane.get("status"))}
                for lane in data.get("lanes") or []
                if isinstance(lane, dict)
            ],
            "binding": data.get("binding"),
            "range": {"base": rng.get("base"), "head": rng.get("head")},
        }
        for name in ("reviewId", "repoRemote", "requesterSessionId", "startedAt", "verdict", "error", "signingError"):
            if isinstance(data.get(name), str) and data[name]:
                view[name] = data[name]
        if isinstance(data.get("supersededBy"), str):
            view.update(superseded=True, supersededBy=data["supersededBy"])
        if data["status"] == "done":
            served = data.get("attestationRunId")
            view["cached"] = bool(data.get("cached")) or (isinstance(served, str) and served != data["runId"])
            attestation, replaced_by = self._attestation(data)
            if attestation is not None:
                view["attestation"] = attestation
                view["verdict"] = attestation.get("verdict", view.get("verdict"))
                view["reviewId"] = attestation.get("reviewId", view.get("reviewId"))
                view["lanes"] = [
                    {"id": lane.get("id"), "status": lane.get("status")} for lane in attestation.get("lanes") or []
                ]
                target = attestation.get("target") or {}
                view["range"] = {"base": target.get("baseSha"), "head": target.get("headSha")}
                if isinstance(data.get("attestationPath"), str):
                    view["ledgerPath"] = data["attestationPath"]
            elif replaced_by is not None:
                view.update(superseded=True, supersededBy=replaced_by)
        return view

    def _attestation(self, data: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """The recorded attestation of a finished run, from the ledger; else None and, when a later
        run of the same key replaced it, that run's id."""
        key = data.get("ledgerKey")
        if not isinstance(key, dict):
            return None, None
        from agentreview.store.ledger import Ledger

        try:
            with Ledger(ledger_root(self.home)) as ledger:
                entry = ledger.get(key["repoRemote"], key["manifestSha"], key["binding"], key["rangeSha"])
        except (KeyError, TypeError, OSError, ValueError):
            return None, None
        if entry is None:
            return None, None
        att = entry.attestation
        if data.get("attestationRunId") and att.runId != data["attestationRunId"]:
            return None, att.runId  # a later run of the same key replaced it
        result: dict[str, Any] = att.to_json_dict()
        return result, None

    def running(
        self,
        cwd_repo_remote: str | None = None,
        *,
        newest_first: bool = False,
        repo_root_allowed: Callable[[str | None], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """The views of every live run on this host (of one repository, or the roots ``repo_root_allowed``
        takes, when given), oldest first unless ``newest_first``."""
        out: list[tuple[str, dict[str, Any]]] = []
        for path in self._record_files():
            run_id = path.name[: -len(".json")]
            data = self.record(run_id)
            if data is None or data["status"] != "running":
                continue
            if cwd_repo_remote is not None and data.get("repoRemote") != cwd_repo_remote:
                continue
            if repo_root_allowed is not None:
                root = data.get("repoRoot")
                if not repo_root_allowed(root if isinstance(root, str) else None):
                    continue
            out.append((str(data.get("startedAt") or ""), self._view(data)))
        out.sort(key=lambda pair: pair[0], reverse=newest_first)
        return [view for _, view in out]

    def _record_files(self, folder: str = "") -> list[Path]:
        try:
            return [p for p in (self.dir / folder).iterdir() if p.name.endswith(".json") and RUN_ID.match(p.name[:-5])]
        except OSError:
            return []

    def cancel(self, run_id: str, *, wait_s: float = 15.0) -> dict[str, Any]:
        """Ask a running run to stop, and wait briefly for it to say ``cancelled``."""
        data = self.record(run_id)
        if data is None:
            return {"runId": run_id, "cancelled": False, "status": "not_found"}
        if data["status"] != "running":
            return {"runId": run_id, "cancelled": False, "status": data["status"]}
        self._make_dir()
        atomic_write_text(self._path(run_id, ".cancel"), "cancel\n")
        local = _local_cancels.get(run_id)
        pid = data.get("pid")
        if local is not None and pid == os.getpid():
            local.set()
        elif data.get("signalCancels") and isinstance(pid, int) and pid > 1 and self.alive(run_id):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while True:
            data = self.record(run_id) or data
            if data["status"] != "running" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        return {"runId": run_id, "cancelled": data["status"] == "cancelled", "status": data["status"]}

    def prune(self, *, keep: int = KEEP_FINISHED, days: float = KEEP_DAYS, keep_served: int = KEEP_SERVED) -> None:
        """Remove finished (or dead) runs' files beyond the newest ``keep`` or older than ``days``; a
        cached run's record goes to ``served/``, which keeps the newest ``keep_served``."""
        finished: list[tuple[float, str]] = []
        for path in self._record_files():
            run_id = path.name[:-5]
            if run_id in self._locks or self.alive(run_id):
                continue
            with contextlib.suppress(OSError):
                finished.append((path.lstat().st_mtime, run_id))
        finished.sort(reverse=True)
        cutoff = time.time() - days * 86400
        kept_served = False
        for index, (mtime, run_id) in enumerate(finished):
            if index < keep and mtime >= cutoff:
                continue
            kept_served = self._keep_served(run_id) or kept_served
            for suffix in (".json", ".lock", ".log", ".cancel"):
                with contextlib.suppress(OSError):
                    path = self._path(run_id, suffix)
                    if not path.is_symlink() and path.is_dir():
                        continue
                    path.unlink()
        if kept_served:
            self._prune_served(keep_served)

    def _keep_served(self, run_id: str) -> bool:
        """Move a finished cached run's record to ``served/`` (see the module doc); whether it was."""
        data = self._read(run_id)
        if data is None or data["status"] != "done" or not isinstance(data.get("ledgerKey"), dict):
            return False
        served = data.get("attestationRunId")
        if not isinstance(served, str) or served == run_id:
            return False
        folder = self.dir / SERVED_DIR
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            if folder.is_symlink() or not folder.is_dir():
                return False
            os.replace(self.record_path(run_id), folder / f"{run_id}.json")
        except OSError:
            return False
        return True

    def _prune_served(self, keep: int) -> None:
        """Remove the kept records of cached runs beyond the newest ``keep``."""
        kept: list[tuple[float, Path]] = []
        for path in self._record_files(SERVED_DIR):
            with contextlib.suppress(OSError):
                kept.append((path.lstat().st_mtime, path))
        kept.sort(reverse=True)
        for _mtime, path in kept[keep:]:
            with contextlib.suppress(OSError):
                path.unlink()
