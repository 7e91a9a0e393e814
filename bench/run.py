"""Shared harness for process benchmarks: time whole commands, print a comparable table.

Why whole processes: what a user feels from a CLI is interpreter start-up plus imports plus
work, and only a fresh process measures all three. Every command runs with the same
virtualenv's interpreter and scripts (:func:`venv_script`, :func:`venv_python`), in the same
session, with runs interleaved round-robin so that a background burst hits every case
alike instead of skewing one of them.

Other benchmarks import it (run them as ``.venv/bin/python bench/<name>.py``; put the repository
root on sys.path first, as bench_cold.py does)::

    from bench.run import Case, measure, print_table, venv_script
    results = measure([Case("pre-commit --version", [venv_script("pre-commit"), "--version"]), ...], runs=15)
    print_table(results, baseline="pre-commit --version")
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PROCESS_TIMEOUT_S = 120.0


def venv_python() -> str:
    """The interpreter running the benchmark: the project's virtualenv when run as documented."""
    return sys.executable


def venv_script(name: str) -> str:
    """A console script installed next to the interpreter (``.venv/bin/<name>``)."""
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        raise SystemExit(f"bench: {path} is not installed in this virtualenv")
    return str(path)


@dataclass(frozen=True)
class Case:
    """One command line to time. ``expect_rc`` guards against timing a command that failed fast.

    ``before`` runs untimed before every run (warm-up included), for a case whose input must be
    new each time, e.g. a manifest no cache has seen.
    """

    label: str
    argv: Sequence[str]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    expect_rc: int = 0
    before: Callable[[], object] | None = None


@dataclass
class Result:
    case: Case
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def minimum(self) -> float:
        return min(self.seconds)

    @property
    def spread(self) -> float:
        """Interquartile range: how noisy the runs were."""
        if len(self.seconds) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.seconds, n=4)
        return q3 - q1


def time_once(case: Case) -> float:
    """Wall time of one run of ``case``; raises when it exits with an unexpected code or hangs."""
    env = dict(os.environ if case.env is None else case.env)
    if case.before is not None:
        case.before()
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            list(case.argv),
            cwd=case.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=PROCESS_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(f"bench: '{case.label}' did not finish within {PROCESS_TIMEOUT_S:.0f} s") from None
    elapsed = time.perf_counter() - started
    if proc.returncode != case.expect_rc:
        stderr = proc.stderr.decode(errors="replace").strip().splitlines()
        raise SystemExit(
            f"bench: '{case.label}' exited {proc.returncode} (expected {case.expect_rc}): "
            + ("\n".join(stderr[-10:]) if stderr else "no output")
        )
    return elapsed


def measure(cases: Sequence[Case], runs: int = 15, warmup: int = 2) -> list[Result]:
    """Run every case ``warmup`` times untimed (disk cache, .pyc), then ``runs`` times, interleaved."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    for _ in range(warmup):
        for case in cases:
            time_once(case)
    results = [Result(case) for case in cases]
    for _ in range(runs):
        for result in results:
            result.seconds.append(time_once(result.case))
    return results


def machine_line() -> str:
    """Where the numbers were taken, for the record next to the table."""
    return (
        f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()} ({sys.executable})"
    )


def format_table(results: Sequence[Result], baseline: str | None = None) -> str:
    """A Markdown table: median, min, IQR in milliseconds, and the median's ratio to ``baseline``."""
    base = next((r for r in results if r.case.label == baseline), None) if baseline else None
    if baseline and base is None:
        raise ValueError(f"baseline '{baseline}' is not one of the cases")
    header = "| command | runs | median ms | min ms | IQR ms |" + (f" × {baseline} |" if base else "")
    rule = "|---|---:|---:|---:|---:|" + ("---:|" if base else "")
    rows = [header, rule]
    for r in results:
        row = (
            f"| `{r.case.label}` | {len(r.seconds)} | {r.median * 1000:.0f} | {r.minimum * 1000:.0f} "
            f"| {r.spread * 1000:.0f} |"
        )
        if base:
            row += f" {r.median / base.median:.2f} |"
        rows.append(row)
    return "\n".join(rows)


def print_table(results: Sequence[Result], baseline: str | None = None) -> None:
    print(format_table(results, baseline))
