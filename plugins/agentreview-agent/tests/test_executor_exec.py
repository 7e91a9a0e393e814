"""The agent lane executor driving real ``exec`` reviewers (small Python scripts run as
subprocesses): verdicts, the shared deadline, retries, fallbacks and what must never
fall back, cancellation, and the process-group kill."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from agentreview.model.contracts import DeltaRange, PresetSpec
from agentreview.model.lanes import to_lane_result
from conftest import script

WRITE = """
sys.stdin.read()
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    json.dump(VERDICT, fh)
"""


def verdict_script(tmp_path: Path, name: str, verdict: dict) -> Path:
    return script(tmp_path, name, f"VERDICT = {verdict!r}\n" + WRITE)


def test_exec_reviewer_gets_prompt_env_and_repo_root(lane, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    reviewer = script(
        tmp_path,
        "r.py",
        f"""
prompt = sys.stdin.read()
keys = [k for k in os.environ if k.startswith("AGENTREVIEW_") and k != "AGENTREVIEW_HOME"]
env = {{k: os.environ.get(k) for k in keys}}
json.dump({{"prompt": prompt, "cwd": os.getcwd(), "env": env}}, open({str(seen)!r}, "w"))
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    fh.write("```json\\n" + json.dumps({{"decision": "approve", "summary": "ok", "findings": [
        {{"severity": "medium", "title": "naming", "file": "app.py", "line": 1}}]}}) + "\\n```")
""",
    )
    lane.exec_preset("bot", reviewer)
    check = lane.check(blockOn="high")
    outcome = lane.run(check)
    assert outcome.kind == "reported", outcome.error
    assert outcome.preset == "bot" and outcome.summary == "ok"
    assert [f.title for f in outcome.findings] == ["naming"]
    data = json.loads(seen.read_text())
    verdict_path = lane.run_dir / "correctness.verdict.json"
    assert data["env"] == {
        "AGENTREVIEW_VERDICT_PATH": str(verdict_path),
        "AGENTREVIEW_BASE": lane.repo.base,
        "AGENTREVIEW_HEAD": lane.repo.head,
        "AGENTREVIEW_RUBRIC": str(lane.repo.rubric),
        "AGENTREVIEW_CHECK_ID": "correctness",
    }
    assert Path(data["cwd"]).resolve() == lane.repo.root.resolve()
    assert f"write EXACTLY ONE file — {verdict_path} —" in data["prompt"]
    # The core decides the status from findings and blockOn: a medium finding under blockOn high passes.
    assert to_lane_result(check, outcome, 1).status == "pass"
    assert to_lane_result(lane.check(blockOn="medium"), outcome, 1).status == "fail"


def test_decision_request_changes_without_findings_is_still_a_pass(lane, tmp_path: Path) -> None:
    lane.exec_preset("bot", verdict_script(tmp_path, "r.py", {"decision": "request_changes", "findings": []}))
    check = lane.check()
    outcome = lane.run(check)
    assert to_lane_result(check, outcome, 1).status == "pass"


def test_namespaced_check_writes_double_underscore_file_and_stale_verdict_is_removed(lane, tmp_path: Path) -> None:
    stale = lane.run_dir / "core__sec.verdict.json"
    stale.write_text('{"findings": []}')  # a passing verdict left from before must not be read
    lane.exec_preset("bot", script(tmp_path, "silent.py", "sys.stdin.read()\n"))
    outcome = lane.run(lane.check(id="core/sec"))
    assert outcome.kind == "skipped"
    assert outcome.error == f"reviewer ended its turn without writing {stale}"


def test_unreadable_rubric_and_unknown_preset_skip(lane, tmp_path: Path) -> None:
    assert lane.run(rubric=None).error == "rubric not found: ./rubrics/correctness.md"
    outcome = lane.run(lane.check(preset="nope"))
    assert outcome.kind == "skipped" and outcome.preset == "nope"
    assert "preset 'nope' not found" in outcome.error


def test_malformed_verdict_file_is_skipped_not_pass(lane, tmp_path: Path) -> None:
    lane.exec_preset("bot", script(tmp_path, "r.py", 'open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w").write("LGTM")'))
    outcome = lane.run()
    assert outcome.kind == "skipped" and outcome.error.startswith("verdict file is not valid JSON — ")


def test_delta_lane_reviews_only_the_new_range(lane, tmp_path: Path) -> None:
    prior = lane.repo.head
    lane.repo.head = lane.repo.commit("b.py", "y = 1\n", "second")
    seen = tmp_path / "seen.txt"
    body = f'open({str(seen)!r}, "w").write(os.environ["AGENTREVIEW_BASE"] + "\\n" + sys.stdin.read())\n'
    body += 'open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w").write(\'{"findings": []}\')\n'
    lane.exec_preset("bot", script(tmp_path, "r.py", body))
    delta = DeltaRange(prior_head_sha=prior, prior_range_sha="r" * 64, prior_attestation_sha256="s" * 64)
    assert lane.run(delta=delta).kind == "reported"
    base_seen, prompt = seen.read_text().split("\n", 1)
    assert base_seen == prior
    assert f"committed git range {prior}..{lane.repo.head}" in prompt and "This is a DELTA re-review" in prompt


def test_fallback_only_for_unavailable_and_lane_names_who_ran(lane, tmp_path: Path) -> None:
    lane.exec_preset("down", script(tmp_path, "down.py", 'sys.stderr.write("connection refused"); sys.exit(1)'))
    lane.presets["nocmd"] = PresetSpec(name="nocmd", provider="exec")
    lane.presets["ghost"] = PresetSpec(name="ghost", provider="not-installed")
    finding = {"severity": "high", "title": "bug", "file": "app.py", "line": 1}
    lane.exec_preset("up", verdict_script(tmp_path, "up.py", {"findings": [finding]}))
    lane.exec_preset("never", verdict_script(tmp_path, "never.py", {"findings": []}))
    check = lane.check(preset="down", fallbackPresets=["nocmd", "ghost", "up", "never"])
    outcome = lane.run(check)
    assert outcome.kind == "reported" and outcome.preset == "up"
    assert [(f.preset, f.error.split(" —")[0].split(":")[0]) for f in outcome.fallbacks] == [
        ("down", "reviewer command exited with code 1"),
        ("nocmd", "preset 'nocmd' has no command"),
        ("ghost", "provider 'not-installed' of preset 'ghost' is not installed (no plugin registers it)"),
    ]
    assert "connection refused" in outcome.fallbacks[0].error
    # a block is final: the later "never" reviewer (which would pass) did not run
    assert to_lane_result(check, outcome, 1).status == "fail"


def test_chain_exhausted_is_skipped_and_lists_every_error(lane, tmp_path: Path) -> None:
    lane.exec_preset("a", script(tmp_path, "a.py", "sys.exit(3)"))
    lane.exec_preset("b", script(tmp_path, "b.py", "sys.exit(4)"))
    outcome = lane.run(lane.check(preset="a", fallbackPresets=["b"]))
    assert outcome.kind == "skipped" and outcome.preset == "b"
    assert outcome.error.startswith("reviewer command exited with code 4")
    assert [f.preset for f in outcome.fallbacks] == ["a"]
    assert to_lane_result(lane.check(), outcome, 1).status == "skipped"


def test_no_fallback_after_a_malformed_exit(lane, tmp_path: Path) -> None:
    # wrote a verdict, then failed: neither trusted nor replaced by another reviewer
    body = (
        'open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w")'
        '.write(\'{"findings": [{"severity": "high", "title": "x"}]}\')\nsys.exit(2)'
    )
    lane.exec_preset("a", script(tmp_path, "a.py", body))
    lane.exec_preset("b", verdict_script(tmp_path, "b.py", {"findings": []}))
    outcome = lane.run(lane.check(preset="a", fallbackPresets=["b"]))
    assert outcome.kind == "skipped" and outcome.preset == "a" and not outcome.fallbacks
    assert outcome.error.startswith("malformed reviewer answer: reviewer command exited with code 2 after writing")


def test_transient_errors_are_retried_then_fall_back(lane, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    body = f"""
p = {str(counter)!r}
n = int(open(p).read()) + 1 if os.path.exists(p) else 1
open(p, "w").write(str(n))
if n == 1:
    sys.exit(75)
open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w").write('{{"findings": []}}')
"""
    lane.exec_preset("flaky", script(tmp_path, "flaky.py", body))
    outcome = lane.run(lane.check(preset="flaky"))
    assert outcome.kind == "reported" and counter.read_text() == "2"
    lane.exec_preset("busy", script(tmp_path, "busy.py", "sys.exit(75)"), retries=2)
    outcome = lane.run(lane.check(preset="busy"))
    assert outcome.kind == "skipped" and outcome.error.endswith("(after 3 attempts)")


def test_one_deadline_shared_by_the_whole_chain(lane, tmp_path: Path) -> None:
    slow_fail = script(tmp_path, "slow.py", "time.sleep(0.7); sys.exit(1)")
    for name in ("a", "b", "c"):
        lane.exec_preset(name, slow_fail)
    started = time.monotonic()
    outcome = lane.run(lane.check(preset="a", fallbackPresets=["b", "c"], timeoutMs=1000))
    assert time.monotonic() - started < 10.0  # loose under load; the timeout below shows the shared deadline
    assert outcome.kind == "timeout" and outcome.error == "reviewer exceeded 1000ms and was killed"
    assert [f.preset for f in outcome.fallbacks] == ["a"]


def test_hung_reviewer_is_killed_with_its_whole_group_and_never_falls_back(lane, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    body = f"""
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(60)
"""
    lane.exec_preset("hang", script(tmp_path, "hang.py", body))
    lane.exec_preset("b", verdict_script(tmp_path, "b.py", {"findings": []}))
    outcome = lane.run(lane.check(preset="hang", fallbackPresets=["b"], timeoutMs=1500))
    assert outcome.kind == "timeout" and outcome.preset == "hang" and not outcome.fallbacks
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived the lane"


def test_cancel_while_running_stops_the_reviewer(lane, tmp_path: Path) -> None:
    started = tmp_path / "started"
    lane.exec_preset("hang", script(tmp_path, "hang.py", f'open({str(started)!r}, "w"); time.sleep(60)'))

    def cancel_soon() -> None:
        while not started.exists():
            time.sleep(0.01)
        lane.cancel.set()

    threading.Thread(target=cancel_soon, daemon=True).start()
    t0 = time.monotonic()
    outcome = lane.run(lane.check(preset="hang", timeoutMs=60000))
    assert time.monotonic() - t0 < 10
    assert outcome.kind == "skipped" and outcome.error == "review cancelled while the reviewer was running"
    assert lane.run().error == "review cancelled before the reviewer spawned"


def test_reviewer_that_plants_a_fifo_cannot_hang_the_lane(lane, tmp_path: Path) -> None:
    lane.exec_preset("evil", script(tmp_path, "evil.py", 'os.mkfifo(os.environ["AGENTREVIEW_VERDICT_PATH"])'))
    outcome = lane.run(lane.check(preset="evil", timeoutMs=20000))
    assert outcome.kind == "skipped" and "not a regular file" in outcome.error


def test_spawn_failure_is_unavailable(lane) -> None:
    lane.presets["bot"] = PresetSpec(name="bot", provider="exec", options={"command": ["/nonexistent/reviewer"]})
    outcome = lane.run()
    assert outcome.kind == "skipped" and outcome.error.startswith("reviewer spawn failed: ")


def test_a_provider_that_raises_does_not_crash_the_lane(lane, tmp_path: Path) -> None:
    class Broken:
        name = "broken"

        def status(self):  # pragma: no cover - not called here
            raise AssertionError

        def review(self, request):
            raise RuntimeError("boom")

    lane.providers["broken"] = Broken()
    lane.presets["bot"] = PresetSpec(name="bot", provider="broken")
    outcome = lane.run()
    assert outcome.kind == "skipped" and outcome.error == "provider 'broken' failed: RuntimeError: boom"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waiting for its (killed) parent's reaper counts as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False
