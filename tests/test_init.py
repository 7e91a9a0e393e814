"""``agentreview init`` on real repositories: the manifest it writes is accepted and its checks pass,
the installed hook gates a real ``git push`` to a bare remote, a hook already there keeps running,
a second run changes no byte, ``--force``. The GitHub workflow, run as a runner runs it, is
tests/test_init_workflow.py's.

Every command is a real process: ``agentreview`` (the installed console script's interpreter),
``git``, ``pytest`` inside the command lane, ``node --test`` through ``npm test``, ssh-keygen for
the signature. The agent check runs through an ``exec`` preset (the demo's deterministic reviewer),
so a verdict is a full ``pass`` or ``block``, never an ``incomplete`` that would hide whether the
command checks passed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GitRepoFactory, git

BIN = Path(sys.executable).parent
REVIEWER = Path(__file__).resolve().parent.parent / "agentreview" / "demo" / "reviewer.py"
PY_FILES = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
    '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n',
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    ".gitignore": ".pytest_cache/\n__pycache__/\n",
}


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("AGENTREVIEW_DISABLE_PLUGINS", None)
    env.update(extra or {})
    return env


def ar(cwd: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentreview", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def push(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def team_bot(agentreview_home: Path) -> str:
    """A user preset that runs the demo's deterministic reviewer through the ``exec`` provider."""
    (agentreview_home / "presets.toml").write_text(
        '[presets.team-bot]\nprovider = "exec"\n'
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(REVIEWER))}]\n"
    )
    return "team-bot"


def with_remote(repo: Path, tmp_path: Path) -> Path:
    """A bare remote ``origin`` that has ``main`` (pushed before any hook exists)."""
    bare = tmp_path / f"{repo.name}-remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    return bare


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def lanes(result: dict) -> dict[str, str]:
    return {lane["id"]: lane["status"] for lane in result["attestation"]["lanes"]}


def tree_digest(root: Path) -> dict[str, tuple[int, int, str]]:
    """(mode, mtime_ns, sha256) of every file of the work tree and of the hooks folder."""
    out: dict[str, tuple[int, int, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if (rel.startswith(".git/") and not rel.startswith(".git/hooks/")) or path.is_dir():
            continue
        info = path.lstat()
        out[rel] = (info.st_mode, info.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def test_python_repository_manifest_is_valid_and_its_checks_pass(git_repo: GitRepoFactory, team_bot: str) -> None:
    repo = git_repo(files=PY_FILES)
    proc = ar(repo, "init", "--reviewer", team_bot, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["written"]) == {
        "REVIEW.md",
        "rubrics/correctness.md",
        ".agentproto/allowed_signers",
        ".git/hooks/pre-push",
    }
    check = ar(repo, "check", "--json")
    assert check.returncode == 0, check.stderr
    shown = json.loads(check.stdout)
    assert shown["target"] == {"kind": "git-range", "base": "refs/heads/main"}  # no remote
    assert shown["exportDir"] == ".reviews"
    # one binding, so `agentreview run` with no --binding runs it (AIP-62's only-binding rule)
    (only,) = shown["bindings"]
    assert only["name"] == "local" and only["on"] == "pre-push"
    local = {lane["id"]: lane for lane in only["lanes"]}
    assert local["pytest"]["run"] == "pytest -q"
    assert local["correctness"]["preset"] == team_bot
    assert local["correctness"]["rubricPath"] == str(repo / "rubrics" / "correctness.md")
    rubric = (repo / "rubrics" / "correctness.md").read_text()
    assert "## high" in rubric and len(rubric) > 1500  # a rubric, not a placeholder
    signers = (repo / ".agentproto" / "allowed_signers").read_text()
    assert signers.startswith('test@example.com namespaces="agentproto-review" ssh-ed25519 ')
    commit_all(repo, "adopt agentreview")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    commit_all(repo, "sub")
    run = ar(repo, "run", "--binding", "local", "--base", "HEAD^", "--json")
    result = json.loads(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert result["verdict"] == "pass" and lanes(result) == {"pytest": "pass", "correctness": "pass"}
    # The same manifest blocks when the repository's own tests fail: the command check is real.
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    commit_all(repo, "break add")
    run = ar(repo, "run", "--binding", "local", "--base", "HEAD^", "--json")
    assert run.returncode == 1 and lanes(json.loads(run.stdout))["pytest"] == "fail"
    assert "1 failed" in run.stdout  # the repository's test failed, not the command


def test_node_repository_manifest_is_valid_and_npm_test_passes(git_repo: GitRepoFactory, team_bot: str) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed: a Node repository is part of what init must detect")
    repo = git_repo(
        files={
            "package.json": json.dumps({"name": "web", "version": "1.0.0", "scripts": {"test": "node --test"}}),
            "sum.js": "module.exports = (a, b) => a + b;\n",
            "test/sum.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
            "const sum = require('../sum.js');\ntest('sum', () => assert.strictEqual(sum(2, 3), 5));\n",
        }
    )
    proc = ar(repo, "init", "--reviewer", team_bot, "--hook", "none")
    assert proc.returncode == 0, proc.stderr
    assert "npm-test" in proc.stdout and not (repo / ".git" / "hooks" / "pre-push").exists()
    check = json.loads(ar(repo, "check", "--json", "--binding", "local").stdout)
    assert [lane["run"] for lane in check["bindings"][0]["lanes"] if lane["kind"] == "command"] == ["npm test"]
    commit_all(repo, "adopt agentreview")
    (repo / "README.md").write_text("web\n")
    commit_all(repo, "readme")
    run = ar(repo, "run", "--base", "HEAD^", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert lanes(json.loads(run.stdout)) == {"npm-test": "pass", "correctness": "pass"}


def test_hook_blocks_a_push_with_a_failing_test_and_lets_a_passing_one_through(
    git_repo: GitRepoFactory, team_bot: str, tmp_path: Path
) -> None:
    repo = git_repo(files=PY_FILES)
    bare = with_remote(repo, tmp_path)
    # A hook that was already there: it must still run, with the pushed refs on its stdin.
    old_hook = repo / ".git" / "hooks" / "pre-push"
    old_hook.write_text(f'#!/bin/sh\ncat >> "{tmp_path}/old-hook-ran"\nexit 0\n')
    old_hook.chmod(0o755)
    proc = ar(repo, "init", "--reviewer", team_bot)
    assert proc.returncode == 0, proc.stderr
    # asked of the remote (ls-remote): no origin/HEAD in this clone
    assert "base: refs/remotes/origin/main" in proc.stdout
    hooks = repo / ".git" / "hooks"
    assert (hooks / "pre-push.local").read_text().startswith("#!/bin/sh\ncat >>")
    assert (hooks / "pre-push").stat().st_mode & stat.S_IXUSR
    commit_all(repo, "adopt agentreview")
    ok = push(repo, "origin", "main")
    assert ok.returncode == 0, ok.stderr
    assert "verdict: pass" in ok.stdout + ok.stderr
    assert "refs/heads/main" in (tmp_path / "old-hook-ran").read_text()

    git(repo, "switch", "-q", "-c", "topic")
    (repo / "calc.py").write_text("def add(a, b):\n    return a * b\n")
    commit_all(repo, "break add")
    blocked = push(repo, "origin", "topic")
    assert blocked.returncode != 0
    assert "verdict: block" in blocked.stdout + blocked.stderr
    assert git(bare, "branch", "--list", "topic") == ""

    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    commit_all(repo, "fix add")
    passed = push(repo, "origin", "topic")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert git(bare, "rev-parse", "topic").strip() == git(repo, "rev-parse", "HEAD").strip()

    # The chained hook still decides too: when it fails, the push stops although the review passes.
    (hooks / "pre-push.local").write_text("#!/bin/sh\necho 'old hook says no' >&2\nexit 7\n")
    (repo / "notes.txt").write_text("notes\n")
    commit_all(repo, "notes")
    refused = push(repo, "origin", "topic")
    assert refused.returncode != 0 and "old hook says no" in refused.stderr


def test_hooks_path_is_honoured(git_repo: GitRepoFactory, team_bot: str) -> None:
    repo = git_repo(files=PY_FILES)
    git(repo, "config", "core.hooksPath", ".githooks")
    proc = ar(repo, "init", "--reviewer", team_bot, "--json")
    assert proc.returncode == 0, proc.stderr
    assert ".githooks/pre-push" in json.loads(proc.stdout)["written"]
    assert (repo / ".githooks" / "pre-push").stat().st_mode & stat.S_IXUSR
    assert not (repo / ".git" / "hooks" / "pre-push").exists()


def test_a_second_init_changes_no_byte(git_repo: GitRepoFactory, team_bot: str, tmp_path: Path) -> None:
    repo = git_repo(files=PY_FILES)
    with_remote(repo, tmp_path)
    (repo / ".git" / "hooks" / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".git" / "hooks" / "pre-push").chmod(0o755)
    first = ar(repo, "init", "--reviewer", team_bot, "--ci", "github")
    assert first.returncode == 0, first.stderr
    before = tree_digest(repo)
    second = ar(repo, "init", "--reviewer", team_bot, "--ci", "github", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["written"] == []
    assert tree_digest(repo) == before
    assert (repo / ".git" / "hooks" / "pre-push.local").read_text() == "#!/bin/sh\nexit 0\n"


def test_a_users_files_are_kept_unless_force(git_repo: GitRepoFactory, team_bot: str) -> None:
    mine = (
        "---\nkind: review\nid: mine\ntarget: git-range\nchecks:\n  - id: t\n    kind: command\n    run: 'true'\n---\n"
    )
    other_key = (
        'ada@example.com namespaces="agentproto-review" '
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08VGQkaM6WUEBbbRnVIH0gyUbqN8/ERYYVez4/58Wp"
    )
    repo = git_repo(files={**PY_FILES, "REVIEW.md": mine, ".agentproto/allowed_signers": other_key + "\n"})
    proc = ar(repo, "init", "--reviewer", team_bot, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "REVIEW.md" in report["skipped"] and ".agentproto/allowed_signers" in report["skipped"]
    assert "--force" in report["reasons"]["REVIEW.md"]
    assert (repo / "REVIEW.md").read_text() == mine
    assert (repo / ".agentproto" / "allowed_signers").read_text() == other_key + "\n"

    forced = json.loads(ar(repo, "init", "--reviewer", team_bot, "--force", "--json").stdout)
    assert {"REVIEW.md", ".agentproto/allowed_signers"} <= set(forced["written"])
    assert "id: mine" not in (repo / "REVIEW.md").read_text() and "preset: team-bot" in (repo / "REVIEW.md").read_text()
    signers = (repo / ".agentproto" / "allowed_signers").read_text().splitlines()
    assert signers[0] == other_key and signers[1].startswith("test@example.com ")  # appended, nothing dropped
    assert ar(repo, "check").returncode == 0


def test_a_teammates_first_init_keeps_the_policy_and_says_how_their_key_gets_trusted(
    git_repo: GitRepoFactory, team_bot: str
) -> None:
    """A repository that adopted agentreview on another host: a newcomer's ``init`` installs the hook and keeps every
    file, and its next steps are the newcomer's (their key trusted through a pull request a trusted teammate
    attests), not the adoption commit, nor a ``--force`` that would replace the team's REVIEW.md."""
    first = git_repo(files=PY_FILES)
    assert ar(first, "init", "--reviewer", team_bot).returncode == 0
    team_md = (first / "REVIEW.md").read_text()
    other_key = (
        'ada@example.com namespaces="agentproto-review" '
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08VGQkaM6WUEBbbRnVIH0gyUbqN8/ERYYVez4/58Wp"
    )
    repo = git_repo(files={**PY_FILES, "REVIEW.md": team_md, "rubrics/correctness.md":
                           (first / "rubrics" / "correctness.md").read_text(),
                           ".agentproto/allowed_signers": other_key + "\n"})  # fmt: skip
    proc = ar(repo, "init", "--reviewer", team_bot)
    assert proc.returncode == 0, proc.stderr
    steps = proc.stdout.split("next steps:\n", 1)[1]
    assert "adopt agentreview" not in steps and "--force" not in steps, proc.stdout
    assert "agentreview key | tail -1 >> .agentproto/allowed_signers" in steps, steps
    assert "a teammate whose key it trusts attests the pull request" in steps, steps
    assert "skipped   .agentproto/allowed_signers  (exists without this host's key: see the next steps)" in proc.stdout
    assert (repo / "REVIEW.md").read_text() == team_md
    assert (repo / ".agentproto" / "allowed_signers").read_text() == other_key + "\n"
    assert (repo / ".git" / "hooks" / "pre-push").is_file()
    # the adopter's own next steps are the adoption until REVIEW.md is committed, however often init runs
    again = ar(first, "init", "--reviewer", team_bot)
    assert "git commit -m 'review: adopt agentreview'" in again.stdout and "tail -1 >>" not in again.stdout
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "review: adopt agentreview")
    assert "adopt agentreview" not in ar(first, "init", "--reviewer", team_bot).stdout


def test_init_outside_a_git_repository_exits_3(tmp_path: Path) -> None:
    proc = ar(tmp_path, "init")
    assert proc.returncode == 3
    assert proc.stderr.startswith("agentreview init: ") and len(proc.stderr.strip().splitlines()) == 1
    assert "not inside a git repository" in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "word"), [(["--ci", "gitlab"], "--ci"), (["--hook", "pre-commit"], "--hook"),
                                            (["--reviewer", "nosuch"], "--reviewer")])  # fmt: skip
def test_bad_options_are_usage_errors(git_repo: GitRepoFactory, args: list[str], word: str) -> None:
    repo = git_repo()
    proc = ar(repo, "init", *args)
    assert proc.returncode == 64 and word in proc.stderr
    assert not (repo / "REVIEW.md").exists()


def test_asking_the_remote_runs_no_program_its_configuration_names(git_repo: GitRepoFactory, tmp_path: Path) -> None:
    """Attack: a planted .git/config makes ``git ls-remote origin`` run a program (upload-pack or
    ssh command). init asks with a fixed upload-pack and a non-prompting plain ssh: nothing runs."""
    repo = git_repo(files=PY_FILES)
    with_remote(repo, tmp_path)
    pwned = tmp_path / "pwned"
    git(repo, "config", "remote.origin.uploadpack", f"touch {pwned}; git-upload-pack")
    proc = ar(repo, "init", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not pwned.exists()
    assert "base: refs/remotes/origin/main" in (repo / "REVIEW.md").read_text()


def test_asking_an_ssh_remote_runs_no_ssh_command_of_the_repository(git_repo: GitRepoFactory, tmp_path: Path) -> None:
    """Attack: ``core.sshCommand`` in a planted .git/config runs on ``ls-remote`` to an ssh origin.
    init asks with plain, non-prompting ssh (here refused at once) and falls back to refs/remotes/origin/main."""
    repo = git_repo(files=PY_FILES)
    pwned = tmp_path / "pwned"
    git(repo, "remote", "add", "origin", "ssh://git@127.0.0.1:1/acme/widgets.git")
    git(repo, "config", "core.sshCommand", f"touch {pwned}; false")
    proc = ar(repo, "init", "--hook", "none")
    assert proc.returncode == 0, proc.stderr
    assert not pwned.exists()
    assert "could not ask origin" in proc.stderr or "did not name" in proc.stderr
    assert "base: refs/remotes/origin/main" in (repo / "REVIEW.md").read_text()


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"tox.ini": "[tox]\n", "pyproject.toml": "[tool.pytest.ini_options]\n"}, [("tox", "tox")]),
        ({"noxfile.py": "", "conftest.py": ""}, [("nox", "nox")]),
        ({"setup.cfg": "[tool:pytest]\n", "ruff.toml": ""}, [("pytest", "pytest -q"), ("ruff", "ruff check .")]),
        ({"pyproject.toml": '[project]\nname = "x"\noptional-dependencies = { test = ["pytest>=8"] }\n'},
         [("pytest", "pytest -q")]),
        ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["pytest-timeout"]\n'}, []),
        ({"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'}, []),
        ({"package.json": '{"scripts": {"test": "vitest", "lint": "eslint ."}}', "pnpm-lock.yaml": ""},
         [("pnpm-test", "pnpm test"), ("lint", "pnpm run lint")]),
        ({"package.json": '{"scripts": {"test": "jest"}}', "yarn.lock": "", "eslint.config.js": ""},
         [("yarn-test", "yarn test"), ("eslint", "npx --no-install eslint .")]),
        ({"Makefile": "build:\n\tcc x.c\n\ntest: build\n\t./run-tests\n", "go.mod": "module x\n", "conftest.py": ""},
         [("make-test", "make test")]),
        ({"Makefile": "TEST := 1\n", "Cargo.toml": "[package]\n", "go.mod": "module x\n"},
         [("cargo-test", "cargo test"), ("go-test", "go test ./...")]),
        ({"package.json": "[" * 100_000 + "]" * 100_000, "Cargo.toml": "[package]\n"},  # nested past the limit
         [("cargo-test", "cargo test")]),
    ],
)  # fmt: skip
def test_detection_per_ecosystem(tmp_path: Path, files: dict[str, str], expected: list[tuple[str, str]]) -> None:
    from agentreview.setup.detect import detect_checks

    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    assert [(c.id, c.run) for c in detect_checks(tmp_path)] == expected


def test_a_symbolic_link_is_never_written_through(git_repo: GitRepoFactory, tmp_path: Path) -> None:
    """Attack: the repository's REVIEW.md is a link to a file elsewhere, and .github a link to a
    folder elsewhere; even with --force, init writes neither the link's target nor outside the tree."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("keep me\n")
    repo = git_repo(files=PY_FILES)
    (repo / "REVIEW.md").symlink_to(outside / "victim")
    (repo / ".github").symlink_to(outside)
    proc = ar(repo, "init", "--ci", "github", "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {"REVIEW.md", ".github/workflows/agentreview.yml"} <= set(report["skipped"])
    assert "symbolic link" in report["reasons"][".github/workflows/agentreview.yml"]
    assert (outside / "victim").read_text() == "keep me\n" and (repo / "REVIEW.md").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
