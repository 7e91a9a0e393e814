"""The command lane executor: ``sh -c <run>`` in its own process group, bounded in time, output and lifetime.

The change's code runs without the host's own variables, and nothing it starts outlives the lane or a killed
host. A shell exit of 126 or 127 is this host's missing program, not the change's fault: the lane is ``skipped``.
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

from agentreview.api import LaneOutcome, LaneRequest, lane_env, run_process_group

OUTPUT_LIMIT = 64 * 1024  # the tail of a lane's output kept for its result
CANCELLED_WHILE_RUNNING = "review cancelled while this lane was running"
CANCELLED_BEFORE_START = "review cancelled before this lane started"
# The shell's exits for a program it could not start (POSIX): the lane is skipped (incomplete), never fail.
NOT_RUNNABLE = {126: "a program it runs is not executable", 127: "a program it runs was not found"}

_lane_numbers = itertools.count(1)
_running: dict[int, threading.Event] = {}
_running_lock = threading.Lock()


def cancel_all() -> int:
    """Cancel every running lane now, as if its ``request.cancel`` were set (the host's own shutdown);
    return how many there were."""
    with _running_lock:
        lanes = list(_running.values())
    for cancelled in lanes:
        cancelled.set()
    return len(lanes)


class CommandLaneExecutor:
    """Runs ``kind: command`` lanes (registered by :mod:`agentreview_command.plugin`)."""

    kind = "command"

    def __init__(self, shell: str = "/bin/sh") -> None:
        self.shell = shell

    def run_lane(self, request: LaneRequest) -> LaneOutcome:
        """Run one command lane to completion; never raises, never leaves a process behind."""
        try:
            return _run(request, self.shell)
        except Exception as exc:
            return LaneOutcome.skipped(f"internal error in the command lane executor: {type(exc).__name__}: {exc}")

    @staticmethod
    def cancel_all() -> int:
        """See :func:`cancel_all` (a method too, so the core can call it on the registered object)."""
        return cancel_all()


def _resolve_cwd(request: LaneRequest) -> tuple[Path, str | None]:
    raw = getattr(request.check, "cwd", None)
    cwd = Path(request.repo_root) if not raw else Path(request.repo_root) / raw  # an absolute cwd wins the join
    if not cwd.exists():
        problem = "does not exist"
    elif not cwd.is_dir():
        problem = "is not a directory"
    else:
        return cwd, None
    check_id = getattr(request.check, "id", "?")
    return cwd, (
        f"could not start: cwd '{cwd}' {problem} (check '{check_id}', field cwd; "
        "a relative cwd resolves against the repository root)"
    )


def _run(request: LaneRequest, shell: str) -> LaneOutcome:
    check = request.check
    command = request.command if request.command is not None else getattr(check, "run", None)
    if not isinstance(command, str) or not command:
        return LaneOutcome.skipped(f"internal: check '{getattr(check, 'id', '?')}' has no command to run")
    cwd, cwd_error = _resolve_cwd(request)
    if cwd_error:
        return LaneOutcome.skipped(cwd_error)
    if request.cancel.is_set():
        return LaneOutcome.skipped(CANCELLED_BEFORE_START)
    timeout_ms = int(check.timeoutMs)
    deadline = time.monotonic() + timeout_ms / 1000
    number = next(_lane_numbers)
    cancelled = threading.Event()
    with _running_lock:
        _running[number] = cancelled
    try:
        result = run_process_group(
            [shell, "-c", command],
            cwd=cwd,
            env=lane_env(request.withheld_env),
            deadline=deadline,
            cancel=(request.cancel, cancelled),
            merge_stderr=True,
            keep="tail",
            max_output=OUTPUT_LIMIT,
            mark=True,
        )
    finally:
        with _running_lock:
            _running.pop(number, None)
    if result.spawn_error is not None:
        return LaneOutcome.skipped(f"could not start: {result.spawn_error}")
    if result.cancelled:
        return LaneOutcome.skipped(CANCELLED_WHILE_RUNNING)
    if result.timed_out:
        return LaneOutcome.timeout(f"exceeded {timeout_ms}ms and was killed", result.stdout_text())
    code = result.returncode if result.returncode is not None else 1
    if code in NOT_RUNNABLE:
        return LaneOutcome.skipped(not_runnable(code, result.stdout_text()))
    return LaneOutcome.exited(128 if code < 0 else code, result.stdout_text())


def not_runnable(code: int, output: str) -> str:
    """Why a lane whose shell exited 126 or 127 is ``skipped``: the shell's own words (its last line)
    and the fix. A program that is missing here is this host's environment, not the change's fault."""
    last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
    said = f": {last[:300]}" if last else ""
    return (
        f"could not run: the shell exited {code} ({NOT_RUNNABLE[code]}){said} — install the program or fix "
        "the check's run, then run the review again"
    )
