"""Whole-process benchmark of ``agentreview run`` and ``verify`` beside pre-commit running the same checks.

The peer is pre-commit (installed in the same virtualenv) running the same commands as
local ``language: system`` hooks; it runs hooks one after another, agentreview runs
lanes in parallel and also signs and records an attestation.

Cases (every command a fresh process, same interpreter, interleaved runs):

* 8 lanes of ``sleep 1``: agentreview vs pre-commit;
* 8 lanes of ``true``, signed and recorded (``--no-cache``) vs pre-commit's 8 ``true`` hooks;
* a cache hit, and ``verify --require-signed`` of a signed export, vs the same pre-commit run;
* peak memory of the host while one lane prints 1 GiB.

Run: ``.venv/bin/python bench/bench_run.py [--runs N]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import Case, machine_line, measure, print_table, venv_script

LANES = 8


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def manifest() -> str:
    checks = []
    for i in range(LANES):
        checks.append(f"  - id: sleep{i}\n    kind: command\n    run: sleep 1\n")
        checks.append(f"  - id: true{i}\n    kind: command\n    run: 'true'\n")
    checks.append("  - id: flood\n    kind: command\n    run: head -c 1073741824 /dev/zero\n    timeoutMs: 300000\n")
    sleeps = ", ".join(f"sleep{i}" for i in range(LANES))
    trues = ", ".join(f"true{i}" for i in range(LANES))
    return (
        "---\nkind: review\nid: bench\ntarget: { kind: git-range, base: main }\nchecks:\n"
        + "".join(checks)
        + f"bindings:\n  sleep:\n    checks: [{sleeps}]\n  noop:\n    checks: [{trues}]\n"
        + "  flood:\n    checks: [flood]\nverdict:\n  exportDir: .reviews\n---\n"
    )


def precommit_config(entry: str) -> str:
    hooks = "".join(
        f"      - id: h{i}\n        name: h{i}\n        entry: '{entry}'\n        language: system\n"
        "        pass_filenames: false\n        always_run: true\n"
        for i in range(LANES)
    )
    return f"repos:\n  - repo: local\n    hooks:\n{hooks}"


def setup(root: Path) -> tuple[Path, dict[str, str]]:
    repo = root / "repo"
    repo.mkdir()
    home = root / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update(AGENTREVIEW_HOME=str(home), PRE_COMMIT_HOME=str(root / "pre-commit-cache"), CI="true")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.test")
    git(repo, "config", "user.name", "Bench")
    (repo / "REVIEW.md").write_text(manifest())
    (repo / "sleep.yaml").write_text(precommit_config("sleep 1"))
    (repo / "true.yaml").write_text(precommit_config("true"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "app.txt").write_text("change\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return repo, env


def peak_rss_mb(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Peak resident memory of one process (its own, not the lane's: lanes are tiny ``head``)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    agentreview = venv_script("agentreview")
    pre_commit = venv_script("pre-commit")
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-run-") as tmp:
        repo, env = setup(Path(tmp))
        run = [agentreview, "run", "--json"]
        # A signed export to verify, and the key trusted in an allowed_signers file outside the repo.
        first = json.loads(subprocess.run([*run, "--binding", "noop", "--export"], cwd=repo, env=env,
                                          capture_output=True, text=True, check=True).stdout)
        key = json.loads(subprocess.run([agentreview, "key", "--json"], cwd=repo, env=env, capture_output=True,
                                        text=True, check=True).stdout)
        signers = Path(tmp) / "allowed_signers"
        signers.write_text(key["allowedSignersLine"] + "\n")
        print(f"# agentreview run/verify vs pre-commit — {machine_line()}\n")
        print(f"8 lanes of `sleep 1` ({args.runs} runs each):\n")
        sleep_results = measure(
            [
                Case("agentreview run (8 × sleep 1)", [*run, "--binding", "sleep", "--no-cache"], repo, env),
                Case("pre-commit run (8 × sleep 1)", [pre_commit, "run", "-a", "-c", "sleep.yaml"], repo, env),
            ],
            runs=args.runs,
            warmup=1,
        )
        print_table(sleep_results, baseline="pre-commit run (8 × sleep 1)")
        print(f"\n8 lanes of `true`, cache hit and verify ({args.runs * 3} runs each):\n")
        true_results = measure(
            [
                Case("pre-commit run (8 × true)", [pre_commit, "run", "-a", "-c", "true.yaml"], repo, env),
                Case("agentreview run (8 × true, signed, recorded)", [*run, "--binding", "noop", "--no-cache"],
                     repo, env),
                Case("agentreview run (cache hit)", [*run, "--binding", "noop"], repo, env),
                Case(
                    "agentreview verify --require-signed",
                    [agentreview, "verify", first["exportPath"], "--require-signed", "--allowed-signers",
                     str(signers)],
                    repo,
                    env,
                ),
            ],
            runs=args.runs * 3,
            warmup=2,
        )
        print_table(true_results, baseline="pre-commit run (8 × true)")
        started = time.perf_counter()
        rss, code = peak_rss_mb([*run, "--binding", "flood", "--no-cache"], repo, env)
        elapsed = time.perf_counter() - started
        print(f"\nA lane printing 1 GiB: host peak RSS {rss:.0f} MiB (exit {code}, {elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
