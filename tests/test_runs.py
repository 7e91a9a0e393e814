"""The run registry through the real CLI: ``run --detach``, ``status``, ``cancel``, ``ledger --requester``.

Every run is a real process on a real repository; lanes are real ``sh -c`` processes found
in /proc by a marker. A run outlives its terminal only when detached; a run whose process
was SIGKILLed is ``failed``, never ``running``; a cancelled run leaves no lane process and
no ledger entry.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest, processes_matching, wait_for


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return feature_repo(tmp_path)


def env_of(repo: Repo, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in repo.env.items() if k != "AGENTPROTO_SESSION_ID"}
    return {**env, **extra}


def cli(
    repo: Repo, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREVIEW, *args], cwd=repo.path, capture_output=True, text=True, timeout=timeout,
        env=env or env_of(repo), stdin=subprocess.DEVNULL,
    )  # fmt: skip


def status(repo: Repo, run_id: str) -> dict:
    proc = cli(repo, "status", run_id, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def slow_review(repo: Repo, marker: str, release: Path | None = None) -> None:
    """A review whose ``slow`` lane runs until it is stopped, or with ``release`` until that file exists
    (at most two minutes): no test depends on how long a loaded machine takes to reach its next step."""
    hold = "sleep 300"
    if release is not None:
        hold = f"i=0; until [ -e {release} ] || [ $i -ge 2400 ]; do sleep .05; i=$((i+1)); done"
    text = manifest(
        f"  - id: slow\n    kind: command\n    run: '{hold}; true # {marker}'\n"
        "  - id: fast\n    kind: command\n    run: 'true'\n"
    )
    repo.commit("add review", **{"REVIEW.md": text})
    repo.commit("feature work", **{"src__app.txt": "v1\n"})


def detach(repo: Repo, env: dict[str, str] | None = None) -> str:
    proc = cli(repo, "run", "--detach", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "running" and data["runId"].startswith("review-")
    return data["runId"]


def test_detach_survives_the_end_of_its_terminal_session(repo: Repo, tmp_path: Path) -> None:
    marker = f"agentreview-detach-{os.getpid()}"
    release = tmp_path / "release"
    slow_review(repo, marker, release)
    out = tmp_path / "detach.json"
    # A terminal session: a session leader whose controlling terminal is a pty, running `run --detach`.
    script = textwrap.dedent(f"""
        import subprocess, sys, time
        with open({str(out)!r}, "w") as fh:
            subprocess.run({[*AGENTREVIEW, "run", "--detach", "--json"]!r}, stdout=fh, check=True)
        time.sleep(120)
    """)
    master, slave = os.openpty()

    def controlling_tty() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # a terminal's shell dies of the hangup: not SIGHUP ignored as inherited from nohup or a job's shell
        signal.signal(signal.SIGHUP, signal.SIG_DFL)

    shell = subprocess.Popen(
        [sys.executable, "-c", script], cwd=repo.path, env=env_of(repo), stdin=slave, stdout=slave, stderr=slave,
        start_new_session=True, preexec_fn=controlling_tty,
    )  # fmt: skip
    os.close(slave)
    try:
        assert wait_for(lambda: out.exists() and out.read_text().endswith("\n")), "run --detach did not answer"
        run_id = json.loads(out.read_text())["runId"]
        assert wait_for(lambda: bool(processes_matching(marker)))
        # The terminal goes away: the pty hangs up and the whole session gets SIGHUP.
        os.close(master)
        master = -1
        os.killpg(shell.pid, signal.SIGHUP)
        assert shell.wait(timeout=60) != 0  # the terminal's own process died of the hangup
        assert status(repo, run_id)["status"] == "running"
        release.touch()
        assert wait_for(lambda: status(repo, run_id)["status"] != "running")
    finally:
        if master >= 0:
            os.close(master)
        if shell.poll() is None:
            shell.kill()
    view = status(repo, run_id)
    assert view["status"] == "done" and view["verdict"] == "pass", view
    assert view["attestation"]["runId"] == run_id
    assert {lane["id"]: lane["status"] for lane in view["lanes"]} == {"slow": "pass", "fast": "pass"}
    rows = json.loads(cli(repo, "ledger", "--json").stdout)
    assert [row["runId"] for row in rows] == [run_id]


def test_the_status_of_a_sigkilled_run_is_failed_not_running(repo: Repo) -> None:
    marker = f"agentreview-killed-{os.getpid()}"
    slow_review(repo, marker)
    proc = subprocess.Popen(
        [*AGENTREVIEW, "run", "--json"], cwd=repo.path, env=env_of(repo),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert wait_for(lambda: bool(processes_matching(marker)))
        running = json.loads(cli(repo, "status", "--json").stdout)
        assert len(running) == 1 and running[0]["status"] == "running"
        run_id = running[0]["runId"]
        assert wait_for(lambda: {lane["id"]: lane["status"] for lane in status(repo, run_id)["lanes"]}
                        == {"slow": "running", "fast": "pass"})  # fmt: skip
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    view = status(repo, run_id)
    assert view["status"] == "failed" and "ended without finishing" in view["error"]
    assert json.loads(cli(repo, "status", "--json").stdout) == []
    assert wait_for(lambda: not processes_matching(marker))


def test_a_running_record_whose_lock_is_free_is_failed_even_if_its_pid_lives(repo: Repo) -> None:
    """A bare pid can be reused: a record naming a live pid (this test's) but whose lock nobody holds is dead."""
    runs = repo.home / "runs"
    runs.mkdir(parents=True)
    run_id = "review-00000000-0000-4000-8000-000000000001"
    record = {"runId": run_id, "status": "running", "pid": os.getpid(), "signalCancels": True, "lanes": []}
    (runs / f"{run_id}.json").write_text(json.dumps(record))
    (runs / f"{run_id}.lock").write_text("")
    assert status(repo, run_id)["status"] == "failed"
    # and cancel never signals that pid (this test would die of SIGTERM)
    proc = cli(repo, "cancel", run_id, "--json")
    assert json.loads(proc.stdout) == {"runId": run_id, "cancelled": False, "status": "failed"}


def test_cancel_mid_run_kills_the_lanes_and_records_nothing(repo: Repo) -> None:
    marker = f"agentreview-cancel-{os.getpid()}"
    slow_review(repo, marker)
    run_id = detach(repo)
    assert wait_for(lambda: bool(processes_matching(marker)))
    assert wait_for(lambda: {lane["id"]: lane["status"] for lane in status(repo, run_id)["lanes"]}
                    == {"slow": "running", "fast": "pass"})  # fmt: skip
    started = time.monotonic()
    proc = cli(repo, "cancel", run_id, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"runId": run_id, "cancelled": True, "status": "cancelled"}
    assert time.monotonic() - started < 120, "cancel waited for the lane (300 s) instead of stopping it"
    assert wait_for(lambda: not processes_matching(marker)), "a lane process survived the cancel"
    assert repo.ledger_files() == []
    assert not list((repo.home / "reviews").rglob(f"runs/{run_id}"))
    view = status(repo, run_id)
    assert view["status"] == "cancelled" and "verdict" not in view and "attestation" not in view
    # cancelling again: the run is no longer running
    again = json.loads(cli(repo, "cancel", run_id, "--json").stdout)
    assert again == {"runId": run_id, "cancelled": False, "status": "cancelled"}


def test_cancel_reaches_a_run_on_a_thread_without_killing_its_process(repo: Repo, tmp_path: Path) -> None:
    """A host that runs reviews on threads (an MCP server) is cancelled through the registry, not SIGTERM."""
    marker = f"agentreview-thread-{os.getpid()}"
    slow_review(repo, marker)
    result = tmp_path / "result.json"
    script = textwrap.dedent(f"""
        import json, threading, time
        from pathlib import Path
        from agentreview.engine.options import RunOptions
        from agentreview.engine.run import run_review
        out = {{}}
        t = threading.Thread(target=lambda: out.update(r=run_review(RunOptions(cwd=Path({str(repo.path)!r})))))
        t.start(); t.join()
        time.sleep(0.5)  # still alive after the cancel
        Path({str(result)!r}).write_text(json.dumps(out["r"].to_json()))
    """)
    host = subprocess.Popen([sys.executable, "-c", script], env=env_of(repo), stdin=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: bool(processes_matching(marker)))
        (run,) = json.loads(cli(repo, "status", "--json").stdout)
        proc = cli(repo, "cancel", run["runId"], "--json")
        assert json.loads(proc.stdout)["status"] == "cancelled", proc.stdout
        assert host.wait(timeout=120) == 0
    finally:
        if host.poll() is None:
            host.kill()
    assert json.loads(result.read_text())["status"] == "cancelled"
    assert wait_for(lambda: not processes_matching(marker))
    assert repo.ledger_files() == []


@pytest.mark.parametrize("run_id", ["review-00000000-0000-4000-8000-00000000dead", "review-../../etc/passwd", "nope"])
def test_status_and_cancel_of_an_unknown_run_exit_4(repo: Repo, run_id: str) -> None:
    proc = cli(repo, "status", run_id)
    assert proc.returncode == 4 and f"review run '{run_id}' not found" in proc.stderr
    proc = cli(repo, "cancel", run_id, "--json")
    assert proc.returncode == 4
    assert json.loads(proc.stdout) == {"runId": run_id, "cancelled": False, "status": "not_found"}


def test_a_fifo_planted_as_a_run_record_is_not_waited_on(repo: Repo) -> None:
    runs = repo.home / "runs"
    runs.mkdir(parents=True)
    run_id = "review-00000000-0000-4000-8000-00000000f1f0"
    os.mkfifo(runs / f"{run_id}.json")
    os.mkfifo(runs / f"{run_id}.lock")
    started = time.monotonic()
    # a FIFO opened for reading blocks forever: each bound only has to hold on a loaded machine
    assert cli(repo, "status", run_id, timeout=60).returncode == 4
    assert cli(repo, "status", "--json", timeout=60).stdout.strip() == "[]"
    assert cli(repo, "cancel", run_id, timeout=60).returncode == 4
    assert time.monotonic() - started < 120


def test_a_finished_run_is_viewed_from_the_ledger_and_listed_by_requester(repo: Repo) -> None:
    text = manifest("  - id: ok\n    kind: command\n    run: 'true'\n")
    repo.commit("add review", **{"REVIEW.md": text})
    repo.commit("one", **{"a.txt": "1\n"})
    first = repo.run_json(env=env_of(repo, AGENTPROTO_SESSION_ID="sess-reference"), expect=0)
    repo.commit("two", **{"a.txt": "2\n"})
    # AGENTREVIEW_SESSION_ID wins over the reference's name
    second = repo.run_json(
        env=env_of(repo, AGENTREVIEW_SESSION_ID="sess-own", AGENTPROTO_SESSION_ID="sess-reference"), expect=0
    )
    assert first["attestation"]["requester"]["sessionId"] == "sess-reference"
    assert second["attestation"]["requester"]["sessionId"] == "sess-own"

    def requested_by(session: str) -> list[str]:
        proc = cli(repo, "ledger", "--requester", session, "--json")
        assert proc.returncode == 0, proc.stderr
        return [row["runId"] for row in json.loads(proc.stdout)]

    assert requested_by("sess-reference") == [first["runId"]]
    assert requested_by("sess-own") == [second["runId"]]
    assert requested_by("sess-nobody") == []
    view = status(repo, first["runId"])
    assert view["status"] == "done" and view["verdict"] == "pass"
    assert view["requesterSessionId"] == "sess-reference"
    assert view["attestation"] == first["attestation"]
    # its record pruned: the view still comes from the ledger
    for path in (repo.home / "runs").glob(f"{first['runId']}.*"):
        path.unlink()
    view = status(repo, first["runId"])
    assert view["status"] == "done" and view["attestation"] == first["attestation"]
