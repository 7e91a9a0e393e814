"""The host's own overhead per agent lane: provider start to verdict read.

An ``exec`` reviewer that answers instantly (one ``sh -c 'printf ... > $AGENTREVIEW_VERDICT_PATH'``)
runs through the real agent executor: preset chain, prompt build, stale-verdict removal,
per-attempt work dir, process-group spawn and reap, verdict read and validation. The
same ``sh -c`` spawned bare with ``subprocess.run`` is the baseline; the difference is
what agentreview adds per lane. Runs are interleaved (lane, baseline, lane, ...).

Target: under 100 ms of host overhead per lane.

Run: ``.venv/bin/python bench/bench_agent_overhead.py [--runs N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentreview_agent.executor import AgentLaneExecutor
from agentreview_agent.providers.exec_provider import ExecProvider

from agentreview.model.contracts import LaneRequest, PresetSpec
from agentreview.model.manifest import AgentCheck
from bench.run import machine_line

VERDICT = '{"summary": "ok", "findings": [{"severity": "low", "title": "nit", "file": "a.py", "line": 1}]}'
SCRIPT = f"cat >/dev/null; printf '%s' '{VERDICT}' > \"$AGENTREVIEW_VERDICT_PATH\""
TARGET_MS = 100.0


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "rubric.md").write_text("Look for bugs.\n")
        git(repo, "add", "-A")
        git(repo, "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-qm", "base")
        base = head = git(repo, "rev-parse", "HEAD")
        run_dir = root / "ledger" / "repo" / "runs" / "r1"
        run_dir.mkdir(parents=True)
        check = AgentCheck(id="lint", kind="agent", preset="instant", rubric="rubric.md")
        command = ["sh", "-c", SCRIPT]
        request = LaneRequest(
            check=check, review_id="bench", repo_root=repo, base_sha=base, head_sha=head, placeholders={},
            run_dir=run_dir, cancel=threading.Event(), rubric_path=repo / "rubric.md",
            presets={"instant": PresetSpec(name="instant", provider="exec", options={"command": command})},
            providers={"exec": ExecProvider()},
        )  # fmt: skip
        executor = AgentLaneExecutor()
        verdict = run_dir / "baseline.json"
        env = {**os.environ, "AGENTREVIEW_VERDICT_PATH": str(verdict)}
        lane_ms: list[float] = []
        bare_ms: list[float] = []
        for _ in range(3):  # warm caches (imports, page cache)
            executor.run_lane(request)
        for _ in range(args.runs):
            t0 = time.perf_counter()
            outcome = executor.run_lane(request)
            lane_ms.append((time.perf_counter() - t0) * 1000)
            if outcome.kind != "reported" or len(outcome.findings) != 1:
                raise SystemExit(f"bench: the lane did not report: {outcome}")
            t0 = time.perf_counter()
            subprocess.run(command, input=b"prompt", env=env, cwd=repo, check=True)
            bare_ms.append((time.perf_counter() - t0) * 1000)
    lane, bare = statistics.median(lane_ms), statistics.median(bare_ms)
    p95 = statistics.quantiles(lane_ms, n=20)[18]
    overhead = lane - bare
    print(machine_line())
    print(f"agent lane, instant exec reviewer ({args.runs} runs, interleaved)")
    print(
        f"  lane (provider start → verdict read): median {lane:6.1f} ms  p95 {p95:6.1f} ms  min {min(lane_ms):5.1f} ms"
    )
    print(f"  bare sh -c spawn (baseline):          median {bare:6.1f} ms")
    verdict_line = "OK" if overhead < TARGET_MS else "OVER TARGET"
    print(f"  host overhead per lane: {overhead:6.1f} ms (target < {TARGET_MS:.0f} ms): {verdict_line}")
    return 0 if overhead < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
