"""Shared helpers for the command lane tests: real requests, real /proc scans, a driver host process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

from agentreview.model.contracts import LaneRequest
from agentreview.model.manifest import CommandCheck

MARK_VAR = "CMDLANE_TEST_MARK"


def new_mark() -> str:
    return uuid.uuid4().hex


def request(
    command: str,
    *,
    repo_root: Path,
    timeout_ms: int = 30_000,
    cwd: str | None = None,
    cancel: threading.Event | None = None,
    bound: bool = True,
) -> LaneRequest:
    """A lane request as the core builds it (``bound=False`` leaves ``command`` unset, as for an old core)."""
    fields: dict[str, object] = {"id": "lint", "kind": "command", "run": command, "timeoutMs": timeout_ms}
    if cwd is not None:
        fields["cwd"] = cwd
    return LaneRequest(
        check=CommandCheck(**fields),
        review_id="review-test",
        repo_root=repo_root,
        base_sha="a" * 40,
        head_sha="b" * 40,
        placeholders={},
        run_dir=repo_root,
        cancel=cancel or threading.Event(),
        command=command if bound else None,
    )


def _is_zombie(pid: str) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return raw[raw.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")


def marked_pids(mark: str, exclude: tuple[int, ...] = ()) -> list[int]:
    """Live (non-zombie) processes whose environment or command line carries ``mark``."""
    needle = mark.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (os.getpid(), *exclude):
            continue
        try:
            blob = Path(f"/proc/{entry}/environ").read_bytes() + Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in blob and not _is_zombie(entry):
            found.append(int(entry))
    return found


def wait_until(predicate, timeout_s: float, interval_s: float = 0.02) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and not _is_zombie(str(pid))


DRIVER = textwrap.dedent(
    """
    import json, os, resource, sys, threading, time
    sys.path.insert(0, {helpers_dir!r})
    from cmdlane_helpers import request
    from pathlib import Path
    from agentreview.host.procs import watchdog
    from agentreview_command.executor import CommandLaneExecutor

    mode, command, lanes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    executor = CommandLaneExecutor()
    root = Path(os.getcwd())
    if mode == "hold":
        for _ in range(lanes):
            threading.Thread(target=executor.run_lane, args=(request(command, repo_root=root),), daemon=True).start()
        deadline = time.monotonic() + 10
        while watchdog.get().pid is None and time.monotonic() < deadline:
            time.sleep(0.01)
        print(json.dumps({{"watchdog": watchdog.get().pid}}), flush=True)
        time.sleep(600)
    else:
        outcome = executor.run_lane(request(command, repo_root=root))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({{"kind": outcome.kind, "exit_code": outcome.exit_code, "output_len": len(outcome.output),
                          "tail": outcome.output[-40:], "maxrss_kb": usage.ru_maxrss}}), flush=True)
    """
)


def start_driver(
    tmp_path: Path, mode: str, command: str, lanes: int = 1, new_session: bool = False
) -> subprocess.Popen[str]:
    """A separate host process running the executor (``hold``: lanes in threads, then sleep; ``once``: one lane)."""
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(helpers_dir=str(Path(__file__).parent)))
    env = dict(os.environ, AGENTREVIEW_HOME=str(tmp_path / "home"))
    return subprocess.Popen(
        [sys.executable, str(script), mode, command, str(lanes)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=new_session,
    )
