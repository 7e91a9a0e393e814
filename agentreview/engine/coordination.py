"""Coordination between concurrent runs on one host: joining identical requests and superseding older ones.

Identical requests (the reference's request key) serialize on a file lock; ``--supersede`` SIGTERMs runs of the
same repository, binding and base at an older head. Files under the home are read bounded and written atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agentreview.host.files import FileWriteError, UnreadableFileError, atomic_write_text, read_regular_file
from agentreview.host.locks import is_held
from agentreview.model.digests import sha256_hex
from agentreview.model.errors import AgentreviewError

# ``<name>.tmp.<pid>.<hex>``: the temporary file of an atomic write (agentreview.host.files).
TEMP_NAME = re.compile(r"^.+\.tmp\.(\d+)\.[0-9a-f]+\Z")
# A temporary file this old whose writer is gone is debris, not a write in progress.
STALE_TEMP_S = 60.0


def join_key(key: tuple[str, str, str, str], *, no_cache: bool) -> str:
    """What makes two requests identical for joining: the ledger key and ``--no-cache``."""
    return sha256_hex(chr(0).join([*key, "no-cache" if no_cache else "cache"]))


def join_lock_path(slug_dir: Path, key: str) -> Path:
    return slug_dir / "locks" / f"{key[:32]}.lock"


@dataclass
class InflightRun:
    """One running review of this host, as its in-flight marker records it: who runs it and over which range."""

    run_id: str
    pid: int
    repo_root: str
    binding: str
    base_sha: str
    head_sha: str
    join_key: str = ""  # empty for a run that never joins (headless)


class InflightRegistry:
    """This host's record of running reviews for one repository."""

    def __init__(self, slug_dir: Path):
        self.dir = slug_dir / "inflight"

    @contextlib.contextmanager
    def advertise(self, run: InflightRun) -> Iterator[None]:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FileWriteError(self.dir, exc) from exc
        self.running()  # clears what dead runs left behind
        lock_path = self.dir / f"{run.run_id}.lock"
        info_path = self.dir / f"{run.run_id}.json"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if os.path.islink(lock_path) or os.path.exists(lock_path):
                raise AgentreviewError(
                    f"{lock_path}: cannot open the in-flight lock ({exc.strerror or exc}) — remove it and run again"
                ) from exc
            raise FileWriteError(lock_path, exc) from exc
        owned = False  # files we refused are not ours to remove
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise AgentreviewError(f"{lock_path}: not a regular file — remove it and run again")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh run id: nobody else may hold it
            except BlockingIOError as exc:
                raise AgentreviewError(f"{lock_path}: held by another process — is a run id reused?") from exc
            owned = True
            atomic_write_text(info_path, json.dumps(run.__dict__), durable=False)
            yield
        finally:
            for path in (info_path, lock_path) if owned else ():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            os.close(fd)

    def superseded_by(self, run_id: str) -> str | None:
        marker = self.dir / f"{run_id}.superseded"
        try:
            data = read_regular_file(marker, limit=4096, follow_symlinks=False)
        except UnreadableFileError:
            return None
        return data.decode("utf-8", "replace").strip() or None

    def clear_marker(self, run_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.dir / f"{run_id}.superseded").unlink()

    def running(self) -> list[InflightRun]:
        runs: list[InflightRun] = []
        if not self.dir.is_dir():
            return runs
        for path in self.dir.glob("*.json"):
            try:
                data = json.loads(read_regular_file(path, limit=65536, follow_symlinks=False))
                run = InflightRun(**data)
            except (OSError, ValueError, TypeError):
                continue
            if path.name != f"{run.run_id}.json":  # a record names only its own files
                continue
            lock = self.dir / f"{run.run_id}.lock"
            if is_held(lock):
                runs.append(run)
            else:  # its process is gone: the record is debris, and so is its lock if a run made it
                with contextlib.suppress(OSError):
                    path.unlink()
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(lock.lstat().st_mode):  # a FIFO or link planted here is not ours
                        lock.unlink()
        self._sweep_temp_files()
        return runs

    def holders(self, key: str, me: str) -> set[str]:
        """The run ids of live runs with join key ``key`` other than ``me``: the runs a waiter may join."""
        return {run.run_id for run in self.running() if run.join_key == key and run.run_id != me}

    def _sweep_temp_files(self) -> None:
        """Remove temporary files of interrupted writes whose writing process is gone."""
        now = time.time()
        try:
            names = list(self.dir.iterdir())
        except OSError:
            return
        for path in names:
            match = TEMP_NAME.match(path.name)
            if match is None:
                continue
            try:
                if now - path.lstat().st_mtime < STALE_TEMP_S or _pid_alive(int(match.group(1))):
                    continue
                path.unlink()
            except OSError:
                continue

    def supersede(self, me: InflightRun, is_ancestor: Callable[[str, str], bool]) -> list[str]:
        """Cancel older runs this one replaces; returns their run ids."""
        cancelled: list[str] = []
        for other in self.running():
            same_range = other.binding == me.binding and other.base_sha == me.base_sha
            if other.run_id == me.run_id or not same_range or other.head_sha == me.head_sha:
                continue
            if other.repo_root != me.repo_root and not is_ancestor(other.head_sha, me.head_sha):
                continue  # neither this checkout nor this line of history
            atomic_write_text(self.dir / f"{other.run_id}.superseded", me.run_id)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(other.pid, signal.SIGTERM)
            cancelled.append(other.run_id)
        return cancelled


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
