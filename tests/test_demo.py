"""The README's first command ends with ``agentreview demo``: it must run the whole cycle, for real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview.cli.demo_cmd import NEXT_STEP


@pytest.mark.slow
def test_demo_runs_the_whole_cycle(tmp_path: Path, agentreview_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "demo", "--dir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    # narration and the commands' progress share stdout, in the order they happened
    assert proc.stderr == ""
    run_export = out.index("$ agentreview run --export")
    progress = out.index("[review] running", run_export)
    assert run_export < progress < out.index("verdict: pass", progress) < out.index("\n== 5. ")
    # every step ran, in order, with the outcome it shows
    assert out.index("verdict: pass") < out.index("verified: demo/local") < out.index("NOT verified (signature")
    assert "verdict: pass (cached)" in out
    assert "verdict: block" in out and "eval/exec on input" in out
    assert "(delta since" in out or "delta review over" in out
    assert "The whole cycle ran" in out
    # --dir keeps the folder, and the demo ends by pointing at init
    assert f"demo files kept in {tmp_path / 'demo'}" in out
    assert out.rstrip().endswith(NEXT_STEP.strip())
    exports = list((tmp_path / "demo" / "demo-repo" / ".reviews").glob("demo-local-*.json"))
    assert exports, "the demo exports its attestation"
    # the demo keeps its own host state inside its folder: the caller's home is untouched
    assert list(agentreview_home.iterdir()) == []


@pytest.mark.slow
def test_demo_in_a_temporary_folder_names_keep_and_ends_with_init(tmp_path: Path, agentreview_home: Path) -> None:
    """Without --dir the folder is deleted: the first line says so (and names --keep) before any path
    inside it is printed, and the last lines point at ``agentreview init``."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert proc.stderr == ""
    (workdir,) = {line.split()[2] for line in out.splitlines() if line.startswith("demo folder: ")}
    assert Path(workdir).parent == scratch
    first = out.splitlines()[0]
    assert first.startswith(f"demo folder: {workdir} ") and "--keep" in first
    assert out.index("--keep") < out.index(f"{workdir}/demo-repo")
    assert not Path(workdir).exists() and list(scratch.iterdir()) == []
    closing = out.rstrip().splitlines()[-4:]
    assert closing[0] == f"demo folder {workdir} deleted (agentreview demo --keep keeps it)"
    assert closing[1] == ""
    assert "\n".join(closing[2:]) == NEXT_STEP.strip()
    assert "agentreview init" in closing[2] and "REVIEW.md" in closing[3]
