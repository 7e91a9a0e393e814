"""SIGTERM and SIGINT end a run at every phase: exit 2, status cancelled, nothing recorded.

Each phase is held by a real program that does not return: a ``git`` (planning's merge-base,
the cache's and the freeze's ``git status``) or an ``ssh-keygen`` (signing, in the recording
phase) first on ``PATH`` that, for the one call named, leaves a mark and sleeps; every other
call runs the real program. The signal goes to the real CLI in a subprocess once the mark is
there; the test polls for its end with a generous deadline (how fast it ends is measured by
bench/bench_signals.py, not asserted here) and checks that the sleeping program was stopped too.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest, processes_matching, wait_for

PHASES = {  # phase: (the program that blocks, the words of its call that block, extra run options)
    "planning": ("git", " merge-base ", ()),
    "cache": ("git", " status --porcelain", ()),
    "freeze": ("git", " status --porcelain", ("--no-cache",)),
    "signing": ("ssh-keygen", "-Y sign", ()),
}


def blocking_bin(tmp: Path, program: str, words: str, mark: Path, nap: str) -> Path:
    """A folder holding ``program``: its first call whose arguments contain ``words`` touches
    ``mark`` and becomes ``sleep nap``; every other call runs the real program."""
    real = shutil.which(program)
    assert real is not None, f"{program} is not installed"
    folder = tmp / "blocking-bin"
    folder.mkdir()
    shim = folder / program
    shim.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *"{words}"*)\n'
        f'  if [ ! -e "{mark}" ]; then : > "{mark}"; exec sleep {nap}; fi;;\n'
        "esac\n"
        f'exec "{real}" "$@"\n'
    )
    shim.chmod(0o755)
    return folder


@pytest.fixture(name="repo")
def repo_fixture(tmp_path: Path) -> Repo:
    repo = feature_repo(tmp_path)
    repo.commit("review", **{"REVIEW.md": manifest("  - id: ok\n    kind: command\n    run: 'true'\n"), "a.txt": "a\n"})
    return repo


@pytest.mark.parametrize(
    ("phase", "signum"),
    [*((phase, signal.SIGTERM) for phase in PHASES), ("planning", signal.SIGINT), ("signing", signal.SIGINT)],
)
def test_a_signal_ends_the_run_at_every_phase(repo: Repo, tmp_path: Path, phase: str, signum: int) -> None:
    program, words, options = PHASES[phase]
    mark = tmp_path / "blocked"
    nap = f"{200 + list(PHASES).index(phase)}.{os.getpid() % 100000}{signum}"  # found by its unique argument
    folder = blocking_bin(tmp_path, program, words, mark, nap)
    env = {**repo.env, "PATH": f"{folder}{os.pathsep}{repo.env.get('PATH', '')}"}
    proc = subprocess.Popen([*AGENTREVIEW, "run", "--json", *options], cwd=repo.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert wait_for(lambda: mark.exists() and bool(processes_matching(nap)), 60), f"{phase} was never reached"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 2, (out, err)
    assert json.loads(out)["status"] == "cancelled"
    assert wait_for(lambda: not processes_matching(nap)), f"the blocked {program} outlived the run"
    assert repo.ledger_files() == []
    assert not list((repo.home / "reviews").rglob("runs/review-*"))
