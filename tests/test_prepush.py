"""The pre-push hook reviews exactly what a real ``git push`` sends, to a real bare remote.

``agentreview init``'s hook and the pre-commit framework's ``pre-push`` stage both run
``agentreview run --pre-push``: each pushed ref is reviewed at its pushed commit, whatever branch is
checked out; a push of several refs reports each; deletions and tags are not reviewed. The hook
starts agentreview by the interpreter that ran init, so it works with no ``agentreview`` on PATH.
Each lane execution appends a line to a counter file outside the repository, so a test can count
them through the whole flow run → export → commit → push.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from reviewrepo import AGENTREVIEW, Repo

from agentreview.cli.prepush import PushedRef, pushed_refs, skip_reason, worst_exit

BIN = Path(sys.executable).parent
ZERO = "0" * 40


def review_md(counter: Path, run: str = "test ! -e BAD") -> str:
    return (
        "---\nkind: review\nid: demo\ntarget: { kind: git-range, base: refs/remotes/origin/main }\n"
        "checks:\n"
        f"  - id: tests\n    kind: command\n    run: 'echo ran >> {counter}; {run}'\n"
        "bindings:\n  local: { on: pre-push, checks: [tests] }\n"
        "verdict: { exportDir: .reviews }\n---\n\n# demo\n"
    )


def path_without_agentreview() -> str:
    """This PATH minus every folder holding an ``agentreview`` program (the virtualenv's bin)."""
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "agentreview").exists()]
    return os.pathsep.join(keep)


class PushRepo(Repo):
    """A repository whose ``main`` (with REVIEW.md) is on a bare ``origin``; agentreview is not on PATH."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path / "repo", tmp_path / "home")
        self.counter = tmp_path / "lane-runs"
        self.bare = tmp_path / "origin.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], check=True, timeout=30)
        self.commit("adopt agentreview", **{"REVIEW.md": review_md(self.counter), ".gitignore": "/rubrics/\n"})
        self.git("remote", "add", "origin", str(self.bare))
        self.git("push", "-q", "origin", "main")

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in super().env.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
        env["PATH"] = path_without_agentreview()
        return env

    def lane_runs(self) -> int:
        return len(self.counter.read_text().splitlines()) if self.counter.exists() else 0

    def agentreview(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTREVIEW, *args], cwd=self.path, env=env or self.env, capture_output=True, text=True,
            timeout=180, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def push(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "push", "origin", *args], cwd=self.path, env=self.env, capture_output=True, text=True,
            timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def remote_has(self, branch: str) -> bool:
        out = subprocess.run(["git", "branch", "--list", branch], cwd=self.bare, capture_output=True, text=True)
        return bool(out.stdout.strip())

    def branches(self) -> None:
        """``good`` (passes, reviewed and cached) checked out, and ``bad`` (its review blocks)."""
        self.git("switch", "-q", "-c", "bad", "main")
        self.commit("break it", **{"BAD": "x\n"})
        self.git("switch", "-q", "-c", "good", "main")
        self.commit("good work", **{"app.txt": "v1\n"})
        cached = self.agentreview("run", "--binding", "local")
        assert cached.returncode == 0, cached.stdout + cached.stderr


@pytest.fixture
def repo(tmp_path: Path) -> PushRepo:
    return PushRepo(tmp_path)


def install_hook(repo: PushRepo) -> Path:
    init = repo.agentreview("init", "--hook", "pre-push", "--reviewer", "claude")
    assert init.returncode == 0, init.stdout + init.stderr
    hook = repo.path / ".git" / "hooks" / "pre-push"
    assert f"agentreview={sys.executable}" in hook.read_text()  # by absolute path, not from PATH
    return hook


def test_the_hook_reviews_the_pushed_branch_not_the_checked_out_one(repo: PushRepo) -> None:
    install_hook(repo)
    repo.branches()
    assert shutil.which("agentreview", path=repo.env["PATH"]) is None
    before = repo.lane_runs()

    blocked = repo.push("bad")  # from `good`, whose review passed and is cached
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, out
    assert "push refs/heads/bad -> refs/heads/bad" in out and "verdict: block" in out
    assert not repo.remote_has("bad")
    assert repo.lane_runs() == before + 1  # bad's review ran

    both = repo.push("good", "bad")  # several refs: each is reported, any block stops the push
    out = both.stdout + both.stderr
    assert both.returncode != 0, out
    assert "push refs/heads/good -> refs/heads/good" in out and "verdict: pass (cached)" in out
    assert "push refs/heads/bad -> refs/heads/bad" in out and "verdict: block" in out
    assert "2 of 2 ref(s) reviewed; the push stops (exit 1)" in out
    assert not repo.remote_has("good") and not repo.remote_has("bad")

    passed = repo.push("good")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "verdict: pass (cached)" in passed.stdout and "--no-cache" in passed.stdout
    assert repo.remote_has("good")


def test_an_uncommitted_fix_does_not_pass_the_broken_commit_it_hides(repo: PushRepo) -> None:
    """Attack (or a slip): the pushed commit breaks the tests, and the checkout holds an uncommitted change to a
    tracked file that fixes them. The lanes ran in the checkout, passed ("dirty") and let the broken commit
    through. A pushed commit is now reviewed as pushed: in a worktree of it when the checkout has uncommitted
    changes, so the push stops, and the checkout keeps its change."""
    install_hook(repo)
    (repo.path / "REVIEW.md").write_text(review_md(repo.counter, run="test ! -e BAD && grep -qx fine app.txt"))
    repo.commit("tests read app.txt", **{"REVIEW.md": (repo.path / "REVIEW.md").read_text(), "app.txt": "fine\n"})
    assert repo.push("main").returncode == 0
    repo.git("switch", "-q", "-c", "slip", "main")
    repo.commit("break it", **{"app.txt": "wrong\n"})
    (repo.path / "app.txt").write_text("fine\n")  # the fix, not committed
    pushed = repo.push("slip")
    out = pushed.stdout + pushed.stderr
    assert pushed.returncode != 0 and "verdict: block" in out, out
    assert "uncommitted changes to tracked files: the pushed commit" in out and "dirty" not in out, out
    assert "if a lane needs it, stash the changes (git stash), push, then git stash pop" in out, out
    assert not repo.remote_has("slip")
    assert (repo.path / "app.txt").read_text() == "fine\n"  # the checkout's change is left as it was
    assert not list((repo.home / "worktrees").glob("review-*")), "the review's worktree is removed"


def test_a_commit_reviewed_clean_is_pushed_from_a_checkout_with_uncommitted_changes(repo: PushRepo) -> None:
    """The pushed commit's earlier clean review answers the push though the checkout has work in progress:
    the review is of the commit, and the cache is asked as for the clean worktree the lanes would run in."""
    install_hook(repo)
    repo.branches()  # `good` reviewed (pass, cached) and checked out
    (repo.path / "app.txt").write_text("work in progress\n")
    before = repo.lane_runs()
    pushed = repo.push("good")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert "verdict: pass (cached)" in pushed.stdout and repo.lane_runs() == before
    assert repo.remote_has("good")


def test_deletions_and_tags_are_not_reviewed(repo: PushRepo) -> None:
    install_hook(repo)
    repo.branches()
    assert repo.push("good").returncode == 0
    repo.git("tag", "v1", "bad")
    before = repo.lane_runs()
    tagged = repo.push("v1")
    assert tagged.returncode == 0, tagged.stdout + tagged.stderr
    assert "push refs/tags/v1 -> refs/tags/v1: not reviewed, a tag" in tagged.stdout
    deleted = repo.push(":good")
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert "not reviewed, a deletion" in deleted.stdout and not repo.remote_has("good")
    assert repo.lane_runs() == before


def test_a_hook_whose_agentreview_moved_says_so_and_how_to_fix_it(repo: PushRepo) -> None:
    hook = install_hook(repo)
    gone = repo.path.parent / "moved-venv" / "bin" / "python"
    hook.write_text(hook.read_text().replace(f"agentreview={sys.executable}", f"agentreview={gone}"))
    repo.git("switch", "-q", "-c", "topic")
    repo.commit("work", **{"app.txt": "v1\n"})
    refused = repo.push("topic")
    assert refused.returncode != 0 and not repo.remote_has("topic")
    line = next(line for line in refused.stderr.splitlines() if "agentreview pre-push hook" in line)
    assert f"{gone} (which ran 'agentreview init') is gone or moved" in line
    assert "agentreview init --force" in line and "Traceback" not in refused.stderr


def test_the_pre_commit_pre_push_stage_reviews_the_pushed_ref(repo: PushRepo, tmp_path: Path) -> None:
    """pre-commit reads git's lines and hands the hook PRE_COMMIT_FROM_REF/TO_REF; the hook entry is
    the one .pre-commit-hooks.yaml declares, run as a ``language: system`` hook of this interpreter."""
    declared = next(h for h in yaml.safe_load((Path(__file__).parent.parent / ".pre-commit-hooks.yaml").read_text())
                    if h["id"] == "agentreview")  # fmt: skip
    entry = declared["entry"].replace("agentreview", f"{sys.executable} -m agentreview", 1)
    hook = {"id": "agentreview", "name": "agentreview review", "entry": entry, "language": "system",
            "pass_filenames": False, "always_run": True, "require_serial": True, "stages": ["pre-push"]}  # fmt: skip
    (repo.path / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}))
    repo.git("add", ".pre-commit-config.yaml")
    repo.git("commit", "-q", "-m", "pre-commit")
    repo.git("push", "-q", "--no-verify", "origin", "main")
    env = {**repo.env, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    installed = subprocess.run([str(BIN / "pre-commit"), "install", "--hook-type", "pre-push"], cwd=repo.path,
                               env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    repo.branches()
    before = repo.lane_runs()
    blocked = subprocess.run(["git", "push", "origin", "bad"], cwd=repo.path, env=env, capture_output=True,
                             text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, out
    assert "push refs/heads/bad -> refs/heads/bad" in out and "verdict: block" in out
    assert not repo.remote_has("bad")
    passed = subprocess.run(["git", "push", "origin", "good"], cwd=repo.path, env=env, capture_output=True,
                            text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert repo.remote_has("good") and repo.lane_runs() == before + 1  # bad's review ran; good's was cached


def test_run_export_commit_push_runs_each_lane_once(repo: PushRepo) -> None:
    install_hook(repo)
    repo.git("switch", "-q", "-c", "feature")
    work = repo.commit("feature work", **{"app.txt": "v1\n"})
    exported = repo.agentreview("run", "--binding", "local", "--export")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert repo.lane_runs() == 1
    repo.git("add", ".reviews")
    repo.git("commit", "-q", "-m", "review: attest")
    again = repo.agentreview("run", "--binding", "local")  # at the export commit: its parent's review
    assert again.returncode == 0, again.stdout + again.stderr
    assert "only adds exports; this is the review of its parent" in again.stdout
    assert "verdict: pass (cached)" in again.stdout
    pushed = repo.push("feature")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert "verdict: pass (cached)" in pushed.stdout and work[:10] in pushed.stdout
    assert repo.lane_runs() == 1  # run, export, commit, push: the lane ran once
    verified = repo.agentreview("verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # A commit that adds an export and changes anything else is reviewed itself, by run and by the hook.
    repo.commit("export and more", **{".reviews__extra.json": "{}\n", "app.txt": "v2\n"})
    mixed = repo.push("feature")
    assert mixed.returncode == 0, mixed.stdout + mixed.stderr
    assert "only adds exports" not in mixed.stdout and "(cached)" not in mixed.stdout
    assert repo.lane_runs() == 2


def test_a_missing_program_is_incomplete_never_block_and_never_cached(repo: PushRepo, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("use a tool", **{"REVIEW.md": review_md(repo.counter, run="checktool --all")})
    missing = repo.agentreview("run", "--binding", "local", "--json")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    lane = json.loads(missing.stdout)["attestation"]["lanes"][0]
    assert lane["status"] == "skipped" and lane["findings"] == []
    assert "the shell exited 127 (a program it runs was not found)" in lane["error"]
    assert "checktool: not found" in lane["error"] and "install the program" in lane["error"]
    text = repo.agentreview("run", "--binding", "local")
    assert text.returncode == 2 and "verdict: incomplete —" in text.stdout and "(cached)" not in text.stdout
    assert repo.lane_runs() == 2  # never served from the cache: it ran again

    (tools / "checktool").write_text("#!/bin/sh\nexit 0\n")
    (tools / "checktool").chmod(0o755)
    installed = {**repo.env, "PATH": f"{tools}{os.pathsep}{repo.env['PATH']}"}
    now = repo.agentreview("run", "--binding", "local", env=installed)
    assert now.returncode == 0, now.stdout + now.stderr
    assert "verdict: pass —" in now.stdout and repo.lane_runs() == 3

    (tools / "checktool").chmod(0o644)  # named by its path, there but not executable: 126
    repo.commit("by path", **{"REVIEW.md": review_md(repo.counter, run=f"{tools}/checktool --all")})
    blocked_env = repo.agentreview("run", "--binding", "local", "--json", env=installed)
    assert blocked_env.returncode == 2
    lane = json.loads(blocked_env.stdout)["attestation"]["lanes"][0]
    assert lane["status"] == "skipped" and "the shell exited 126" in lane["error"]


def test_an_unsigned_review_is_run_again_once_this_host_can_sign(repo: PushRepo, tmp_path: Path) -> None:
    only_git = tmp_path / "only-git"
    only_git.mkdir()
    git_program = shutil.which("git")
    assert git_program is not None
    (only_git / "git").symlink_to(git_program)
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("work", **{"app.txt": "v1\n"})
    unsigned = repo.agentreview("run", "--binding", "local", env={**repo.env, "PATH": str(only_git)})
    assert unsigned.returncode == 0, unsigned.stdout + unsigned.stderr
    assert "(unsigned)" in unsigned.stdout and "ssh-keygen not found" in unsigned.stdout
    still = repo.agentreview("run", "--binding", "local", env={**repo.env, "PATH": str(only_git)})
    assert "verdict: pass (cached)" in still.stdout and repo.lane_runs() == 1  # still cannot sign: served
    signed = repo.agentreview("run", "--binding", "local")
    assert signed.returncode == 0, signed.stdout + signed.stderr
    assert "(cached)" not in signed.stdout and "(signed)" in signed.stdout
    assert "is unsigned and this host can sign now: running again" in signed.stderr
    assert repo.lane_runs() == 2


def test_pushed_refs_read_gits_lines_and_pre_commits_variables() -> None:
    a, b = "a" * 40, "b" * 40
    lines = f"refs/heads/x {a} refs/heads/x {ZERO}\nrefs/heads/y {b} refs/heads/y {a}\n\n"
    assert pushed_refs(lines, {}, lambda name: None) == [
        PushedRef("refs/heads/x", a, "refs/heads/x", ZERO),
        PushedRef("refs/heads/y", b, "refs/heads/y", a),
    ]
    env = {"PRE_COMMIT_FROM_REF": a, "PRE_COMMIT_TO_REF": b, "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/y",
           "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/y"}  # fmt: skip
    assert pushed_refs("ignored", env, lambda name: None) == [PushedRef("refs/heads/y", b, "refs/heads/y", a)]
    # a push holding a root commit: pre-commit names no refs, the local branch names the commit
    root_push = {"PRE_COMMIT_LOCAL_BRANCH": "refs/heads/y", "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/y"}
    assert pushed_refs("", root_push, lambda name: b)[0].local_sha == b
    from agentreview.model.errors import UsageError

    with pytest.raises(UsageError, match="is not '<local ref> <local sha> <remote ref> <remote sha>'"):
        pushed_refs("refs/heads/x HEAD refs/heads/x 0000\n", {}, lambda name: None)


def test_skip_reasons_and_the_push_exit() -> None:
    a = "a" * 40
    commit = {a: "commit"}.get
    assert skip_reason(PushedRef("(delete)", ZERO, "refs/heads/x", a), commit) == "a deletion: nothing to review"
    assert "a tag" in (skip_reason(PushedRef("refs/tags/v1", a, "refs/tags/v1", ZERO), commit) or "")
    assert "git notes" in (skip_reason(PushedRef("refs/notes/x", a, "refs/notes/x", ZERO), commit) or "")
    assert skip_reason(PushedRef("refs/heads/x", a, "refs/heads/x", ZERO), commit) is None
    assert "not a commit" in (skip_reason(PushedRef("refs/heads/x", a, "refs/heads/x", ZERO), lambda s: "blob") or "")
    assert worst_exit([]) == 0 and worst_exit([0, 0]) == 0
    assert worst_exit([2, 1, 3]) == 1 and worst_exit([2, 3]) == 3 and worst_exit([0, 2]) == 2


EARLIER_HOOK = """\
#!/bin/sh
# agentreview init: pre-push hook
# Reviews the commits being pushed with REVIEW.md's `local` binding: a block (1), incomplete (2)
# or could-not-run (3) stops the push. The hook that was here before runs first, from
# pre-push.local, with the same arguments and stdin. `agentreview init` recognises this file by
# the line above and rewrites it only with --force.
hook_dir=$(dirname "$0")
if [ -x "$hook_dir/pre-push.local" ]; then
    "$hook_dir/pre-push.local" "$@" || exit $?
fi
exec agentreview run --binding local --supersede </dev/null
"""


def test_init_replaces_the_earlier_hook_that_ignored_the_pushed_refs(repo: PushRepo) -> None:
    hook = repo.path / ".git" / "hooks" / "pre-push"
    hook.write_text(EARLIER_HOOK)
    hook.chmod(0o755)
    init = repo.agentreview("init", "--hook", "pre-push", "--reviewer", "claude")
    assert init.returncode == 0, init.stdout + init.stderr
    assert "replaced the earlier hook that ignored the pushed refs" in init.stdout
    assert "--pre-push" in hook.read_text() and not (hook.parent / "pre-push.local").exists()
    hook.write_text(hook.read_text() + "# mine\n")  # an edit of the user's is kept without --force
    again = repo.agentreview("init", "--hook", "pre-push", "--reviewer", "claude")
    assert again.returncode == 0 and hook.read_text().endswith("# mine\n")


def test_without_target_base_here_an_update_reviews_what_the_remote_lacks(repo: PushRepo) -> None:
    """merge-base(target.base, sha) needs target.base fetched; when it is not, a push that adds to a
    branch the remote has is reviewed over the remote's commit, and a new branch cannot be reviewed."""
    install_hook(repo)
    repo.git("switch", "-q", "-c", "topic")
    text = review_md(repo.counter).replace("refs/remotes/origin/main", "refs/remotes/origin/develop")
    repo.commit("base on develop", **{"REVIEW.md": text})
    new = repo.push("topic")  # git push exits 1 whatever the hook's exit
    assert new.returncode != 0, new.stdout + new.stderr
    assert "the base 'refs/remotes/origin/develop' (REVIEW.md's target.base) does not exist" in new.stderr
    assert not repo.remote_has("topic")
    assert repo.push("--no-verify", "topic").returncode == 0
    remote_sha = repo.git("rev-parse", "topic")
    repo.commit("more", **{"app.txt": "v2\n"})
    update = repo.push("topic")
    assert update.returncode == 0, update.stdout + update.stderr
    assert f"range:   --base {remote_sha}" in update.stdout
    repo.commit("break", **{"BAD": "x\n"})
    broken = repo.push("topic")
    assert broken.returncode != 0 and "verdict: block" in broken.stdout
