"""Real repositories, ssh-keygen keys and signed exports for the ``agentreview verify`` tests.

Shared by test_verify.py, test_cli_verify.py and test_security_verify.py. The fixtures
here take effect in a test module that imports them (``isolated_env`` is autouse).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentreview.model.attestation import Attestation
from agentreview.model.digests import sha256_hex, signed_bytes_of
from agentreview.verify.gate import VerifyOptions, VerifyResult, verify

REMOTE_URL = "https://github.com/example/demo.git"
REMOTE = "github.com/example/demo"
PRINCIPAL = "ci@example.com"
NAMESPACE = "agentproto-review"
RUBRIC = "# correctness\nLook for bugs.\n"

MANIFEST = """---
kind: review
id: demo
target: {{ kind: git-range, base: main }}
checks:
  - id: types
    kind: command
    run: "true"
  - id: correctness
    kind: agent
    preset: kimi
    rubric: ./rubrics/correctness.md
{verdict}---

# demo review
"""
EXPORT_DIR = "verdict:\n  exportDir: .reviews\n"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, env=env, check=True)
    return proc.stdout.strip()


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class Key:
    path: Path
    public: str  # "ssh-ed25519 AAAA..."
    fingerprint: str


def make_key(directory: Path, name: str) -> Key:
    path = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
        check=True,
        timeout=30,
        capture_output=True,
    )
    public = " ".join(path.with_suffix(".pub").read_text().split()[:2])
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(path.with_suffix(".pub"))], check=True, timeout=30, capture_output=True, text=True
    ).stdout
    return Key(path, public, out.split()[1])


@pytest.fixture(scope="session", name="keys")
def keys_fixture(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Key]:
    directory = tmp_path_factory.mktemp("keys")
    return {"trusted": make_key(directory, "trusted"), "other": make_key(directory, "other")}


def sign(raw: dict[str, Any], key: Key, principal: str = PRINCIPAL) -> dict[str, Any]:
    """Sign ``raw`` as a host does: SSHSIG over the canonical bytes without attestor.signature."""
    signed = copy.deepcopy(raw)
    signed["attestor"].pop("signature", None)
    work = key.path.parent / f"payload-{threading.get_ident()}-{os.getpid()}"
    work.mkdir(exist_ok=True)
    payload = work / "attestation.json"
    payload.write_bytes(signed_bytes_of(signed))
    sig_path = payload.with_name("attestation.json.sig")
    sig_path.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key.path), "-n", NAMESPACE, str(payload)],
        check=True,
        timeout=30,
        capture_output=True,
    )
    signed["attestor"]["signature"] = {
        "alg": "ssh-ed25519",
        "keyFingerprint": key.fingerprint,
        "principal": principal,
        "signedAt": "2026-01-01T00:00:00.000Z",
        "sig": sig_path.read_text(),
    }
    shutil.rmtree(work)
    return signed


def signers_line(key: Key, principal: str = PRINCIPAL, namespaces: str = NAMESPACE) -> str:
    """One allowed_signers line trusting ``key`` for ``principal``."""
    return f'{principal} namespaces="{namespaces}" {key.public}\n'


def allowed_signers(path: Path, key: Key, principal: str = PRINCIPAL, namespaces: str = NAMESPACE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(signers_line(key, principal, namespaces))
    return path


# --------------------------------------------------------------------------- repository


class Repo:
    """A real repository: ``main`` holds the manifest, ``feature`` is the reviewed range."""

    def __init__(
        self, root: Path, *, export_dir: bool = True, manifest: str | None = None, files: dict[str, str] | None = None
    ):
        self.root = root
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.email", "dev@example.com")
        git(root, "config", "user.name", "Dev")
        git(root, "config", "commit.gpgsign", "false")
        git(root, "remote", "add", "origin", REMOTE_URL)
        (root / "REVIEW.md").write_text(manifest or MANIFEST.format(verdict=EXPORT_DIR if export_dir else ""))
        (root / "rubrics").mkdir()
        (root / "rubrics" / "correctness.md").write_text(RUBRIC)
        self.base = self.commit("base", {"src/a.py": "a = 1\n", **(files or {})})
        git(root, "checkout", "-q", "-b", "feature")
        self.head = self.commit("change", {"src/a.py": "a = 2\n"})

    def commit(self, message: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        return git(self.root, "rev-parse", "HEAD")

    @property
    def manifest_sha(self) -> str:
        return sha256_hex((self.root / "REVIEW.md").read_bytes())

    def attestation(
        self,
        base: str | None = None,
        head: str | None = None,
        *,
        correctness: dict[str, Any] | None = None,
        types_status: str = "pass",
        created_at: str = "2026-01-01T00:00:00.000Z",
        binding: str = "default",
        lanes: list[dict[str, Any]] | None = None,
        packs: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        lanes = lanes or [
            {"id": "types", "kind": "command", "status": types_status, "blocking": True, "findings": [],
             "durationMs": 12, "exitCode": 0 if types_status == "pass" else 1},
            {"id": "correctness", "kind": "agent", "status": "pass", "blocking": True, "findings": [],
             "durationMs": 900, "preset": "kimi", **(correctness or {})},
        ]  # fmt: skip
        att = Attestation.build(
            run_id="review-00000000-0000-4000-8000-000000000000",
            review_id="demo",
            manifest_sha=self.manifest_sha,
            binding=binding,
            repo_remote=REMOTE,
            base_sha=base or self.base,
            head_sha=head or self.head,
            lanes=lanes,
            daemon="agentreview@test",
            rubrics=[{"check": "correctness", "path": "./rubrics/correctness.md", "sha256": sha256_hex(RUBRIC)}],
            packs=packs,
            created_at=created_at,
        )
        return json.loads(att.export_text())

    def export(self, raw: dict[str, Any], name: str | None = None) -> Path:
        directory = self.root / ".reviews"
        directory.mkdir(exist_ok=True)
        head = raw.get("target", {}).get("headSha", "x")
        path = directory / (name or f"demo-{raw.get('binding')}-{str(head)[:12]}.json")
        path.write_text(json.dumps(raw, indent=2) + "\n")
        return path

    def verify(self, **kw: Any) -> VerifyResult:
        return verify(VerifyOptions(cwd=self.root, **kw))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private AGENTREVIEW_HOME under the test's tmp_path, and git without the host's system/global config."""
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)


@pytest.fixture(name="repo")
def repo_fixture(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


def edit_manifest(repo: Repo, old: str, new: str, message: str = "edit the review policy") -> str:
    """Commit, on the reviewed branch, REVIEW.md with ``old`` replaced by ``new``; the new head's sha."""
    text = (repo.root / "REVIEW.md").read_text()
    assert old in text, old
    repo.head = repo.commit(message, {"REVIEW.md": text.replace(old, new)})
    return repo.head
