"""Start-up cost of the CLI against pre-commit, a Python CLI users already accept in a git hook.

    .venv/bin/python bench/bench_startup.py [--runs 15] [--warmup 2]

Times whole processes with this virtualenv's interpreter: ``python -c pass`` (the floor),
``pre-commit --version`` (the baseline), ``agentreview --version`` and ``agentreview check``
on the push-gate example manifest (parse, rules, git facts, report). Prints a Markdown table
with medians and the ratio to pre-commit, then whether each target holds:
``--version`` no slower than pre-commit's, ``check`` within 1.5x. Exit 1 when a target misses.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import Case, format_table, machine_line, measure, venv_python, venv_script  # noqa: E402

BASELINE = "pre-commit --version"
CHECK_MANIFEST = "tests/fixtures/examples/push-gate.md"
# label -> the largest allowed ratio of its median to the baseline's
TARGETS = {"agentreview --version": 1.0, f"agentreview check --manifest {CHECK_MANIFEST}": 1.5}


def cases(home: Path) -> list[Case]:
    env = {**os.environ, "AGENTREVIEW_HOME": str(home)}
    env.pop("AGENTREVIEW_DEBUG", None)
    agentreview = venv_script("agentreview")
    check = [agentreview, "check", "--manifest", CHECK_MANIFEST]
    check_label = f"agentreview check --manifest {CHECK_MANIFEST}"
    if not (ROOT / CHECK_MANIFEST).exists():  # the fallback the performance notes describe
        check, check_label = [agentreview, "schema", "review"], "agentreview schema review"
    return [
        Case("python -c pass", [venv_python(), "-c", "pass"], cwd=ROOT, env=env),
        Case(BASELINE, [venv_script("pre-commit"), "--version"], cwd=ROOT, env=env),
        Case("agentreview --version", [agentreview, "--version"], cwd=ROOT, env=env),
        Case(check_label, check, cwd=ROOT, env=env),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-") as home:
        results = measure(cases(Path(home)), runs=args.runs, warmup=args.warmup)
    print(f"Machine: {machine_line()}\n")
    print(format_table(results, baseline=BASELINE))
    base = next(r for r in results if r.case.label == BASELINE).median
    missed = 0
    print()
    for result in results:
        limit = TARGETS.get(result.case.label)
        if limit is None:
            continue
        ratio = result.median / base
        verdict = "ok" if ratio <= limit else "MISSED"
        missed += verdict == "MISSED"
        print(f"target {result.case.label}: {ratio:.2f}x pre-commit (limit {limit:.1f}x) {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
