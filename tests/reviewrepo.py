"""A throw-away repository for end-to-end runs of the ``agentreview`` CLI as a real process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

AGENTREVIEW = [sys.executable, "-m", "agentreview"]


class Repo:
    """A throw-away git repository with helpers to write, commit and run agentreview in it."""

    def __init__(self, path: Path, home: Path):
        self.path = path
        self.home = home
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "dev@example.test")
        self.git("config", "user.name", "Dev Example")
        self.git("config", "commit.gpgsign", "false")

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
        env["AGENTREVIEW_HOME"] = str(self.home)
        env["CI"] = "true"
        return env

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.path, check=True, capture_output=True, text=True, timeout=30
        ).stdout.strip()

    def write(self, rel: str, text: str) -> None:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def commit(self, message: str = "change", **files: str) -> str:
        for rel, text in files.items():
            self.write(rel.replace("__", "/"), text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def run(self, *args: str, timeout: float = 120, env: dict[str, str] | None = None):
        return subprocess.run(
            [*AGENTREVIEW, "run", "--json", *args],
            cwd=self.path,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or self.env,
            stdin=subprocess.DEVNULL,
        )

    def run_json(self, *args: str, expect: int | None = None, **kw) -> dict:
        proc = self.run(*args, **kw)
        assert proc.stdout, proc.stderr
        data = json.loads(proc.stdout)
        if expect is not None:
            assert proc.returncode == expect, (proc.returncode, data, proc.stderr)
        assert data["exitCode"] == proc.returncode
        return data

    def ledger_files(self) -> list[Path]:
        root = self.home / "reviews"
        return [p for p in root.rglob("*.json") if "runs" not in p.parts and "inflight" not in p.parts]


def feature_repo(tmp_path: Path) -> Repo:
    """A repository with one commit on main, switched to a new ``feature`` branch; its home beside it."""
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    repo.commit("initial", **{"README.md": "hello\n"})
    repo.git("switch", "-q", "-c", "feature")
    return repo


def manifest(checks: str, bindings: str = "", extra: str = "") -> str:
    text = "---\nkind: review\nid: demo\ntarget: { kind: git-range, base: main }\nchecks:\n" + checks
    if bindings:
        text += "bindings:\n" + bindings
    return text + extra + "---\n\n# demo\n"


def counting_git(tmp: Path) -> tuple[Path, Path]:
    """A folder holding a ``git`` that appends its arguments to a log, then runs the real git; and the log."""
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp / "counting-bin", tmp / "git-starts.log"
    folder.mkdir()
    shim = folder / "git"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return folder, log


def processes_matching(marker: str) -> list[int]:
    """Pids whose command line contains ``marker`` (lane processes a test tagged)."""
    found = []
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            if marker.encode() in (proc_dir / "cmdline").read_bytes():
                found.append(int(proc_dir.name))
        except OSError:
            continue
    return found


def wait_for(predicate, timeout: float = 60.0) -> bool:
    """Poll ``predicate`` every 50 ms until it is true or ``timeout`` seconds pass.

    The default bound holds on a loaded 2-core machine for anything that starts or ends processes;
    a passing poll returns as soon as the predicate holds, so a large bound costs nothing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
