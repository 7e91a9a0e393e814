"""How long a run takes to end after SIGTERM or SIGINT, at each phase.

    .venv/bin/python bench/bench_signals.py [--runs 5]

Each phase is held by a program that does not return, first on PATH: a ``git`` whose call named
below sleeps (planning's merge-base, the cache's ``git status``, the freeze's with ``--no-cache``),
an ``ssh-keygen`` whose ``-Y sign`` sleeps (signing, while recording), and for the lanes a command
lane that sleeps. Once the blocked program has started, the signal goes to the real CLI in a
subprocess and the time to its exit is taken. Every run must end with exit 2 and nothing
recorded, else the bench aborts. Prints the median and the worst per phase and signal, and
whether every one ended within the target (1 s); exits 1 when one did not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import machine_line, venv_python  # noqa: E402

TARGET_S = 1.0
MANIFEST = "---\nkind: review\nid: demo\ntarget: {{ kind: git-range, base: main }}\nchecks:\n" \
           "  - id: ok\n    kind: command\n    run: '{run}'\n---\n\n# demo\n"  # fmt: skip
PHASES = {  # phase: (program, words of the call that blocks, run options, the lane's command)
    "planning": ("git", " merge-base ", (), "true"),
    "cache": ("git", " status --porcelain", (), "true"),
    "freeze": ("git", " status --porcelain", ("--no-cache",), "true"),
    "lanes": ("", "", (), "sleep 300"),
    "signing": ("ssh-keygen", "-Y sign", (), "true"),
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=60)


def blocking_bin(folder: Path, program: str, words: str, mark: Path) -> None:
    folder.mkdir(parents=True)
    if not program:
        return
    real = shutil.which(program)
    shim = folder / program
    shim.write_text(f'#!/bin/sh\ncase " $* " in *"{words}"*)\n  if [ ! -e "{mark}" ]; then : > "{mark}"; '
                    f'exec sleep 300; fi;;\nesac\nexec "{real}" "$@"\n')  # fmt: skip
    shim.chmod(0o755)


def one(tmp: Path, phase: str, signum: int) -> float:
    program, words, options, lane = PHASES[phase]
    repo, home, mark = tmp / "repo", tmp / "home", tmp / "blocked"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.test")
    git(repo, "config", "user.name", "Bench")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "switch", "-q", "-c", "feature")
    run = f": > {mark}; {lane}" if not program else lane
    (repo / "REVIEW.md").write_text(MANIFEST.format(run=run))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "review")
    folder = tmp / "bin"
    blocking_bin(folder, program, words, mark)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update({"AGENTREVIEW_HOME": str(home), "PATH": f"{folder}{os.pathsep}{env.get('PATH', '')}"})
    proc = subprocess.Popen([str(venv_python()), "-m", "agentreview", "run", "--json", *options], cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while not mark.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit(f"bench: the {phase} phase was never reached")
        time.sleep(0.01)
    time.sleep(0.2)  # the blocked program has started (exec) and the run waits on it
    started = time.perf_counter()
    proc.send_signal(signum)
    code = proc.wait(60)
    elapsed = time.perf_counter() - started
    recorded = [p for p in (home / "reviews").rglob("*.json") if "runs" not in p.parts and "inflight" not in p.parts]
    if code != 2 or recorded:
        raise SystemExit(f"bench: {phase}: exit {code}, recorded {recorded}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-signals-") as scratch:
        for n in range(args.runs):
            for phase in PHASES:
                for signum in (signal.SIGTERM, signal.SIGINT):
                    where = Path(scratch) / f"{phase}-{signum}-{n}"
                    times.setdefault((phase, signum.name), []).append(one(where, phase, signum))
    print(machine_line())
    print(f"runs: {args.runs} per phase and signal")
    print()
    print("| phase | signal | median ms | worst ms |")
    print("|---|---|---:|---:|")
    worst = 0.0
    for (phase, name), values in times.items():
        worst = max(worst, max(values))
        print(f"| {phase} | {name} | {statistics.median(values) * 1000:.0f} | {max(values) * 1000:.0f} |")
    print()
    ok = worst <= TARGET_S
    print(f"every run ended within {worst * 1000:.0f} ms of the signal (target {TARGET_S:.0f} s): "
          f"{'met' if ok else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
