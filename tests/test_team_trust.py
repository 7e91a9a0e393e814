"""Team trust end to end: host B reuses host A's signed review (a cache hit, a composition prior)
only when B's ``[team] allowed_signers`` trusts A's key, and never a forged or untrusted one.

Two ``AGENTREVIEW_HOME``s with their own real ssh keys review one repository; A's attestation
reaches B's foreign store as ``agentreview fetch`` would put it there. The reviewer is an ``exec``
preset that logs the range it was asked to review, so the tests see whether lanes ran.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

from agentreview.model.contracts import SignerContext
from agentreview.model.digests import attestation_sha256_of
from agentreview.signing.ssh_signer import SshSigner
from agentreview.store.foreign import ForeignStore

REVIEWER = """
import json, os, sys
sys.stdin.read()
with open(os.environ["LOG"], "a") as fh:
    fh.write(os.environ["AGENTREVIEW_BASE"] + ".." + os.environ["AGENTREVIEW_HEAD"] + "\\n")
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    json.dump({"decision": "approve", "summary": "ok", "findings": []}, fh)
"""
A = "alice@team.example"
B = "bob@team.example"
M = "mallory@elsewhere.example"


class Host:
    """One developer's machine: a home with its own key and principal, running in the shared repo."""

    def __init__(self, repo: Repo, tmp: Path, name: str, principal: str):
        self.repo, self.tmp, self.principal = repo, tmp, principal
        self.home = tmp / f"home-{name}"
        self.home.mkdir()
        script = tmp / "reviewer.py"
        (self.home / "presets.toml").write_text(
            f'[presets.rev]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(script)])}\n'
            'env = ["LOG"]\n'
        )
        self.configure()

    def configure(self, team: str | None = None) -> None:
        text = f'[signing]\nprincipal = "{self.principal}"\n'
        if team is not None:
            text += f"[team]\nallowed_signers = {json.dumps(team)}\n"
        (self.home / "config.toml").write_text(text)

    @property
    def signers_line(self) -> str:
        return SshSigner().key_info(SignerContext(home=self.home, principal=self.principal)).allowed_signers_line

    def trust(self, *hosts: Host, name: str = "team_signers") -> None:
        """A team file in this home (relative path, resolved against the home) naming ``hosts``."""
        (self.home / name).write_text("".join(h.signers_line + "\n" for h in hosts))
        self.configure(name)

    @property
    def env(self) -> dict[str, str]:
        return {**self.repo.env, "AGENTREVIEW_HOME": str(self.home), "LOG": str(self.home / "log.txt")}

    def run(self, *args: str, expect: int = 0) -> dict[str, Any]:
        return self.repo.run_json(*args, env=self.env, expect=expect)

    def receive(self, att: dict[str, Any], principal: str = A) -> None:
        """What ``agentreview fetch`` does: store the teammate's attestation as a foreign entry."""
        assert ForeignStore(self.home / "reviews").add(copy.deepcopy(att), remote="origin", principal=principal)

    def own_entries(self) -> list[Path]:
        return [p for p in (self.home / "reviews").rglob("*.json") if "foreign" not in p.parts
                and "runs" not in p.parts and "inflight" not in p.parts and p.name != "annotations.json"]


def reviewed(tmp: Path, home: Path) -> list[str]:
    """The ranges the reviewer was asked to review on the host with ``home``."""
    log = home / "log.txt"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo", tmp_path / "unused-home")
    (tmp_path / "reviewer.py").write_text(REVIEWER)
    text = manifest(
        "  - id: ok\n    kind: command\n    run: 'true'\n"
        "  - id: review\n    kind: agent\n    preset: rev\n    rubric: ./rubric.md\n",
        extra="verdict:\n  exportDir: .reviews\n",
    )
    r.commit("initial", **{"README.md": "hello\n", "rubric.md": "look for bugs\n", "REVIEW.md": text})
    r.git("switch", "-q", "-c", "feature")
    r.commit("one", **{"a.txt": "1\n"})
    return r


@pytest.fixture
def alice(repo: Repo, tmp_path: Path) -> Host:
    return Host(repo, tmp_path, "a", A)


@pytest.fixture
def bob(repo: Repo, tmp_path: Path) -> Host:
    return Host(repo, tmp_path, "b", B)


@pytest.fixture
def alices_review(alice: Host) -> dict[str, Any]:
    att = alice.run()["attestation"]
    assert att["attestor"]["signature"]["principal"] == A and att["verdict"] == "pass"
    return att


def test_a_trusted_teammates_review_is_a_cache_hit(
    repo: Repo, tmp_path: Path, alice: Host, bob: Host, alices_review: dict[str, Any]
) -> None:
    bob.receive(alices_review)
    bob.trust(alice)
    result = bob.run()
    assert result["cached"] is True
    assert result["cachedFrom"] == {"principal": A, "remote": "origin"}
    # Alice's attestation, untouched: not re-signed as Bob's, and not copied into Bob's own entries
    assert result["attestation"] == alices_review
    assert reviewed(tmp_path, bob.home) == []
    assert bob.own_entries() == []
    assert "/foreign/" in result["ledgerPath"]
    text = subprocess.run([*AGENTREVIEW, "run"], cwd=repo.path, env=bob.env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert text.returncode == 0, text.stderr
    assert f"cached from: {A} via origin" in text.stdout


def test_without_team_trust_a_teammates_review_is_never_used(
    tmp_path: Path, alice: Host, bob: Host, alices_review: dict[str, Any]
) -> None:
    bob.receive(alices_review)
    result = bob.run()  # no [team] in config.toml: off by default
    assert result["cached"] is False and "cachedFrom" not in result
    assert result["attestation"]["attestor"]["signature"]["principal"] == B
    assert len(reviewed(tmp_path, bob.home)) == 1


def test_a_tampered_teammate_attestation_is_never_a_hit(
    tmp_path: Path, alice: Host, bob: Host, alices_review: dict[str, Any]
) -> None:
    """Someone with push rights edits Alice's note (keeps her signature, changes a signed member)."""
    forged = copy.deepcopy(alices_review)
    forged["lanes"][1]["summary"] = "looks great (edited after signing)"
    bob.receive(forged)
    bob.trust(alice)
    result = bob.run()
    assert result["cached"] is False and "cachedFrom" not in result
    assert len(reviewed(tmp_path, bob.home)) == 1


def test_an_untrusted_key_is_never_a_hit_even_claiming_a_trusted_principal(
    repo: Repo, tmp_path: Path, alice: Host, bob: Host
) -> None:
    """Mallory signs with her own key but names Alice as the principal, at import and in the signature."""
    mallory = Host(repo, tmp_path, "m", A)  # her key, Alice's name
    forged = mallory.run()["attestation"]
    assert forged["attestor"]["signature"]["principal"] == A
    bob.receive(forged, principal=A)
    bob.trust(alice)
    result = bob.run()
    assert result["cached"] is False and "cachedFrom" not in result
    assert len(reviewed(tmp_path, bob.home)) == 1


def test_a_team_file_inside_a_repository_is_refused(
    repo: Repo, tmp_path: Path, alice: Host, bob: Host, alices_review: dict[str, Any]
) -> None:
    """The reviewed change could edit a team file that lives in the repository: never trusted."""
    bob.receive(alices_review)
    (repo.path / "team_signers").write_text(alice.signers_line + "\n")
    bob.configure(str(repo.path / "team_signers"))
    proc = repo.run(env=bob.env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "[team].allowed_signers" in out and "inside the git repository" in out
    assert "Traceback" not in out
    assert reviewed(tmp_path, bob.home) == []


def test_a_delta_review_composes_on_a_trusted_teammates_review_and_verifies(
    repo: Repo, tmp_path: Path, alice: Host, bob: Host, alices_review: dict[str, Any]
) -> None:
    first_head = alices_review["target"]["headSha"]
    bob.receive(alices_review)
    bob.trust(alice)
    second_head = repo.commit("two", **{"b.txt": "2\n"})
    result = bob.run("--export")
    att = result["attestation"]
    assert result["cached"] is False
    assert att["attestor"]["signature"]["principal"] == B
    # Bob's reviewer saw only the new commit
    assert reviewed(tmp_path, bob.home) == [f"{first_head}..{second_head}"]
    assert att["lanes"][1]["composedFrom"] == {
        "rangeSha": alices_review["rangeSha"],
        "headSha": first_head,
        "attestationSha256": attestation_sha256_of(alices_review),
        "principal": A,
    }
    assert "composedFrom" not in att["lanes"][0]
    # the export directory holds Bob's attestation and Alice's prior; verify accepts the set,
    # signatures included, against a file naming both keys
    exported = sorted(p.name for p in (repo.path / ".reviews").rglob("*.json"))
    assert len(exported) == 2, exported
    both = tmp_path / "both_signers"
    both.write_text(alice.signers_line + "\n" + bob.signers_line + "\n")
    verify = subprocess.run([*AGENTREVIEW, "verify", "--json", "--require-signed", "--allowed-signers", str(both)],
                            cwd=repo.path, env=bob.env, capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize("forgery", ["tampered", "untrusted-key"])
def test_a_forged_teammate_review_is_never_a_prior(
    repo: Repo, tmp_path: Path, alice: Host, bob: Host, alices_review: dict[str, Any], forgery: str
) -> None:
    if forgery == "tampered":
        forged = copy.deepcopy(alices_review)
        forged["createdAt"] = "2099-01-01T00:00:00.000Z"
    else:
        forged = Host(repo, tmp_path, "m", A).run()["attestation"]
    bob.receive(forged)
    bob.trust(alice)
    second_head = repo.commit("two", **{"b.txt": "2\n"})
    att = bob.run()["attestation"]
    base = att["target"]["baseSha"]
    assert reviewed(tmp_path, bob.home) == [f"{base}..{second_head}"]
    assert "composedFrom" not in att["lanes"][1]


def test_through_publish_and_fetch_a_trusted_review_is_a_hit_in_another_clone(
    repo: Repo, tmp_path: Path, alice: Host, bob: Host
) -> None:
    """A publishes to a bare remote over git notes; B, in its own clone, fetches and reuses it."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    repo.git("remote", "add", "origin", f"file://{bare}")
    repo.git("push", "-q", "origin", "main", "feature")
    published = alice.run("--publish")
    assert published["attestation"]["attestor"]["signature"]["principal"] == A
    clone = Repo.__new__(Repo)
    clone.path, clone.home = tmp_path / "clone", bob.home
    subprocess.run(["git", "clone", "-q", "-b", "feature", f"file://{bare}", str(clone.path)], check=True)
    clone.git("branch", "-q", "main", "origin/main")
    bob.repo = clone
    fetched = subprocess.run([*AGENTREVIEW, "fetch", "--json"], cwd=clone.path, env=bob.env, capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    assert json.loads(fetched.stdout)["new"] == 1
    assert bob.run()["cached"] is False  # fetched but not trusted: lanes ran
    bob.own_entries()[0].unlink()  # forget Bob's own review, keep the foreign entry
    bob.trust(alice)
    result = bob.run()
    assert result["cached"] is True and result["cachedFrom"] == {"principal": A, "remote": "origin"}
    assert result["attestation"] == published["attestation"]
