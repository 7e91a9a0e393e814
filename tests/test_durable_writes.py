"""Which files a run makes durable (fsync) and which it only replaces atomically.

The ledger entry, the export and every other record a later decision rests on are fsynced (file
and directory) before the run reports them; status records (the run's progress in the run
registry, the in-flight marker) and disposable caches (the parse memo, the plugin listing) are
replaced atomically but not fsynced: two fsyncs each cost milliseconds on a real disk, on every
run, cache hits included, and losing one of those in a power cut loses nothing.

The run below is real (git repository, command lanes, signing, ledger); ``os.fsync`` is wrapped,
not replaced, to note the path behind each descriptor it syncs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from reviewrepo import Repo, manifest

from agentreview.cli.entry import main
from agentreview.host.files import atomic_write_text


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    paths: list[str] = []
    real = os.fsync

    def noting(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", noting)
    return paths


def test_a_durable_write_syncs_the_file_and_its_directory_a_status_write_neither(
    tmp_path: Path, synced: list[str]
) -> None:
    atomic_write_text(tmp_path / "entry.json", "{}")
    assert len(synced) == 2 and synced[1] == str(tmp_path)
    assert Path(synced[0]).name.startswith("entry.json.tmp.")
    synced.clear()
    atomic_write_text(tmp_path / "status.json", "{}", durable=False)
    assert synced == [] and (tmp_path / "status.json").read_text() == "{}"
    assert not list(tmp_path.glob("*.tmp.*"))  # atomic either way: no temporary file is left


def test_a_run_makes_its_ledger_entry_and_export_durable_and_its_status_records_not(
    tmp_path: Path, synced: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    repo.commit(
        "init",
        **{
            "REVIEW.md": manifest(
                "  - id: ok\n    kind: command\n    run: 'true'\n", extra="verdict:\n  exportDir: .reviews\n"
            )
        },
    )
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("change", **{"app.txt": "x\n"})
    for key in [k for k in os.environ if k.startswith("AGENTREVIEW_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AGENTREVIEW_HOME", str(repo.home))
    monkeypatch.chdir(repo.path)
    assert main(["run", "--json", "--export"]) == 0
    result = json.loads(capsys.readouterr().out)
    home = str(repo.home.resolve())
    entry, export = Path(result["ledgerPath"]), Path(result["exportPath"])
    files = [Path(p) for p in synced if not os.path.isdir(p)]
    assert any(f.name.startswith(entry.name + ".tmp.") for f in files), synced
    assert any(f.name.startswith(export.name + ".tmp.") for f in files), synced
    assert str(entry.parent.resolve()) in synced and str(export.parent.resolve()) in synced
    status = [p for p in synced if p.startswith(home) and ("/runs/" in p or "/inflight" in p or "/cache/" in p)]
    assert status == [], status
