"""The CI gate from an empty runner to a verdict: pip, uv, and the Action's cache warm, phase by phase.

    .venv/bin/python bench/bench_ci.py [--runs 1] [--json FILE]

What a pull request waits for is the Action's install, then one ``verify``. This runs the steps of
action.yml as a runner runs a composite action (tests/action_runner.py, the simulation
tests/test_action.py checks: each ``run:`` script through ``bash -eo pipefail`` with its ``env:``,
the expressions replaced by their values, ``RUNNER_TEMP`` and ``GITHUB_OUTPUT`` of its own)
against a copy of this checkout's tracked files (the runner's ``github.action_path``), on a local
gate repository: ``main`` with REVIEW.md and the trusted key pushed to a bare ``origin``, a
``feature`` branch with a signed export committed. No GitHub: the cache service is simulated
(see "warm").

* **pip**: the plain path: ``python -m venv`` then ``pip install`` of the action's checkout (the
  Action's fallback does the same with its dependencies pinned by hash), then the verify step;
* **uv**: the Action as it is with no uv on PATH: the key step, the install step (``pip install
  --target`` of uv from PyPI, ``uv venv``, ``uv pip install --compile-bytecode`` of the pinned
  dependencies and of the checkout), the verify step;
* **warm**: the cache holds the venv the uv path made: restoring it (``tar -x`` of the archive
  actions/cache would have saved; the download itself is not simulated, its size is printed),
  the key step, the install step checking the restored venv against the action's checkout, the
  verify step. Every path runs as a ``pull_request_target`` job, the event the cache serves.

Every path starts empty: a fresh ``RUNNER_TEMP``, pip's and uv's caches empty, a fresh home. The
phases of the install step come from bash's trace (``set -x``, ``PS4`` carrying ``$EPOCHREALTIME``). Runs are
interleaved (pip, uv, warm, pip, ...). Prints the table, the ratios to the pip path and whether the
targets (uv <= 0.5x, warm <= 0.2x) are met; exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from action_runner import ActionRunner, copy_action  # noqa: E402

from bench.run import machine_line, venv_script  # noqa: E402

TARGETS = {"uv": 0.5, "warm": 0.2}
MANIFEST = """---
kind: review
id: gate
target: { kind: git-range, base: main }
verdict: { exportDir: .reviews }
checks:
  - id: tests
    kind: command
    run: "true"
---

# gate
"""
# Which command of the install step's trace starts which phase (the first match wins).
PHASE_OF = (
    (" -I - ", "restored venv check"),
    ("--target", "uv from PyPI"),
    (" venv ", "venv"),
    (" -m venv ", "venv"),
    ("pip install", "install"),
    ("--version", "check"),
)


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def gate_repo(tmp: Path) -> Path:
    """``feature`` with a signed export committed; ``origin/main`` with REVIEW.md and the trusted key."""
    repo, home = tmp / "gate", tmp / "gate-home"
    repo.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_"))}
    env["AGENTREVIEW_HOME"] = str(home)
    agentreview = str(venv_script("agentreview"))

    def cli(*args: str) -> str:
        return subprocess.run([agentreview, *args], cwd=repo, env=env, check=True, capture_output=True, text=True,
                              timeout=300).stdout  # fmt: skip

    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.test")
    git(repo, "config", "user.name", "Bench")
    (repo / "REVIEW.md").write_text(MANIFEST)
    (repo / ".agentproto").mkdir()
    (repo / ".agentproto" / "allowed_signers").write_text(json.loads(cli("key", "--json"))["allowedSignersLine"] + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(tmp, "init", "-q", "--bare", "-b", "main", str(tmp / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp / "origin.git"))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "fetch", "-q", "origin")
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "app.txt").write_text("change\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    cli("run", "--export", "--json")
    git(repo, "add", ".reviews")
    git(repo, "commit", "-q", "-m", "review export")
    return repo


class Runner:
    """One empty runner: its temp folder, empty pip and uv caches, a fresh home; runs action.yml's
    steps (tests/action_runner.py), keeps their outputs, and stops the bench when one fails."""

    def __init__(self, tmp: Path, action_path: Path, gate: Path):
        self.tmp, self.gate = tmp, gate
        self.temp = tmp / "runner-temp"
        self.temp.mkdir(parents=True)
        self.outputs: dict[str, dict[str, str]] = {}
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_", "VIRTUAL_ENV"))}
        # the runner's PATH: no virtualenv of this project on it, and no uv
        path = [p for p in base.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "uv").exists()]
        path = [p for p in path if Path(p) != Path(sys.executable).parent]
        # a pull_request_target job: the event the Action's cache serves
        self.env = {**base, "PATH": os.pathsep.join(path), "RUNNER_OS": "Linux",
                    "PIP_CACHE_DIR": str(tmp / "pip-cache"), "UV_CACHE_DIR": str(tmp / "uv-cache"),
                    "AGENTREVIEW_HOME": str(tmp / "home"),
                    "GITHUB_EVENT_NAME": "pull_request_target"}  # fmt: skip
        self.runner = ActionRunner(tmp, action_path, self.temp, self.env["PATH"])

    def step(self, sid: str, *, trace: bool = False) -> tuple[float, list[tuple[float, str]]]:
        """Run the step ``sid``; its seconds, and with ``trace`` each command's start time and text."""
        trace_on = "PS4='+@$EPOCHREALTIME '\nset -x\n" if trace else ""  # bash takes no PS4 from root's environment
        started = time.perf_counter()
        ran = self.runner.run_step(sid, self.gate if sid == "verify" else self.temp, {}, self.env, self.outputs,
                                   prelude=trace_on, timeout=1800)  # fmt: skip
        elapsed = time.perf_counter() - started
        proc = ran.proc
        if proc.returncode != 0:
            raise SystemExit(f"bench: step {sid} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
        self.outputs[sid] = ran.outputs
        marks = [(float(m[1]), m[2]) for m in re.finditer(r"^\++@([\d.]+) (.*)$", proc.stderr, re.M)]
        return elapsed, marks


def phases(total: float, marks: list[tuple[float, str]], end: float) -> dict[str, float]:
    """The install step's seconds split by the phase each traced command starts (the rest: 'setup')."""
    out: dict[str, float] = {}
    current, since = "setup", end - total
    for stamp, command in marks:
        phase = next((name for needle, name in PHASE_OF if needle in f" {command} "), None)
        if phase is not None and phase != current:
            out[current] = out.get(current, 0.0) + stamp - since
            current, since = phase, stamp
    out[current] = out.get(current, 0.0) + end - since
    return out


def install(runner: Runner) -> dict[str, float]:
    elapsed, marks = runner.step("install", trace=True)
    return phases(elapsed, marks, time.time())


def pip_path(tmp: Path, action_path: Path, gate: Path) -> dict[str, float]:
    """The plain pip install (the Action's fallback), then the verify step."""
    runner = Runner(tmp, action_path, gate)
    venv = runner.temp / "agentreview-action-venv"
    python = shutil.which("python3", path=runner.env["PATH"]) or "python3"
    out: dict[str, float] = {}
    for phase, argv in (
        ("venv", [python, "-I", "-m", "venv", "--clear", str(venv)]),
        ("install", [str(venv / "bin" / "python"), "-I", "-m", "pip", "install", "--disable-pip-version-check",
                     "--no-input", "-q", str(action_path)]),
        ("check", [str(venv / "bin" / "agentreview"), "--version"]),
    ):  # fmt: skip
        started = time.perf_counter()
        subprocess.run(argv, cwd=runner.temp, env=runner.env, check=True, capture_output=True, timeout=1800)
        out[phase] = time.perf_counter() - started
    runner.outputs["install"] = {"venv": str(venv)}
    out["verify"] = runner.step("verify")[0]
    return out


def uv_path(tmp: Path, action_path: Path, gate: Path, archive: Path) -> dict[str, float]:
    """The Action's key and install steps on an empty runner, then the verify step; the venv is
    archived as actions/cache/save would keep it."""
    runner = Runner(tmp, action_path, gate)
    out = {"key": runner.step("key")[0]}
    runner.outputs["restore"] = {"cache-hit": ""}
    out.update(install(runner))
    out["verify"] = runner.step("verify")[0]
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(runner.outputs["install"]["venv"], arcname="agentreview-action-venv")
    return out


def warm_path(tmp: Path, action_path: Path, gate: Path, archive: Path) -> dict[str, float]:
    """The venv restored from the cache's archive, the key step, the install step finding it, verify."""
    runner = Runner(tmp, action_path, gate)
    out = {"key": runner.step("key")[0]}
    started = time.perf_counter()
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(runner.temp, filter="tar")
    out["restore"] = time.perf_counter() - started
    runner.outputs["restore"] = {"cache-hit": "true"}
    out.update(install(runner))
    out["verify"] = runner.step("verify")[0]
    return out


ORDER = ("key", "restore", "setup", "restored venv check", "uv from PyPI", "venv", "install", "check", "verify")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-ci-") as scratch:
        root = Path(scratch)
        action_path = root / "_actions" / "agentreview" / "agentreview" / "sha"
        copy_action(action_path)
        gate = gate_repo(root)
        archive = root / "venv-cache.tgz"
        runs: dict[str, list[dict[str, float]]] = {"pip": [], "uv": [], "warm": []}
        for n in range(args.runs):
            runs["pip"].append(pip_path(root / f"pip-{n}", action_path, gate))
            runs["uv"].append(uv_path(root / f"uv-{n}", action_path, gate, archive))
            runs["warm"].append(warm_path(root / f"warm-{n}", action_path, gate, archive))
            print(f"run {n + 1}/{args.runs} done", file=sys.stderr)
        size_mb = archive.stat().st_size / 1e6
    med: dict[str, dict[str, float]] = {
        path: {ph: statistics.median(r.get(ph, 0.0) for r in rows) for ph in ORDER} for path, rows in runs.items()
    }
    totals = {path: statistics.median(sum(r.values()) for r in rows) for path, rows in runs.items()}
    print(machine_line())
    print(f"runs: {args.runs} per path (medians); the venv archive the cache would keep: {size_mb:.1f} MB (gzip)")
    print()
    print("| phase | " + " | ".join(f"{p} s" for p in runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for phase in ORDER:
        if any(med[p][phase] for p in runs):
            print(f"| {phase} | " + " | ".join(f"{med[p][phase]:.2f}" if med[p][phase] else "" for p in runs) + " |")
    print("| **empty runner → verdict** | " + " | ".join(f"**{totals[p]:.2f}**" for p in runs) + " |")
    print()
    missed = 0
    for path, target in TARGETS.items():
        ratio = totals[path] / totals["pip"]
        ok = ratio <= target
        missed += not ok
        print(f"{path}: {ratio:.2f}x the pip path (target <= {target}x): {'met' if ok else 'MISSED'}")
    if args.json:
        body: dict[str, Any] = {"runs": runs, "medians": med, "totals": totals, "archiveMB": size_mb}
        args.json.write_text(json.dumps(body, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
