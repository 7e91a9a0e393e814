"""No lane outlives its host: a real driver host process is SIGKILLed mid-lane and its lanes must die."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from cmdlane_helpers import marked_pids, new_mark, pid_alive, start_driver, wait_until


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


def _hold(tmp_path, command: str, lanes: int, expect: int, new_session: bool = False):
    """Start a driver host running ``lanes`` lanes; return it, its watchdog pid, and the lane processes."""
    driver = start_driver(tmp_path, "hold", command, lanes, new_session=new_session)
    assert driver.stdout is not None
    ready = json.loads(driver.stdout.readline())
    mark = command.split("M=", 1)[1].split(";", 1)[0]
    assert wait_until(lambda: len(marked_pids(mark, exclude=(driver.pid,))) >= expect, 10)
    return driver, ready["watchdog"], mark


def _sigkill_and_wait(driver, mark: str, within_s: float, new_session: bool = False) -> float:
    started = time.monotonic()
    if new_session:
        os.killpg(driver.pid, signal.SIGKILL)  # the host's whole process group, as a CI runner does
    else:
        driver.kill()
    driver.wait(5)
    gone = wait_until(lambda: marked_pids(mark, exclude=(driver.pid,)) == [], within_s)
    elapsed = time.monotonic() - started
    assert gone, f"lane processes outlived the host: {marked_pids(mark, exclude=(driver.pid,))}"
    return elapsed


def test_host_sigkill_kills_the_lane_group(tmp_path):
    mark = new_mark()
    driver, guard, mark = _hold(tmp_path, f"export M={mark}; sleep 300 & sleep 300; wait", lanes=1, expect=3)
    assert guard is not None and pid_alive(guard)
    elapsed = _sigkill_and_wait(driver, mark, within_s=3)
    assert elapsed < 3
    assert wait_until(lambda: not pid_alive(guard), 3), "the watchdog must exit once its job is done"


def test_host_process_group_sigkill_kills_every_lane(tmp_path):
    mark = new_mark()
    driver, guard, mark = _hold(
        tmp_path, f"export M={mark}; sleep 300 & sleep 300; wait", lanes=4, expect=12, new_session=True
    )
    _sigkill_and_wait(driver, mark, within_s=3, new_session=True)
    assert wait_until(lambda: not pid_alive(guard), 3)


def test_host_sigkill_also_finds_escapees_by_marker(tmp_path):
    mark = new_mark()
    command = (
        f"export M={mark}; setsid sh -c 'echo $$ > escaped; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 300"
    )
    driver, _, mark = _hold(tmp_path, command, lanes=1, expect=3)
    escaped_file = tmp_path / "escaped"
    assert wait_until(lambda: escaped_file.exists() and escaped_file.read_text().strip().isdigit(), 5)
    escaped = int(escaped_file.read_text())
    assert os.getsid(escaped) == escaped  # it really left the lane's session and group
    _sigkill_and_wait(driver, mark, within_s=3)
    assert not pid_alive(escaped)


@pytest.mark.slow
def test_host_sigkill_with_a_term_ignoring_lane_escalates_to_sigkill(tmp_path):
    mark = new_mark()
    driver, guard, mark = _hold(tmp_path, f"export M={mark}; trap '' TERM; sleep 300 & sleep 300; wait", 1, 3)
    elapsed = _sigkill_and_wait(driver, mark, within_s=9)
    assert 5.0 <= elapsed < 8.0
    assert wait_until(lambda: not pid_alive(guard), 3)
