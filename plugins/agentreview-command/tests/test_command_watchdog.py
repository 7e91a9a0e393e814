"""The watchdog process on its own: it kills what was registered or marked as this host's, and nothing else."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys

import pytest
from cmdlane_helpers import pid_alive, wait_until

from agentreview.host.procs import table as procs
from agentreview.host.procs import watchdog


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


@pytest.fixture
def spawned():
    """Sleepers started by a test, each in its own session; whatever survives is killed by id at the end."""
    procs_started: list[subprocess.Popen[bytes]] = []

    def spawn(env_extra: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            ["sleep", "300"], env={**os.environ, **(env_extra or {})}, start_new_session=True
        )
        procs_started.append(proc)
        return proc

    yield spawn
    for proc in procs_started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


def _start_watchdog(token: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", watchdog._BOOTSTRAP, str(os.getpid()), token],
        stdin=subprocess.PIPE,
        start_new_session=True,
        bufsize=0,
    )


def _dead(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is not None


def test_pipe_eof_kills_registered_groups_but_not_unregistered_ones(spawned):
    token = secrets.token_hex(8)
    guard = _start_watchdog(token)
    registered, released = spawned(), spawned()
    assert guard.stdin is not None
    guard.stdin.write(f"+{registered.pid}\n+{released.pid}\n-{released.pid}\n".encode())
    guard.stdin.close()  # as the kernel does when the host dies
    assert wait_until(lambda: _dead(registered), 5)
    assert registered.returncode == -signal.SIGTERM
    assert guard.wait(5) == 0
    assert not _dead(released)


def test_marker_sweep_matches_only_this_hosts_token(spawned):
    token, other = secrets.token_hex(8), secrets.token_hex(8)
    guard = _start_watchdog(token)
    ours = spawned({procs.marker_name(token): "7"})
    theirs = spawned({procs.marker_name(other): "7"})
    lookalike = spawned({procs.marker_name(token) + "X": "7", "NOTE": procs.marker_name(token)})
    assert wait_until(lambda: len(procs.live_targets((), procs.lane_needle(token))) == 1, 5)
    assert guard.stdin is not None
    guard.stdin.close()
    assert wait_until(lambda: _dead(ours), 5)
    assert guard.wait(5) == 0
    assert not _dead(theirs) and not _dead(lookalike)


def test_sigterm_to_the_watchdog_also_cleans_up(spawned):
    token = secrets.token_hex(8)
    guard = _start_watchdog(token)
    lane = spawned()
    assert guard.stdin is not None
    guard.stdin.write(f"+{lane.pid}\n".encode())
    assert wait_until(lambda: _sigterm_handled(guard.pid), 5)
    guard.send_signal(signal.SIGTERM)
    assert wait_until(lambda: _dead(lane), 5)
    assert guard.wait(5) == 0
    guard.stdin.close()


def test_a_registration_written_just_before_sigterm_is_still_cleaned_up(spawned):
    """The host registers a lane and the watchdog gets SIGTERM before it has read that line (both killed
    at once, say): the line still in the pipe counts. The watchdog is stopped while the line is written and
    the signal sent, so it wakes to both at once, whatever the machine's load."""
    token = secrets.token_hex(8)
    guard = _start_watchdog(token)
    lane = spawned()
    assert guard.stdin is not None
    assert wait_until(lambda: _sigterm_handled(guard.pid), 5)
    guard.send_signal(signal.SIGSTOP)
    guard.stdin.write(f"+{lane.pid}\n".encode())
    guard.send_signal(signal.SIGTERM)
    guard.send_signal(signal.SIGCONT)
    assert wait_until(lambda: _dead(lane), 5)
    assert guard.wait(5) == 0
    guard.stdin.close()


def test_garbage_on_the_pipe_is_ignored(spawned):
    token = secrets.token_hex(8)
    guard = _start_watchdog(token)
    bystander, lane = spawned(), spawned()
    assert guard.stdin is not None
    guard.stdin.write(f"+{lane.pid}\n+abc\n*{bystander.pid}\n+-1\n+\n\n".encode())
    guard.stdin.close()
    assert wait_until(lambda: _dead(lane), 5)
    assert guard.wait(5) == 0
    assert not _dead(bystander) and pid_alive(bystander.pid)


def _sigterm_handled(pid: int) -> bool:
    """True once the interpreter has installed its SIGTERM handler (SigCgt bit 15)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(row for row in status if row.startswith("SigCgt:"))
    return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
