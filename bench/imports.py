"""Where a cold command's start-up goes: the costliest imports of each hot command.

    .venv/bin/python bench/imports.py [--runs 3] [--top 15] [--only LABEL]

Runs each agentreview command of bench/bench_cold.py (same repository, signed export, fresh
home, a new manifest for the "new manifest" run) under ``python -X importtime`` and prints,
per command, the total import time and the ``--top`` modules by self time and by cumulative
time (a package's cumulative time includes what it imports). Each module's figure is its
minimum over ``--runs`` runs, which drops most of the noise of a single run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cold import cases, probe, setup  # noqa: E402
from bench.run import PROCESS_TIMEOUT_S, Case, venv_python  # noqa: E402

PREFIX = "import time:"


@dataclass(frozen=True)
class Cost:
    module: str
    self_us: int
    cumulative_us: int


def parse_importtime(stderr: str) -> dict[str, Cost]:
    """``-X importtime`` lines (``import time: self | cumulative | name``) by module name."""
    costs: dict[str, Cost] = {}
    for line in stderr.splitlines():
        if not line.startswith(PREFIX):
            continue
        fields = line[len(PREFIX) :].split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue  # the header line
        name = fields[2].strip()
        costs[name] = Cost(name, int(fields[0]), int(fields[1]))
    return costs


def profile(case: Case) -> dict[str, Cost]:
    """One run of ``case``'s console script under ``-X importtime``; aborts the bench when it fails."""
    if case.before is not None:
        case.before()
    argv = [venv_python(), "-X", "importtime", *case.argv]
    proc = subprocess.run(
        argv,
        cwd=case.cwd,
        env=dict(case.env or {}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    if proc.returncode != case.expect_rc:
        tail = [line for line in proc.stderr.splitlines() if not line.startswith(PREFIX)][-10:]
        raise SystemExit(f"bench: '{case.label}' exited {proc.returncode}: " + ("\n".join(tail) or "no output"))
    return parse_importtime(proc.stderr)


def least(runs: Sequence[dict[str, Cost]]) -> list[Cost]:
    """Each module's smallest self and cumulative time over the runs that imported it."""
    names = {name for run in runs for name in run}
    return [
        Cost(
            name,
            min(run[name].self_us for run in runs if name in run),
            min(run[name].cumulative_us for run in runs if name in run),
        )
        for name in names
    ]


def render(label: str, costs: list[Cost], top: int) -> str:
    total = sum(c.self_us for c in costs)
    lines = [f"## {label}: {len(costs)} modules, {total / 1000:.1f} ms of imports", ""]
    for title, key in (("self", lambda c: c.self_us), ("cumulative", lambda c: c.cumulative_us)):
        lines += [f"top {top} by {title} time:", "", "| module | self ms | cumulative ms |", "|---|---:|---:|"]
        for c in sorted(costs, key=key, reverse=True)[:top]:
            lines.append(f"| `{c.module}` | {c.self_us / 1000:.1f} | {c.cumulative_us / 1000:.1f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per command; each module's minimum is shown")
    parser.add_argument("--top", type=int, default=15, help="modules per list (default 15)")
    parser.add_argument("--only", metavar="LABEL", help="only the commands whose label contains LABEL")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.top < 1:
        parser.error("--runs and --top must be at least 1")
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-imports-") as tmp:
        ws = setup(Path(tmp))
        hot = [c for c in cases(ws) if c.label.startswith("agentreview")]
        if args.only:
            hot = [c for c in hot if args.only in c.label]
            if not hot:
                parser.error(f"no command's label contains {args.only!r}")
        probe(ws, hot)
        for case in hot:
            print(render(case.label, least([profile(case) for _ in range(args.runs)]), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
