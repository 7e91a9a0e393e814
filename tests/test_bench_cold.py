"""The cold-start benchmark and its import profile run end to end (one run each; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.imports import parse_importtime  # noqa: E402


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=480, stdin=subprocess.DEVNULL
    )


def test_bench_cold_measures_every_case_and_reports_every_target(tmp_path: Path) -> None:
    out = tmp_path / "cold.json"
    proc = bench("bench/bench_cold.py", "--runs", "1", "--warmup", "0", "--json", str(out))
    assert proc.returncode in (0, 1), proc.stderr  # 1 only because a target missed: timings are not asserted
    data = json.loads(out.read_text())
    labels = [case["label"] for case in data["cases"]]
    assert {"pre-commit run -a -c true.yaml", "pre-commit --version", "agentreview run (new manifest)"} <= set(labels)
    assert all(len(case["seconds"]) == 1 for case in data["cases"])
    assert len(data["targets"]) == 7
    assert "agentreview verify on a fresh runner (empty home)" in labels
    lines = proc.stdout.splitlines()
    for t in data["targets"]:
        verdict = "ok" if t["ok"] else "MISSED"
        assert f"target {t['label']}: {t['ratio']:.2f}x {t['baseline']} (limit {t['limit']:g}x) {verdict}" in lines
    assert proc.returncode == (0 if all(t["ok"] for t in data["targets"]) else 1)


def test_imports_profiles_a_hot_command() -> None:
    proc = bench("bench/imports.py", "--runs", "1", "--top", "3", "--only", "check")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("## agentreview check: ")
    assert "top 3 by self time:" in proc.stdout and "top 3 by cumulative time:" in proc.stdout


def test_parse_importtime_reads_self_and_cumulative_microseconds() -> None:
    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        120 |   _io\n"
        "import time:      2500 |       2620 | agentreview.cli.app\n"
        "a line of the command's own\n"
    )
    costs = parse_importtime(stderr)
    assert set(costs) == {"_io", "agentreview.cli.app"}
    assert (costs["agentreview.cli.app"].self_us, costs["agentreview.cli.app"].cumulative_us) == (2500, 2620)
