"""The ``--version``/``--help`` probes of a reviewer CLI: lanes of one run that start together
share one probe of a binary (a Node CLI started by every lane at once could outlast the probe
timeout on a loaded machine), and a changed binary is probed again."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

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


def test_a_probe_that_timed_out_is_not_kept_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A moment of load (the first --help outlasts the bound) makes that lane's CLI unusable with a
    reason saying so, never "printed no help", and the next lane probes again instead of inheriting it.
    The CLI is a shell script (it starts at once even on a loaded machine); --help hangs while ``slow``
    exists, and only the bound of that one probe is short."""
    from agentreview.reviewers import cli

    log, slow = tmp_path / "starts.log", tmp_path / "slow"
    binary = tmp_path / "oncecli"
    binary.write_text(
        f'#!/bin/sh\necho "$*" >> {log}\n'
        f'if [ "$*" = --help ] && [ -e {slow} ]; then exec sleep 600; fi\n'
        "echo 'oncecli 1.0 --flag'\n"
    )
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = cli.find_binary(None, "oncecli")
    assert found is not None and cli.probe(found, "--version").returncode == 0  # kept, at the usual bound
    slow.touch()
    monkeypatch.setattr(cli, "PROBE_TIMEOUT_S", 5.0)
    first = cli.cli_info(None, "oncecli", ("--help",))
    assert isinstance(first, str) and "did not answer within 5 s" in first, first
    slow.unlink()
    monkeypatch.setattr(cli, "PROBE_TIMEOUT_S", 60.0)
    second = cli.cli_info(None, "oncecli", ("--help",))
    assert isinstance(second, cli.CliInfo) and second.offers("--flag"), second
    assert log.read_text().splitlines() == ["--version", "--help", "--help"]  # --version kept, --help asked again
