"""Sharing attestations through git notes: the foreign store, publish, fetch and ``verify --notes``.

Real parts: real repositories, a real bare remote (file://) for push and fetch, real ssh-keygen keys.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentreview.store.foreign import ForeignStore
from verify_helpers import REMOTE, Repo, isolated_env, keys_fixture, repo_fixture, sign  # noqa: F401


def test_foreign_store_adds_once_and_lists(repo: Repo, tmp_path: Path, keys: dict) -> None:
    store = ForeignStore(tmp_path / "ledger")
    raw = sign(repo.attestation(), keys["trusted"])
    assert store.add(raw, remote="origin", principal="ci@example.com") is True
    assert store.add(raw, remote="origin", principal="ci@example.com") is False
    rows = list(store.all())
    assert len(rows) == 1 and rows[0][1]["foreign"] == {
        "remote": "origin", "principal": "ci@example.com", "importedAt": rows[0][1]["foreign"]["importedAt"]
    }
    assert [a["target"]["headSha"] for a in store.candidates(REMOTE, repo.manifest_sha, "default")] == [repo.head]
    assert list(store.candidates(REMOTE, repo.manifest_sha, "other")) == []
    files = list((tmp_path / "ledger").rglob("*.json"))
    assert len(files) == 1 and files[0].parent.name == "foreign"


def test_foreign_store_refuses_malformed(tmp_path: Path, repo: Repo) -> None:
    store = ForeignStore(tmp_path / "ledger")
    raw = repo.attestation()
    raw["binding"] = "../../etc"
    with pytest.raises(Exception):
        store.add(raw, remote="origin", principal=None)
    with pytest.raises(ValueError):
        store.add({"schema": "nope"}, remote="origin", principal=None)
    assert list(store.all()) == []
