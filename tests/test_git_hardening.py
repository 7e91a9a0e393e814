"""Git that the host starts runs no program the repository's configuration or attributes name.

The attack: a checkout whose ``.git/config`` (a restored CI cache, an unpacked archive, another
process of the same user) sets ``core.fsmonitor``, ``diff.external``, a textconv and an external
diff driver, clean and process filters (named by the change's own ``.gitattributes``), a hooks
directory, ``log.showSignature`` with ``gpg.program`` on a signed head commit; and an
environment carrying ``GIT_EXTERNAL_DIFF`` and ``GIT_CONFIG_PARAMETERS``. Each program appends
its name to a marker file. ``agentreview run`` (a command lane, an exec reviewer that reads the
diff, the claude provider against its fake CLI), ``verify`` through the HEAD^ retry, and
``check`` must leave the marker absent; on the code before the hardened runner, ``run`` fired
fsmonitor, the filter, the external diff, textconv and gpg, and ``verify`` fired fsmonitor
from ``git diff-tree``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview.host import git as hostgit
from agentreview.host.gitrun import GitError, hardened_env, run_git

ROOT = Path(__file__).resolve().parents[1]
FAKES = ROOT / "plugins" / "agentreview-agent" / "tests" / "fakes"
DEMO_REVIEWER = ROOT / "agentreview" / "demo" / "reviewer.py"
AGENTREVIEW = [sys.executable, "-m", "agentreview"]
HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction", "pre-push")
# the test's own git, after poisoning
SAFE = [word for option in ("core.hooksPath=/dev/null", "core.fsmonitor=false", "filter.evil.clean=",
                            "filter.evil.smudge=", "filter.evilproc.process=") for word in ("-c", option)]  # fmt: skip


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *SAFE, *args], cwd=cwd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, env=env
    )
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


class Trap:
    """Programs that record their name in ``marker`` when anything runs them."""

    def __init__(self, where: Path):
        self.dir = where
        self.dir.mkdir()
        self.marker = where / "ran.txt"

    def program(self, name: str, *, passthrough: bool = False) -> str:
        path = self.dir / name
        body = f'#!/bin/sh\necho "{name} $*" >> "{self.marker}"\n' + ("cat\n" if passthrough else "exit 0\n")
        path.write_text(body)
        path.chmod(0o755)
        return str(path)

    def ran(self) -> list[str]:
        return self.marker.read_text().splitlines() if self.marker.exists() else []


def poison(root: Path, trap: Trap) -> None:
    """The hostile ``.git/config`` and hooks (the change's ``.gitattributes`` is already committed)."""
    hooks = trap.dir / "hooks"
    hooks.mkdir()
    for hook in HOOKS:
        for where in (hooks, root / ".git" / "hooks"):
            (where / hook).write_text(f'#!/bin/sh\necho "hook {hook}" >> "{trap.marker}"\n')
            (where / hook).chmod(0o755)
    settings = {
        "core.fsmonitor": trap.program("fsmonitor"),
        "core.hooksPath": str(hooks),
        "core.pager": trap.program("pager"),
        "diff.external": trap.program("external-diff"),
        "diff.evil.textconv": trap.program("textconv", passthrough=True),
        "diff.evil.command": trap.program("diff-driver"),
        "filter.evil.clean": trap.program("clean-filter", passthrough=True),
        "filter.evil.smudge": trap.program("smudge-filter", passthrough=True),
        "filter.evilproc.process": trap.program("process-filter"),
        "log.showSignature": "true",
        "gpg.program": trap.program("gpg"),
    }
    for key, value in settings.items():
        git(root, "config", key, value)


def poisoned_env(trap: Trap, base: dict[str, str]) -> dict[str, str]:
    return {
        **base,
        "GIT_EXTERNAL_DIFF": trap.program("env-external-diff"),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{trap.program('env-fsmonitor')}' "
        f"'filter.evil.clean'='{trap.program('env-clean-filter', passthrough=True)}'",
    }


def signed_head(root: Path) -> str:
    """Re-make HEAD as a commit carrying a ``gpgsig`` header, so ``log.showSignature`` would call gpg."""
    raw = git(root, "cat-file", "commit", "HEAD")
    header, _, message = raw.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    proc = subprocess.run(
        ["git", *SAFE, "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=root,
        input=f"{header}\n{signature}\n\n{message}\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    sha = proc.stdout.strip()
    git(root, "update-ref", "refs/heads/feature", sha)
    return sha


MANIFEST = """---
kind: review
id: hardening
target: { kind: git-range, base: main }
verdict: { exportDir: .reviews }
checks:
  - id: tests
    kind: command
    run: echo lane ran
    timeoutMs: 300000
  - id: diffread
    kind: agent
    preset: diffread
    rubric: ./rubric.md
    blockOn: high
    timeoutMs: 300000
  - id: claude
    kind: agent
    preset: claude
    rubric: ./rubric.md
    blockOn: high
    timeoutMs: 300000
---

# hardening
"""


class Attack:
    """The repository, its traps, and the environments to run agentreview in (``env`` is poisoned)."""

    def __init__(self, root: Path, trap: Trap, clean_env: dict[str, str]):
        self.root, self.trap, self.clean_env = root, trap, clean_env
        self.env = poisoned_env(trap, clean_env)

    def arm(self) -> None:
        poison(self.root, self.trap)
        os.utime(self.root / "app.py", (1, 1))  # stat-dirty, content clean: `git status` must hash it (filters)
        os.utime(self.root / "notes.txt", (1, 1))


def make_attack(tmp_path: Path) -> Attack:
    """A repository with a reviewed range, traps ready to arm, and the environment to run agentreview in."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.test")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "commit.gpgsign", "false")
    (root / "REVIEW.md").write_text(MANIFEST)
    (root / "rubric.md").write_text("Look for bugs.\n")
    (root / "app.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("notes\n")
    (root / ".gitattributes").write_text("*.py diff=evil filter=evil\n*.txt filter=evilproc\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "switch", "-q", "-c", "feature")
    (root / "app.py").write_text("x = 2\n")
    (root / "notes.txt").write_text("more notes\n")
    git(root, "commit", "-q", "-am", "change")
    signed_head(root)
    git(root, "reset", "-q", "--hard", "feature")

    trap = Trap(tmp_path / "trap")
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    prelude = f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(FAKES)!r})\n"
    claude.write_text(prelude + (FAKES / "fake_claude.py").read_text())
    claude.chmod(0o755)
    (bin_dir / "control.json").write_text(json.dumps({"record": str(tmp_path / "claude-calls.jsonl")}))
    (home / "presets.toml").write_text(
        f'[presets.diffread]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(DEMO_REVIEWER)])}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GIT_"))}
    env.update(
        AGENTREVIEW_HOME=str(home),
        HOME=str(tmp_path / "userhome"),
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        CI="true",
    )
    return Attack(root, trap, env)


@pytest.fixture
def attacked(tmp_path: Path) -> Attack:
    attack = make_attack(tmp_path)
    attack.arm()
    return attack


def agentreview(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREVIEW, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def test_run_starts_no_program_the_repository_configures(attacked: Attack) -> None:
    root, trap, env = attacked.root, attacked.trap, attacked.env
    ran = agentreview(root, env, "run", "--export", "--json")
    assert trap.ran() == [], "agentreview run started programs the repository configures"
    result = json.loads(ran.stdout)
    assert result["attestation"], (ran.stdout, ran.stderr)
    lanes = {lane["id"]: lane for lane in result["attestation"]["lanes"]}
    assert ran.returncode == 0, (ran.stderr, lanes)
    assert {lane["status"] for lane in lanes.values()} == {"pass"}, lanes
    assert "-x = 1" in json.loads((trap.dir.parent / "claude-calls.jsonl").read_text().splitlines()[0])["diff_text"]


def test_verify_through_the_head_retry_and_check_start_no_program_the_repository_configures(tmp_path: Path) -> None:
    attack = make_attack(tmp_path)
    root, trap, env = attack.root, attack.trap, attack.env
    exported = agentreview(root, attack.clean_env, "run", "--export")  # before the traps are armed
    assert exported.returncode == 0, exported.stdout + exported.stderr
    # Commit the export: HEAD now only adds exports, so verify retries with HEAD^ (git diff-tree).
    git(root, "add", ".reviews")
    git(root, "commit", "-q", "--no-verify", "-m", "review: attest")
    attack.arm()
    for environment in (attack.clean_env, env):  # .git/config alone, then with the poisoned environment
        verified = agentreview(root, environment, "verify", "--base", "main")
        assert trap.ran() == [], "agentreview verify started programs the repository configures"
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "only adds exports" in verified.stdout

        checked = agentreview(root, environment, "check")
        assert checked.returncode == 0, checked.stderr
        assert trap.ran() == [], "agentreview check started programs the repository configures"


def test_each_git_fact_and_the_public_runner_stay_hardened(attacked: Attack) -> None:
    root, trap, env = attacked.root, attacked.trap, attacked.env
    head = hostgit.rev_parse_commit(root, "HEAD")
    assert hostgit.changed_entries(root, head)
    assert hostgit.tree_modes(root, head, ["app.py"]) == {"app.py": "100644"}
    hostgit.is_dirty(root)
    hostgit.is_tracked(root, "app.py")
    assert hostgit.commit_author(root, head) == ("Dev", "dev@example.test")
    run_git(["diff", "main..HEAD"], root, env=env)
    run_git(["log", "-p", "--stat", "main..HEAD"], root, env=env)
    run_git(["show", "HEAD"], root, env=env)
    run_git(["blame", "app.py"], root, env=env)
    run_git(["diff"], root, env=env)
    run_git(["status"], root, env=env)
    assert trap.ran() == []
    # the same calls without the runner do start them: the traps are armed
    for plain in (["diff", "main..HEAD"], ["log", "-1"], ["status"]):
        subprocess.run(["git", *plain], cwd=root, capture_output=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
    assert {line.split()[0] for line in trap.ran()} >= {"gpg", "diff-driver", "env-fsmonitor"}


def test_only_the_subcommand_comes_first_and_program_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="subcommand first"):
        run_git(["-c", "core.fsmonitor=/bin/true", "status"], tmp_path)
    with pytest.raises(GitError, match="subcommand first"):
        run_git(["--git-dir=/elsewhere", "status"], tmp_path)
    for flag in ("--textconv", "--filters", "--ext-diff"):
        with pytest.raises(GitError, match="refused"):
            run_git(["cat-file", flag, "HEAD:x"], tmp_path)
    # after `--` a word is a path, never an option
    with pytest.raises(GitError, match="not a git repository"):
        run_git(["log", "--", "--textconv"], tmp_path)


def test_environment_keeps_the_repository_location_and_drops_programs() -> None:
    base = {
        "GIT_DIR": ".git",
        "GIT_INDEX_FILE": ".git/next-index.lock",
        "GIT_CONFIG_GLOBAL": "/etc/x",
        "GIT_AUTHOR_NAME": "A",
        "GIT_EXTERNAL_DIFF": "evil",
        "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='evil'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_SSH_COMMAND": "evil",
        "GIT_ASKPASS": "evil",
        "SSH_ASKPASS": "evil",
        "GIT_EXEC_PATH": "/evil",
        "GIT_PAGER": "evil",
        "PATH": "/usr/bin",
    }
    env = hardened_env(base)
    assert {k: v for k, v in env.items() if k in base} == {
        "GIT_DIR": ".git",
        "GIT_INDEX_FILE": ".git/next-index.lock",
        "GIT_CONFIG_GLOBAL": "/etc/x",
        "GIT_AUTHOR_NAME": "A",
        "GIT_PAGER": "cat",
        "PATH": "/usr/bin",
    }
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_git_lfs_filters_the_user_installed_keep_working(git_repo, tmp_path: Path) -> None:
    """``git lfs install --local`` writes exactly these; they stay (switching them off would make every
    racy LFS file look modified), while any other command under the lfs name is switched off."""
    from agentreview.host.gitrun import _filter_overrides

    root = git_repo()
    for var, value in (("clean", "git-lfs clean -- %f"), ("smudge", "git-lfs smudge -- %f"),
                       ("process", "git-lfs filter-process"), ("required", "true")):  # fmt: skip
        git(root, "config", f"filter.lfs.{var}", value)
    assert _filter_overrides(str(root), hardened_env(), 30) == []
    git(root, "config", "filter.lfs.process", "sh -c evil")
    assert "filter.lfs.process=" in _filter_overrides(str(root), hardened_env(), 30)
