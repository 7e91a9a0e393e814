"""Attack: a tag named like the policy or base branch chooses what the gate reads and what the run reviews.

git's name lookup takes ``refs/tags/origin/main`` before ``refs/remotes/origin/main`` and only
warns on stderr. A clone fetches every tag, and ``git fetch`` follows tags that point into the
branches it fetches, so anyone who can push a tag could (a) choose the commit
``verify --policy-from origin/main`` reads REVIEW.md and allowed_signers from (their key trusted,
their self-signed export passing a fresh CI checkout), and (b) move ``target.base: origin/main``
so commits between the real main and the tag are never in a reviewed range. Every party here is
a real clone of a real bare remote, with its own host key; the CLI runs as a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENTREVIEW = [sys.executable, "-m", "agentreview"]

MANIFEST = """---
kind: review
id: widgets
target: {{ kind: git-range, base: {base} }}
verdict: {{ exportDir: .reviews }}
checks:
  - id: tests
    kind: command
    run: "true"
---

# widgets
"""


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_", "GIT_"))}
    env.pop("CI", None)
    return {**env, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


class Clone:
    """A clone of the shared bare remote, worked in by one party with its own agentreview home."""

    def __init__(self, remote: Path, path: Path, home: Path):
        self.path, self.home = path, home
        home.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(remote), str(path)], check=True, env=_git_env(), timeout=60)
        for key, value in (("user.email", f"{path.name}@example.test"), ("user.name", path.name)):
            self.git("config", key, value)

    def git(self, *args: str) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=self.path, capture_output=True, text=True, timeout=60, env=_git_env(), check=True
        )
        return proc.stdout.strip()

    def commit(self, message: str, files: dict[str, str]) -> str:
        for rel, text in files.items():
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.path / rel).write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def ar(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTREVIEW, *args],
            cwd=self.path,
            env={**_git_env(), "AGENTREVIEW_HOME": str(self.home)},
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )

    def signers_line(self) -> str:
        key = self.ar("key", "--json")
        assert key.returncode == 0, key.stderr
        return str(json.loads(key.stdout)["allowedSignersLine"])

    def review_and_commit_export(self, *args: str) -> subprocess.CompletedProcess[str]:
        run = self.ar("run", "--export", *args)
        if run.returncode == 0:
            self.git("add", "-A")
            self.git("commit", "-q", "-m", "review: attest")
        return run


def world(tmp_path: Path, base: str) -> tuple[Path, Clone]:
    """A bare ``origin`` whose main holds the policy (target.base ``base``, the maintainer's key)."""
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True, env=_git_env(), timeout=30)
    maintainer = Clone(remote, tmp_path / "maintainer", tmp_path / "home-maintainer")  # of the empty remote
    maintainer.commit(
        "policy",
        {
            "REVIEW.md": MANIFEST.format(base=base),
            ".agentproto/allowed_signers": maintainer.signers_line() + "\n",
            "app.py": "x = 1\n",
        },
    )
    maintainer.git("push", "-q", "origin", "HEAD:refs/heads/main")
    maintainer.git("fetch", "-q", "origin")
    return remote, maintainer


def refusal(proc: subprocess.CompletedProcess[str]) -> str:
    """The one line an exit-3 refusal prints (on stderr)."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_a_pushed_tag_named_like_the_policy_branch_cannot_choose_the_policy(tmp_path: Path) -> None:
    """(a) The attacker's tag ``origin/main`` holds allowed_signers with their own key; their
    self-signed export on a fresh CI clone passed ``verify --policy-from origin/main --require-signed``
    (exit 0). Now the name is refused (exit 3) with one line naming both refs; the full ref reads
    the real policy, under which the attacker's signature is untrusted (6) and an honest one passes."""
    remote, maintainer = world(tmp_path, base="refs/remotes/origin/main")
    main_sha = maintainer.git("rev-parse", "refs/remotes/origin/main")

    attacker = Clone(remote, tmp_path / "attacker", tmp_path / "home-attacker")
    attacker.git("switch", "-q", "--detach", "refs/remotes/origin/main")
    attacker.commit("trust me", {".agentproto/allowed_signers": attacker.signers_line() + "\n"})
    attacker.git("tag", "origin/main")
    attacker.git("push", "-q", "origin", "refs/tags/origin/main")
    attacker.git("switch", "-q", "-c", "feature", "refs/remotes/origin/main")
    attacker.commit("innocent change", {"app.py": "x = eval(input())\n"})
    assert attacker.review_and_commit_export().returncode == 0
    attacker.git("push", "-q", "origin", "feature")

    maintainer.git("switch", "-q", "-c", "honest", "refs/remotes/origin/main")
    maintainer.commit("honest change", {"app.py": "x = 2\n"})
    assert maintainer.review_and_commit_export().returncode == 0
    maintainer.git("push", "-q", "origin", "honest")

    ci = Clone(remote, tmp_path / "ci", tmp_path / "home-ci")  # actions/checkout with fetch-depth: 0
    assert ci.git("for-each-ref", "--format=%(refname)", "refs/tags/origin/main") == "refs/tags/origin/main"
    ci.git("checkout", "-q", "--detach", "refs/remotes/origin/feature")

    gate = ci.ar("verify", "--policy-from", "origin/main", "--require-signed")
    assert gate.returncode == 3, gate.stdout + gate.stderr
    line = refusal(gate)
    assert "'origin/main' is ambiguous: refs/tags/origin/main and refs/remotes/origin/main both match" in line
    assert line.startswith("agentreview verify: --policy-from origin/main:"), line

    gate = ci.ar("verify", "--policy-from", "refs/remotes/origin/main", "--require-signed")
    assert gate.returncode == 6, gate.stdout + gate.stderr  # the attacker's key is not the policy's

    ci.git("checkout", "-q", "--detach", "refs/remotes/origin/honest")
    gate = ci.ar("verify", "--policy-from", "refs/remotes/origin/main", "--require-signed")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert f"resolved: --policy-from refs/remotes/origin/main at {main_sha}" in gate.stdout
    assert f"resolved: target.base refs/remotes/origin/main at {main_sha}" in gate.stdout
    shown = json.loads(ci.ar("verify", "--policy-from", "refs/remotes/origin/main", "--json").stdout)
    assert shown["refs"][0] == {
        "role": "--policy-from",
        "name": "refs/remotes/origin/main",
        "ref": "refs/remotes/origin/main",
        "commit": main_sha,
    }


def test_a_fetched_tag_named_like_the_base_branch_cannot_move_the_reviewed_range(tmp_path: Path) -> None:
    """(b) With ``target.base: origin/main`` (the short form init used to write), a tag ``origin/main``
    on the attacker's branch moved the base to the tag for the honest reviewer and for CI, so the
    commits before it were merged without ever being in a reviewed range. Now both refuse the name
    (exit 3, both refs named); the full ref reviews from the real main."""
    remote, maintainer = world(tmp_path, base="origin/main")
    main_sha = maintainer.git("rev-parse", "refs/remotes/origin/main")
    reviewer = Clone(remote, tmp_path / "reviewer", tmp_path / "home-reviewer")  # cloned before the tag exists

    attacker = Clone(remote, tmp_path / "attacker", tmp_path / "home-attacker")
    attacker.git("switch", "-q", "-c", "feature", "refs/remotes/origin/main")
    hidden = attacker.commit("the part nobody should see", {"app.py": "import os; os.system(input())\n"})
    attacker.git("tag", "origin/main")
    attacker.commit("the part for review", {"README": "docs\n"})
    attacker.git("push", "-q", "origin", "feature", "refs/tags/origin/main")

    reviewer.git("fetch", "-q", "origin")  # follows the tag into the fetched branch
    assert reviewer.git("rev-parse", "refs/tags/origin/main") == hidden
    reviewer.git("checkout", "-q", "--detach", "refs/remotes/origin/feature")

    run = reviewer.ar("run", "--export")
    assert run.returncode == 3, run.stdout + run.stderr
    line = refusal(run)
    assert "target.base: 'origin/main' is ambiguous: refs/tags/origin/main and refs/remotes/origin/main" in line
    assert not (reviewer.path / ".reviews").exists()  # nothing reviewed, nothing exported

    run = reviewer.ar("run", "--base", "refs/remotes/origin/main", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["attestation"]["target"]["baseSha"] == main_sha  # the hidden commit is in the range
    assert result["refs"][0] == {
        "role": "--base",
        "name": "refs/remotes/origin/main",
        "ref": "refs/remotes/origin/main",
        "commit": main_sha,
    }

    ci = Clone(remote, tmp_path / "ci", tmp_path / "home-ci")
    ci.git("checkout", "-q", "--detach", "refs/remotes/origin/feature")
    gate = ci.ar("verify", "--policy-from", "refs/remotes/origin/main", "--if-exported")
    assert gate.returncode == 3, gate.stdout + gate.stderr
    assert "target.base: 'origin/main' is ambiguous: refs/tags/origin/main and refs/remotes/origin/main" in refusal(
        gate
    )


def test_a_range_from_full_refs_is_reviewed_and_reported_by_full_ref(tmp_path: Path) -> None:
    """The form init now writes: run and verify report the full ref and the commit each name resolved to."""
    _, maintainer = world(tmp_path, base="refs/remotes/origin/main")
    main_sha = maintainer.git("rev-parse", "refs/remotes/origin/main")
    maintainer.git("switch", "-q", "-c", "topic", "refs/remotes/origin/main")
    head = maintainer.commit("change", {"app.py": "x = 3\n"})
    run = maintainer.ar("run")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"range:   target.base refs/remotes/origin/main at {main_sha}" in run.stdout
    assert f"range:   head HEAD at {head}" in run.stdout


def test_a_branch_beside_a_tag_of_the_same_name_is_refused_for_base_and_head(tmp_path: Path) -> None:
    """``--base``/``--head`` on run and verify: a tag ``topic`` beside the branch ``topic`` is refused,
    naming both; the full refs work."""
    _, maintainer = world(tmp_path, base="refs/remotes/origin/main")
    maintainer.git("switch", "-q", "-c", "topic", "refs/remotes/origin/main")
    maintainer.commit("change", {"app.py": "x = 4\n"})
    maintainer.git("tag", "topic", "refs/remotes/origin/main")
    maintainer.git("switch", "-q", "--detach", "HEAD")
    for args in (
        ("run", "--head", "topic"),
        ("run", "--base", "topic"),
        ("verify", "--head", "topic", "--if-exported"),
        ("verify", "--base", "topic", "--if-exported"),
    ):
        proc = maintainer.ar(*args)
        assert proc.returncode == 3, (args, proc.stdout + proc.stderr)
        assert "'topic' is ambiguous: refs/tags/topic and refs/heads/topic both match" in refusal(proc), args
    proc = maintainer.ar("run", "--head", "refs/heads/topic", "--base", "refs/tags/topic", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [ref["ref"] for ref in json.loads(proc.stdout)["refs"]] == ["refs/tags/topic", "refs/heads/topic"]
