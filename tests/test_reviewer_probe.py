"""The ``--version``/``--help`` probes of a reviewer CLI: lanes of one run that start together
share one probe of a binary (a Node CLI started by every lane at once could outlast the probe
timeout on a loaded machine), and a changed binary is probed again."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from agentreview.reviewers.cli import probe


def _cli(tmp_path: Path) -> tuple[Path, Path]:
    """A slow CLI that logs each start: it sleeps, so concurrent probes would overlap."""
    log = tmp_path / "starts.log"
    binary = tmp_path / "slowcli"
    binary.write_text(
        f"#!{sys.executable}\nimport sys, time\nopen({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "time.sleep(0.5)\nprint('slowcli 1.0')\n"
    )
    binary.chmod(0o755)
    return binary, log


def test_lanes_probing_one_binary_at_once_share_one_probe(tmp_path: Path) -> None:
    binary, log = _cli(tmp_path)
    results = []
    threads = [threading.Thread(target=lambda: results.append(probe(str(binary), "--version"))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 6 and all(r.stdout_text().strip() == "slowcli 1.0" for r in results)
    assert log.read_text().splitlines() == ["--version"]
    probe(str(binary), "--help")  # another probe of the same binary is its own
    assert log.read_text().splitlines() == ["--version", "--help"]


def test_a_changed_binary_is_probed_again(tmp_path: Path) -> None:
    binary, log = _cli(tmp_path)
    probe(str(binary), "--version")
    binary.write_text(binary.read_text() + "# changed\n")
    probe(str(binary), "--version")
    assert log.read_text().splitlines() == ["--version", "--version"]
