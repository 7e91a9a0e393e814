"""The command lane executor against real shells, real process groups and real signals."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from agentreview_command.executor import (
    CANCELLED_BEFORE_START,
    CANCELLED_WHILE_RUNNING,
    CommandLaneExecutor,
    cancel_all,
)
from cmdlane_helpers import marked_pids, new_mark, pid_alive, request, wait_until

from agentreview.host.procs import watchdog
from agentreview.plugins.registry import load_registry


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


@pytest.fixture
def executor() -> CommandLaneExecutor:
    return CommandLaneExecutor()


# --------------------------------------------------------------------------- exit codes and output


def test_exit_zero(executor, tmp_path):
    outcome = executor.run_lane(request("true", repo_root=tmp_path))
    assert (outcome.kind, outcome.exit_code, outcome.output) == ("exited", 0, "")


def test_non_zero_exit_keeps_merged_output_in_order(executor, tmp_path):
    outcome = executor.run_lane(request("echo out; echo err >&2; echo out2; exit 7", repo_root=tmp_path))
    assert (outcome.kind, outcome.exit_code) == ("exited", 7)
    assert outcome.output == "out\nerr\nout2\n"


def test_shell_killed_by_a_signal_is_128(executor, tmp_path):
    outcome = executor.run_lane(request("echo before; kill -KILL $$", repo_root=tmp_path))
    assert (outcome.kind, outcome.exit_code, outcome.output) == ("exited", 128, "before\n")


def test_stdin_is_dev_null(executor, tmp_path):
    outcome = executor.run_lane(request("cat; echo read-done", repo_root=tmp_path, timeout_ms=5000))
    assert (outcome.kind, outcome.exit_code, outcome.output) == ("exited", 0, "read-done\n")


def test_bound_command_wins_over_check_run(executor, tmp_path):
    req = request("echo raw {{head}}", repo_root=tmp_path)
    bound = type(req)(**{**req.__dict__, "command": "echo bound"})
    assert executor.run_lane(bound).output == "bound\n"


def test_falls_back_to_check_run_when_core_did_not_bind(executor, tmp_path):
    outcome = executor.run_lane(request("echo from-run", repo_root=tmp_path, bound=False))
    assert outcome.output == "from-run\n"


def test_lane_runs_in_its_own_session_with_the_host_marker(executor, tmp_path):
    guard = watchdog.get()
    outcome = executor.run_lane(
        request(f'echo "$$ $(ps -o pgid= -p $$) $(ps -o sid= -p $$) ${guard.marker}"', repo_root=tmp_path)
    )
    pid, pgid, sid, number = outcome.output.split()
    assert pid == pgid == sid  # leader of its own group and session
    assert int(pgid) != os.getpgrp()
    assert number.isdigit()


def test_invalid_utf8_output_is_replaced_not_fatal(executor, tmp_path):
    outcome = executor.run_lane(request(r"printf 'ok \377\376 end'", repo_root=tmp_path))
    assert outcome.kind == "exited"
    assert outcome.output == "ok \ufffd\ufffd end"


# --------------------------------------------------------------------------- cwd


def test_relative_cwd_resolves_against_repo_root(executor, tmp_path):
    (tmp_path / "sub" / "dir").mkdir(parents=True)
    outcome = executor.run_lane(request("pwd", repo_root=tmp_path, cwd="sub/dir"))
    assert Path(outcome.output.strip()).resolve() == (tmp_path / "sub" / "dir").resolve()


def test_no_cwd_is_repo_root(executor, tmp_path):
    outcome = executor.run_lane(request("pwd", repo_root=tmp_path))
    assert Path(outcome.output.strip()).resolve() == tmp_path.resolve()


def test_absolute_cwd_is_used_as_is(executor, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    outcome = executor.run_lane(request("pwd", repo_root=tmp_path / "repo", cwd=str(other)))
    assert Path(outcome.output.strip()).resolve() == other.resolve()


def test_missing_cwd_is_skipped_with_a_clear_error(executor, tmp_path):
    mark = new_mark()
    outcome = executor.run_lane(request(f"echo {mark} > ran", repo_root=tmp_path, cwd="no/such"))
    assert outcome.kind == "skipped"
    assert outcome.error is not None
    assert outcome.error.startswith("could not start: cwd ")
    assert "does not exist" in outcome.error and "'lint'" in outcome.error and "field cwd" in outcome.error
    assert not (tmp_path / "ran").exists()


def test_cwd_that_is_a_file_is_skipped(executor, tmp_path):
    (tmp_path / "afile").write_text("x")
    outcome = executor.run_lane(request("true", repo_root=tmp_path, cwd="afile"))
    assert outcome.kind == "skipped" and "is not a directory" in (outcome.error or "")


# --------------------------------------------------------------------------- spawn failures, never raising


def test_argument_too_long_is_a_spawn_failure(executor, tmp_path):
    # Linux caps one argv string at 128 KiB: execve fails with E2BIG, a real spawn failure.
    outcome = executor.run_lane(request("true " + "x" * 300_000, repo_root=tmp_path))
    assert outcome.kind == "skipped"
    assert (outcome.error or "").startswith("could not start: ")
    assert "too long" in (outcome.error or "").lower()


def test_missing_shell_is_a_spawn_failure(tmp_path):
    outcome = CommandLaneExecutor(shell=str(tmp_path / "no-shell")).run_lane(request("true", repo_root=tmp_path))
    assert outcome.kind == "skipped"
    assert (outcome.error or "").startswith("could not start: ")
    assert "no-shell" in (outcome.error or "")


def test_nul_byte_in_command_is_a_spawn_failure(executor, tmp_path):
    outcome = executor.run_lane(request("echo a\0b", repo_root=tmp_path))
    assert outcome.kind == "skipped" and (outcome.error or "").startswith("could not start: ")


def test_unexpected_error_becomes_skipped_never_raises(executor, tmp_path):
    req = request("true", repo_root=tmp_path)
    broken = type(req)(**{**req.__dict__, "check": object()})  # a check with no fields at all
    outcome = executor.run_lane(broken)
    assert outcome.kind == "skipped" and outcome.error


def test_cancel_before_start_runs_nothing(executor, tmp_path):
    cancel = threading.Event()
    cancel.set()
    outcome = executor.run_lane(request("touch ran", repo_root=tmp_path, cancel=cancel))
    assert (outcome.kind, outcome.error) == ("skipped", CANCELLED_BEFORE_START)
    assert not (tmp_path / "ran").exists()


# --------------------------------------------------------------------------- timeout, cancel, stragglers


def test_timeout_kills_the_whole_group_including_grandchildren(executor, tmp_path):
    mark = new_mark()
    started = time.monotonic()
    outcome = executor.run_lane(
        request(f"export M={mark}; echo started; sleep 60 & sleep 60; wait", repo_root=tmp_path, timeout_ms=600)
    )
    elapsed = time.monotonic() - started
    assert outcome.kind == "timeout"
    assert outcome.error == "exceeded 600ms and was killed"
    assert outcome.output == "started\n"
    assert 0.6 <= elapsed < 0.6 + 1.5  # generous for a loaded CI machine
    assert marked_pids(mark) == []


@pytest.mark.slow
def test_term_ignoring_lane_is_sigkilled_after_five_seconds(executor, tmp_path):
    mark = new_mark()
    started = time.monotonic()
    outcome = executor.run_lane(
        request(f"export M={mark}; trap '' TERM; sleep 60 & sleep 60; wait", repo_root=tmp_path, timeout_ms=300)
    )
    elapsed = time.monotonic() - started
    assert outcome.kind == "timeout"
    assert 0.3 + 5.0 <= elapsed < 0.3 + 5.0 + 2.0
    assert marked_pids(mark) == []


def test_cancel_event_skips_and_kills_the_group(executor, tmp_path):
    mark = new_mark()
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    outcome = executor.run_lane(
        request(f"export M={mark}; sleep 60 & sleep 60; wait", repo_root=tmp_path, cancel=cancel)
    )
    assert (outcome.kind, outcome.error) == ("skipped", CANCELLED_WHILE_RUNNING)
    assert time.monotonic() - started < 2.0
    assert marked_pids(mark) == []


def test_cancel_all_stops_every_running_lane(executor, tmp_path):
    mark = new_mark()
    results: list = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                executor.run_lane(request(f"export M={mark}; sleep 60 & sleep 60; wait", repo_root=tmp_path))
            )
        )
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    assert wait_until(lambda: len(marked_pids(mark)) >= 9, 5)  # three shells, six sleeps
    time.sleep(0.05)
    assert cancel_all() == 3
    for thread in threads:
        thread.join(10)
    assert [r.error for r in results] == [CANCELLED_WHILE_RUNNING] * 3
    assert marked_pids(mark) == []
    assert CommandLaneExecutor.cancel_all() == 0  # nothing left running


def test_stragglers_are_killed_when_the_shell_exits(executor, tmp_path):
    mark = new_mark()
    started = time.monotonic()
    outcome = executor.run_lane(request(f"export M={mark}; sleep 300 & echo done", repo_root=tmp_path))
    assert (outcome.kind, outcome.exit_code, outcome.output) == ("exited", 0, "done\n")
    assert time.monotonic() - started < 1.5  # the straggler held the pipe; it did not hold the lane
    assert marked_pids(mark) == []


def test_escapee_that_left_the_group_is_found_by_its_marker(executor, tmp_path):
    mark = new_mark()
    # The shell waits until the escapee has left the group, so only the marker can find it.
    command = (
        f"export M={mark}; setsid sh -c 'echo $$ > escaped; exec sleep 300' </dev/null >/dev/null 2>&1 & "
        "while [ ! -s escaped ]; do sleep 0.01; done; echo done"
    )
    outcome = executor.run_lane(request(command, repo_root=tmp_path))
    assert (outcome.exit_code, outcome.output) == (0, "done\n")
    escaped = int((tmp_path / "escaped").read_text())
    assert not pid_alive(escaped)
    assert marked_pids(mark) == []


def test_escapee_holding_the_pipe_on_timeout_is_killed(executor, tmp_path):
    mark = new_mark()
    started = time.monotonic()
    outcome = executor.run_lane(
        request(f"export M={mark}; setsid sleep 300 & sleep 300", repo_root=tmp_path, timeout_ms=300)
    )
    assert outcome.kind == "timeout"
    assert time.monotonic() - started < 1.5
    assert marked_pids(mark) == []


def test_scrubbed_escapee_cannot_hang_the_lane(executor, tmp_path):
    # Known limit: setsid + an empty environment escapes both the group kill and the marker
    # sweep. What must hold is that the lane still ends promptly instead of waiting on the
    # pipe the escapee keeps open.
    command = (
        "setsid env -i sh -c 'echo $$ > scrubbed; exec sleep 300' & "
        "while [ ! -s scrubbed ]; do sleep 0.01; done; echo done"
    )
    started = time.monotonic()
    outcome = executor.run_lane(request(command, repo_root=tmp_path))
    elapsed = time.monotonic() - started
    escaped = int((tmp_path / "scrubbed").read_text())
    try:
        assert (outcome.kind, outcome.exit_code, outcome.output) == ("exited", 0, "done\n")
        assert elapsed < 2.0
    finally:
        os.kill(escaped, 9)


# --------------------------------------------------------------------------- parallel lanes and the watchdog


def test_parallel_lanes_share_one_watchdog(executor, tmp_path):
    results: list = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(executor.run_lane(request(f"exit {i}", repo_root=tmp_path))))
        for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(r.exit_code for r in results) == list(range(8))
    first = watchdog.get().pid
    assert first is not None and pid_alive(first)
    executor.run_lane(request("true", repo_root=tmp_path))
    assert watchdog.get().pid == first


def test_a_killed_watchdog_is_replaced_and_told_the_running_groups(executor, tmp_path):
    executor.run_lane(request("true", repo_root=tmp_path))
    old = watchdog.get().pid
    assert old is not None
    os.kill(old, 9)
    assert wait_until(lambda: watchdog.get().pid is None, 5)
    outcome = executor.run_lane(request("true", repo_root=tmp_path))
    assert outcome.exit_code == 0
    new = watchdog.get().pid
    assert new is not None and new != old and pid_alive(new)


def test_watchdog_ignores_sigint(executor, tmp_path):
    executor.run_lane(request("true", repo_root=tmp_path))
    pid = watchdog.get().pid
    assert pid is not None

    def ignoring_sigint() -> bool:  # wait out the interpreter start-up, before its handlers exist
        status = Path(f"/proc/{pid}/status").read_text()
        mask = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
        return bool(mask & (1 << (2 - 1)))

    assert wait_until(ignoring_sigint, 5)
    os.kill(pid, 2)
    time.sleep(0.3)
    assert pid_alive(pid) and watchdog.get().pid == pid


def test_registered_through_the_entry_point():
    executors = load_registry().objects("lane_executors")
    assert isinstance(executors["command"], CommandLaneExecutor)
    assert executors["command"].kind == "command"
