"""Policy changes that can pass: ``run --policy-from REF`` then ``verify --policy-from REF``.

Everything is real: a repository whose ``main`` holds the review policy (REVIEW.md, a rubric,
``.agentproto/allowed_signers`` trusting the lead's key), developer homes each with their own
ssh-keygen key, ``agentreview run --export`` as a process, and the reviewer an ``exec`` preset
running a small script that logs the rubric and the files of the range it was given (what a
real reviewer reads) and approves.

A change that edits the policy passes the gate only when it was reviewed under ``main``'s policy
(lanes, rubric and trusted keys from ``main``) and signed by a key ``main`` already trusts; an
attestation made under the change's own (edited) policy, or signed only by the key the change
adds, is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

REVIEWER = """
import json, os, subprocess, sys
sys.stdin.read()
names = subprocess.run(["git", "diff", "--name-only", os.environ["AGENTREVIEW_BASE"], os.environ["AGENTREVIEW_HEAD"]],
                       capture_output=True, text=True, check=True).stdout.split()
with open(os.environ["LOG"], "a") as fh:
    fh.write(json.dumps({"rubric": open(os.environ["AGENTREVIEW_RUBRIC"]).read(), "files": names}) + "\\n")
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    json.dump({"decision": "approve", "summary": "ok", "findings": []}, fh)
"""

RUBRIC = "# correctness\nLook hard at every change.\n"
STRICT = manifest(
    "  - id: types\n    kind: command\n    run: 'true'\n"
    "  - id: review\n    kind: agent\n    preset: rev\n    rubric: ./rubric.md\n",
    extra="verdict:\n  exportDir: .reviews\n",
)
# The change's weakened policy: the reviewer lane is gone.
WEAK = manifest("  - id: types\n    kind: command\n    run: 'true'\n", extra="verdict:\n  exportDir: .reviews\n")
LEAD, NEWBIE = "lead@example.test", "newbie@example.test"


class Dev:
    """One developer's home: their own ssh key (made on first use), principal and reviewer preset."""

    def __init__(self, repo: Repo, tmp: Path, name: str, principal: str):
        self.repo, self.home, self.log = repo, tmp / f"home-{name}", tmp / f"log-{name}.jsonl"
        self.home.mkdir()
        script = tmp / "reviewer.py"
        script.write_text(REVIEWER)
        (self.home / "presets.toml").write_text(
            f'[presets.rev]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(script)])}\nenv = ["LOG"]\n'
        )
        (self.home / "config.toml").write_text(f'[signing]\nprincipal = "{principal}"\n')

    @property
    def env(self) -> dict[str, str]:
        return {**self.repo.env, "AGENTREVIEW_HOME": str(self.home), "LOG": str(self.log)}

    def signers_line(self) -> str:
        out = subprocess.run([*AGENTREVIEW, "key", "--json", "--cwd", str(self.repo.path)], env=self.env,
                             capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
        return json.loads(out)["allowedSignersLine"] + "\n"

    def run(self, *args: str, expect: int = 0) -> dict[str, Any]:
        return self.repo.run_json("--export", "--no-cache", *args, env=self.env, expect=expect, timeout=120)

    def reviewed(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def verify(repo: Repo, *args: str) -> tuple[int, dict[str, Any], str]:
    """The CI gate as the recipe runs it; returns (exit code, --json object, text report)."""
    gate = [*AGENTREVIEW, "verify", "--policy-from", "refs/heads/main", "--require-signed", *args]
    js = subprocess.run([*gate, "--json"], cwd=repo.path, env=repo.env, capture_output=True, text=True, timeout=120)
    text = subprocess.run(gate, cwd=repo.path, env=repo.env, capture_output=True, text=True, timeout=120)
    assert js.returncode == text.returncode, (js.stdout, text.stdout)
    return js.returncode, json.loads(js.stdout), text.stdout + text.stderr


@pytest.fixture
def team(tmp_path: Path) -> tuple[Repo, Dev, Dev]:
    """``main`` holds the strict policy and trusts only the lead; a ``feature`` branch is checked out."""
    repo = Repo(tmp_path / "repo", tmp_path / "unused-home")
    lead, newbie = Dev(repo, tmp_path, "lead", LEAD), Dev(repo, tmp_path, "newbie", NEWBIE)
    repo.commit(
        "policy", **{"README.md": "hello\n", "REVIEW.md": STRICT, "rubric.md": RUBRIC,
                     ".agentproto__allowed_signers": lead.signers_line()},
    )  # fmt: skip
    repo.git("switch", "-q", "-c", "feature")
    return repo, lead, newbie


def _commit_exports(repo: Repo) -> None:
    repo.git("add", ".reviews")
    repo.git("commit", "-q", "-m", "review: attest")


def test_a_weakened_policy_reviewed_under_mains_runs_mains_lanes_and_passes(team: tuple[Repo, Dev, Dev]) -> None:
    repo, lead, _ = team
    repo.commit("a weaker review", **{"REVIEW.md": WEAK, "rubric.md": "# correctness\nApprove everything.\n"})
    made = lead.run("--policy-from", "main")
    att = made["attestation"]
    # main's lanes ran, as main declares them: the reviewer lane the change deletes too
    assert [(lane["id"], lane["blocking"], lane["status"]) for lane in att["lanes"]] == [
        ("types", True, "pass"),
        ("review", True, "pass"),
    ]
    assert made["policyFrom"]["ref"] == "refs/heads/main"
    assert att["manifestSha"] == _sha(STRICT.encode())  # the attestation binds main's manifest
    assert att["rubrics"][0]["sha256"] == _sha(RUBRIC.encode())  # and main's rubric
    # the reviewer read main's rubric, and the range it reviewed holds the policy edit itself
    (seen,) = lead.reviewed()
    assert seen["rubric"] == RUBRIC
    assert {"REVIEW.md", "rubric.md"} <= set(seen["files"])
    _commit_exports(repo)
    code, payload, text = verify(repo, "--if-exported")
    assert code == 0, (payload["problems"], payload.get("error"))
    assert payload["policyChange"] == "policy change reviewed under refs/heads/main's policy"
    assert "policy change reviewed under refs/heads/main's policy" in text
    assert payload["principal"] == LEAD


def test_a_policy_change_attested_under_its_own_policy_is_refused(team: tuple[Repo, Dev, Dev]) -> None:
    repo, lead, _ = team
    repo.commit("a weaker review", **{"REVIEW.md": WEAK})
    made = lead.run()  # under the change's own (edited) REVIEW.md: no reviewer lane
    assert [lane["id"] for lane in made["attestation"]["lanes"]] == ["types"]
    _commit_exports(repo)
    code, payload, text = verify(repo, "--if-exported")
    assert code == 1, payload
    assert "policyChange" not in payload
    assert any(
        "the change edits the review policy" in p and "agentreview run --policy-from refs/heads/main" in p
        for p in payload["problems"]
    ), payload["problems"]
    assert "✗ review policy" in text


def test_a_rubric_edit_reviewed_under_mains_passes_and_under_its_own_fails(team: tuple[Repo, Dev, Dev]) -> None:
    repo, lead, _ = team
    lenient = "# correctness\nApprove everything.\n"
    repo.commit("an easier rubric", **{"rubric.md": lenient})
    lead.run()  # under its own rubric: the lenient one is what the reviewer read
    assert lead.reviewed()[-1]["rubric"] == lenient
    _commit_exports(repo)
    code, payload, _ = verify(repo, "--if-exported")
    assert code == 1 and any("rubric of check 'review'" in p for p in payload["problems"]), payload
    repo.git("reset", "-q", "--hard", "HEAD^")
    lead.run("--policy-from", "main")
    assert lead.reviewed()[-1]["rubric"] == RUBRIC
    _commit_exports(repo)
    code, payload, _ = verify(repo, "--if-exported")
    assert code == 0, payload["problems"]
    assert payload["policyChange"] == "policy change reviewed under refs/heads/main's policy"
    assert any("the change edits rubric.md" in n for n in payload["notes"]), payload["notes"]


def test_a_new_teammates_key_passes_attested_by_a_trusted_key_and_fails_by_its_own(
    team: tuple[Repo, Dev, Dev],
) -> None:
    repo, lead, newbie = team
    signers = (repo.path / ".agentproto" / "allowed_signers").read_text()
    repo.commit("trust the new teammate", **{".agentproto__allowed_signers": signers + newbie.signers_line()})
    # attested only by the key the change adds: main does not trust it yet
    newbie.run("--policy-from", "main")
    _commit_exports(repo)
    code, payload, _ = verify(repo, "--if-exported")
    assert code == 6, payload
    assert "policyChange" not in payload and payload["principal"] is None
    # attested by a key main already trusts: passes, and says so
    repo.git("reset", "-q", "--hard", "HEAD^")
    lead.run("--policy-from", "main")
    _commit_exports(repo)
    code, payload, _ = verify(repo, "--if-exported")
    assert code == 0, payload["problems"]
    assert payload["principal"] == LEAD
    assert payload["policyChange"] == "policy change reviewed under refs/heads/main's policy"
    assert any(".agentproto/allowed_signers" in n for n in payload["notes"]), payload["notes"]
    # once merged, the newcomer's own attestations verify on later changes
    repo.git("switch", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "feature")
    repo.git("switch", "-q", "-c", "next")
    repo.commit("newbie's first change", **{"src.txt": "x\n"})
    newbie.run("--policy-from", "main")
    _commit_exports(repo)
    code, payload, _ = verify(repo, "--if-exported")
    assert code == 0 and payload["principal"] == NEWBIE, payload


def test_export_and_publish_carry_the_policy_the_change_was_reviewed_under(team: tuple[Repo, Dev, Dev]) -> None:
    repo, lead, _ = team
    repo.commit("a weaker review", **{"REVIEW.md": WEAK})
    made = lead.run("--policy-from", "main")
    run_id = made["runId"]
    (repo.path / ".reviews").rename(repo.path.parent / "first-export")
    # export writes it again where main's verdict.exportDir says; publish puts it in the head's note
    out = subprocess.run([*AGENTREVIEW, "export", run_id, "--cwd", str(repo.path), "--json"], env=lead.env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    exported = json.loads(Path(json.loads(out.stdout)["path"]).read_text())
    assert exported["manifestSha"] == _sha(STRICT.encode())
    code, payload, _ = verify(repo)
    assert code == 0 and payload["policyChange"], payload["problems"]
    pub = subprocess.run([*AGENTREVIEW, "publish", run_id, "--cwd", str(repo.path), "--no-push"], env=lead.env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert pub.returncode == 0, pub.stderr
    for path in (repo.path / ".reviews").glob("*.json"):
        path.unlink()
    code, payload, _ = verify(repo, "--notes")
    assert code == 0, payload["problems"]
    assert payload["policyChange"] == "policy change reviewed under refs/heads/main's policy"


def test_run_policy_from_a_ref_that_does_not_resolve_is_a_clear_error(team: tuple[Repo, Dev, Dev]) -> None:
    repo, lead, _ = team
    proc = repo.run("--policy-from", "no-such-branch", env=lead.env)
    assert proc.returncode == 3, proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert error.startswith("--policy-from") and "no-such-branch" in error and "\n" not in error


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()
