"""``agentreview fetch`` against a notes ref full of junk: what a push of notes costs every teammate.

Run:  .venv/bin/python bench/bench_notes.py [--notes N ...] [--repeat R]

For each N: a repository, a bare remote and a clone of it in a temporary folder; N notes of
commits that do not exist, all sharing one blob, written as one notes tree (``git mktree``) and
pushed to the remote. Then, as whole processes: the clone's first ``agentreview fetch`` (its
home has never fetched; each of the R runs gets a fresh home and a fresh copy of the clone), and
the next fetch with the notes ref unchanged (median of R). The git processes each one starts
are counted through a logging ``git`` put first on PATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOTES = "refs/notes/agentreview"
BIN = Path(sys.executable).parent


def git(cwd: Path, *args: str, data: bytes | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip
    proc = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=True, timeout=600, env=env)
    return proc.stdout.decode().strip()


def setup(tmp: Path, count: int) -> Path:
    """A clone of a bare remote whose notes ref holds ``count`` junk notes; the clone's path."""
    origin, bare, clone = tmp / "origin", tmp / "remote.git", tmp / "clone"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    (origin / "README").write_text("hello\n")
    git(origin, "add", "README")
    git(origin, "commit", "-q", "-m", "initial")
    git(tmp, "init", "-q", "--bare", str(bare))
    git(origin, "push", "-q", str(bare), "main")
    blob = git(origin, "hash-object", "-w", "--stdin", data=b'{"junk": true}\n')
    listing = "".join(f"100644 blob {blob}\t{n:040x}\n" for n in range(1, count + 1))
    tree = git(origin, "mktree", data=listing.encode())
    git(origin, "push", "-q", str(bare), f"{git(origin, 'commit-tree', tree, '-m', 'junk')}:{NOTES}")
    git(tmp, "clone", "-q", str(bare), str(clone))
    return clone


def shim(tmp: Path) -> tuple[Path, Path]:
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp / "bin", tmp / "git-starts.log"
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\necho x >> "{log}"\nexec "{real}" "$@"\n')
    (folder / "git").chmod(0o755)
    return folder, log


def fetch(clone: Path, home: Path, path_first: Path, log: Path) -> tuple[float, int]:
    """One ``agentreview fetch`` as a whole process: its wall time (ms) and the git processes it started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update({"AGENTREVIEW_HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                "PATH": f"{path_first}{os.pathsep}{env.get('PATH', '')}"})  # fmt: skip
    log.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run([str(BIN / "agentreview"), "fetch", "--remote", "origin"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=3600)  # fmt: skip
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"agentreview fetch failed ({proc.returncode}): {proc.stderr.strip()}")
    starts = len(log.read_text().splitlines()) if log.exists() else 0
    return elapsed, starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[3000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []
    for count in args.notes:
        with tempfile.TemporaryDirectory(prefix="agentreview-bench-notes-") as name:
            tmp = Path(name)
            clone = setup(tmp, count)
            path_first, log = shim(tmp)
            first: list[float] = []
            for n in range(args.repeat):
                copy = tmp / f"clone-{n}"
                shutil.copytree(clone, copy, symlinks=True)
                ms, first_starts = fetch(copy, tmp / f"home-{n}", path_first, log)
                first.append(ms)
            again = [fetch(copy, tmp / f"home-{args.repeat - 1}", path_first, log) for _ in range(args.repeat)]
            rows.append((f"first fetch, {count:,} junk notes", f"{statistics.median(first):,.0f}", str(first_starts)))
            rows.append((f"next fetch, {count:,} junk notes, ref unchanged",
                         f"{statistics.median(ms for ms, _ in again):,.0f}", str(again[-1][1])))  # fmt: skip
    print(f"median of {args.repeat} runs each (whole processes)\n")
    print("| fetch | median ms | git processes |")
    print("|---|---:|---:|")
    for label, ms, starts in rows:
        print(f"| {label} | {ms} | {starts} |")


if __name__ == "__main__":
    main()
