"""The README's first command ends with ``agentreview demo``: it must run the whole cycle, for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


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
    # every step ran, in order, with the outcome it shows
    assert out.index("verdict: pass") < out.index("verified: demo/local") < out.index("NOT verified (signature")
    assert "verdict: pass (cached)" in out
    assert "verdict: block" in out and "eval/exec on input" in out
    assert "(delta since" in out or "delta review over" in out + proc.stderr
    assert "The whole cycle ran" in out
    exports = list((tmp_path / "demo" / "demo-repo" / ".reviews").glob("demo-local-*.json"))
    assert exports, "the demo exports its attestation"
    # the demo keeps its own host state inside its folder: the caller's home is untouched
    assert list(agentreview_home.iterdir()) == []
