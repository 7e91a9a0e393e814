"""No reviewer outlives its host: a real host process running an agent lane is SIGKILLed while
the reviewer (a CLI with a helper process in its group) hangs, and the core's watchdog must kill
every process of the reviewer's group. Checked through /proc, for the exec provider and for a
CLI provider (the fake ``claude``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

DRIVER = textwrap.dedent(
    """
    import json, sys, threading, time
    from pathlib import Path
    from agentreview_agent.executor import AgentLaneExecutor
    from agentreview_agent.providers.claude import ClaudeProvider
    from agentreview_agent.providers.exec_provider import ExecProvider
    from agentreview.host.procs import watchdog
    from agentreview.model.contracts import LaneRequest, PresetSpec
    from agentreview.model.manifest import AgentCheck
    from agentreview.model.reader import read

    cfg = json.loads(sys.argv[1])
    fields = {"id": "correctness", "kind": "agent", "preset": cfg["preset"], "rubric": "r.md", "timeoutMs": 300000}
    check = read(AgentCheck, fields)
    presets = {
        "claude": PresetSpec(name="claude", provider="claude", builtin=True),
        "hang": PresetSpec(name="hang", provider="exec", options={"command": cfg["command"]}),
    }
    request = LaneRequest(
        check=check, review_id="rev", repo_root=Path(cfg["repo"]), base_sha=cfg["base"], head_sha=cfg["head"],
        placeholders={}, run_dir=Path(cfg["run_dir"]), cancel=threading.Event(), rubric_path=Path(cfg["rubric"]),
        presets=presets, providers={"claude": ClaudeProvider(), "exec": ExecProvider()},
    )
    threading.Thread(target=AgentLaneExecutor().run_lane, args=(request,), daemon=True).start()
    started = time.monotonic()
    while watchdog.get().pid is None and time.monotonic() < started + 15:
        time.sleep(0.01)
    print(json.dumps({"watchdog": watchdog.get().pid}), flush=True)
    time.sleep(600)
    """
)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, pgrp) of a process, or None once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[2])


def _alive(pid: int) -> bool:
    info = _stat(pid)
    return info is not None and info[0] not in ("Z", "X")


def _group(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[1] == pgid and info[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def _reviewer_leader(needle: str, exclude: int) -> int | None:
    """The process whose command line holds ``needle`` and leads its own group (the reviewer)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == exclude:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        info = _stat(int(entry))
        if needle in cmdline and info is not None and info[1] == int(entry) and info[0] not in ("Z", "X"):
            return int(entry)
    return None


def _wait(predicate, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def _kill_the_host_mid_review(lane, tmp_path: Path, preset: str, command: list[str], needle: str) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    cfg = {
        "preset": preset, "command": command, "repo": str(lane.repo.root), "base": lane.repo.base,
        "head": lane.repo.head, "run_dir": str(lane.run_dir), "rubric": str(lane.repo.rubric),
    }  # fmt: skip
    host = subprocess.Popen([sys.executable, str(script), json.dumps(cfg)], stdout=subprocess.PIPE, text=True)
    pgid = None
    try:
        assert host.stdout is not None
        guard = json.loads(host.stdout.readline())["watchdog"]
        assert guard is not None and _alive(guard)
        assert _wait(lambda: _reviewer_leader(needle, host.pid) is not None, 15), "the reviewer never started"
        pgid = _reviewer_leader(needle, host.pid)
        assert pgid is not None
        assert _wait(lambda: len(_group(pgid)) >= 2, 10), "the reviewer's helper never started"
        assert os.getpgid(pgid) != os.getpgid(host.pid)  # the reviewer has a group of its own
        started = time.monotonic()
        host.kill()  # SIGKILL: no clean-up code of the host runs
        host.wait(5)
        assert _wait(lambda: _group(pgid) == [], 4), f"reviewer processes outlived the host: {_group(pgid)}"
        assert time.monotonic() - started < 4
        assert _wait(lambda: not _alive(guard), 3), "the watchdog must exit once its job is done"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(5)
        if pgid is not None:
            for pid in _group(pgid):  # only on failure: leave nothing behind
                os.kill(pid, signal.SIGKILL)


def test_host_sigkill_kills_an_exec_reviewers_whole_group(lane, tmp_path: Path) -> None:
    hang = tmp_path / "hanging_reviewer.py"
    hang.write_text(
        "import subprocess, sys, time\n"
        "subprocess.Popen(['sleep', '300'], stdin=subprocess.DEVNULL)\n"
        "sys.stdin.read()\n"
        "time.sleep(300)\n"
    )
    _kill_the_host_mid_review(lane, tmp_path, "hang", [sys.executable, str(hang)], str(hang))


def test_host_sigkill_kills_a_cli_reviewers_whole_group(lane, fake_cli, tmp_path: Path) -> None:
    cli = fake_cli("claude")
    cli.play(scenario="hang_with_helper")
    _kill_the_host_mid_review(lane, tmp_path, "claude", [], f"{cli.bin_dir / 'claude'} --print")
