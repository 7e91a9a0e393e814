"""init's GitHub workflow as a runner runs it, and as a platform team's linters read it.

Real processes throughout: ``agentreview init``/``run --publish`` on a real repository with a
bare remote served as ``file://`` (the workflow's GITHUB_SERVER_URL), a runner checkout laid as
actions/checkout lays it, the workflow's shell step run by bash after the runner's textual
expression splicing (tests/workflow_runner.py), the Action's verify as the installed console
script called by path, and actionlint and zizmor on the written file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentreview.setup.workflow import ACTION_COMMIT, ACTION_HOME, DEFAULT_ACTION_REF, WORKFLOW_PATH
from tests.conftest import GitRepoFactory, git
from tests.test_init import REVIEWER, _env, ar, commit_all
from tests.workflow_runner import AGENTREVIEW, Runner, context_for, event_payload, load

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_BASE = 'main";id>&2;"'
HOSTILE_TITLE = '"; touch /tmp/pwned-title; echo "$(id)`id`'
FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    ".gitignore": "__pycache__/\n",
}


@pytest.fixture
def bot(agentreview_home: Path) -> str:
    """A user preset running the demo's deterministic reviewer through the ``exec`` provider."""
    (agentreview_home / "presets.toml").write_text(
        f'[presets.bot]\nprovider = "exec"\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(REVIEWER))}]\n'
    )
    return "bot"


def tool(name: str) -> Path:
    """A linter from the dev tools (pyproject's test extra): missing is a failure, never a skip."""
    path = Path(sys.executable).parent / name
    assert path.is_file(), f"{name} is not installed in {path.parent}: run ./scripts/bootstrap"
    return path


def setup_remote(repo: Path, tmp_path: Path) -> tuple[Path, str]:
    """A bare ``origin`` at SERVER/acme/widgets.git, so the workflow's URL reaches it; returns (bare, server)."""
    server = tmp_path / "server"
    bare = server / "acme" / "widgets.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    return bare, f"file://{server}"


def adopt(repo: Path, preset: str, *extra: str) -> dict:
    proc = ar(repo, "init", "--reviewer", preset, "--ci", "github", "--hook", "none", *extra)
    assert proc.returncode == 0, proc.stderr
    commit_all(repo, "adopt agentreview")
    git(repo, "push", "-q", "origin", "main")
    return load(repo / WORKFLOW_PATH)


def runner_checkout(bare: Path, tmp_path: Path, head: str) -> Path:
    """The runner's checkout as actions/checkout lays it with fetch-depth 0: every branch under
    refs/remotes/origin/, no notes, the pull request's head detached."""
    ci = tmp_path / "workspace"
    git(tmp_path, "clone", "-q", "--no-checkout", str(bare), str(ci))
    git(ci, "checkout", "-q", "--detach", head)
    return ci


def runner_for(workflow: dict, ci: Path, tmp_path: Path, server: str, event: dict, path_env: str) -> Runner:
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    context = context_for(event, token="ghs_notarealtoken", repository="acme/widgets", server_url=server, temp=temp)
    env = _env({"PATH": path_env, "GITHUB_SERVER_URL": server, "GITHUB_REPOSITORY": "acme/widgets",
                "GITHUB_WORKSPACE": str(ci), "RUNNER_TEMP": str(temp),
                "GITHUB_STEP_SUMMARY": str(temp / "summary.md")})  # fmt: skip
    return Runner(workflow, ci, env, context, action_prefix=f"{ACTION_HOME}@")


# --------------------------------------------------------------------------- the pinned Action


@pytest.mark.parametrize(
    "ref",
    [
        "agentreview/agentreview@v1",
        "agentreview/agentreview@main",
        "agentreview/agentreview@1646ad6",
        "agentreview/agentreview@" + "A" * 40,
        "agentreview/agentreview",
        "agentreview@" + "a" * 40,
        "agentreview/agentreview@" + "a" * 40 + "\n    run: id",
    ],
)
def test_an_action_ref_not_pinned_by_a_full_commit_is_refused(git_repo: GitRepoFactory, ref: str) -> None:
    repo = git_repo(files=FILES)
    proc = ar(repo, "init", "--ci", "github", "--hook", "none", "--action-ref", ref)
    assert proc.returncode == 64, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--action-ref" in lines[0] and "Traceback" not in proc.stderr
    assert not (repo / WORKFLOW_PATH).exists() and not (repo / "REVIEW.md").exists()


def test_the_action_ref_given_is_the_one_pinned(git_repo: GitRepoFactory) -> None:
    repo = git_repo(files=FILES)
    mine = "acme/agentreview-fork@" + "0123456789abcdef" * 2 + "01234567"
    proc = ar(repo, "init", "--ci", "github", "--hook", "none", "--action-ref", mine)
    assert proc.returncode == 0, proc.stderr
    uses = [s.get("uses", "") for s in load(repo / WORKFLOW_PATH)["jobs"]["verify"]["steps"]]
    assert mine in uses and DEFAULT_ACTION_REF not in uses
    without_ci = ar(repo, "init", "--hook", "none", "--action-ref", mine)
    assert without_ci.returncode == 64 and "--ci github" in without_ci.stderr


def test_every_action_is_pinned_by_a_full_commit_with_its_release_named(git_repo: GitRepoFactory) -> None:
    repo = git_repo(files=FILES)
    assert ar(repo, "init", "--ci", "github", "--hook", "none").returncode == 0
    text = (repo / WORKFLOW_PATH).read_text()
    uses = re.findall(r"^\s*(?:- )?uses: (\S+)(.*)$", text, re.M)
    assert {u.split("@")[0] for u, _ in uses} == {"actions/checkout", ACTION_HOME, "github/codeql-action/upload-sarif"}
    for ref, comment in uses:
        assert re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", ref), ref
        if not ref.startswith(ACTION_HOME):
            assert re.fullmatch(r" # v\d+\.\d+\.\d+", comment), (ref, comment)
    assert "pip install" not in text and "setup-python" not in text  # nothing installed by the workflow


def test_the_default_pin_is_a_commit_of_this_project_whose_action_takes_the_inputs_passed() -> None:
    """The default names a commit of this repository's history, and the action.yml there (and at
    HEAD) declares every input the workflow passes: the pin is one a release can stand behind."""
    from agentreview.setup.workflow import render_workflow

    assert re.fullmatch(r"[0-9a-f]{40}", ACTION_COMMIT)
    step = next(s for s in yaml.safe_load(render_workflow())["jobs"]["verify"]["steps"]
                if s.get("uses", "").startswith(ACTION_HOME))  # fmt: skip
    passed = set(step["with"])
    for rev in (ACTION_COMMIT, "HEAD"):
        shown = subprocess.run(["git", "show", f"{rev}:action.yml"], cwd=ROOT, capture_output=True, text=True,
                               timeout=60, check=False)  # fmt: skip
        assert shown.returncode == 0, f"{rev} is not a commit of this repository with action.yml: {shown.stderr}"
        inputs = set(yaml.safe_load(shown.stdout)["inputs"])
        assert passed <= inputs, (rev, passed - inputs)
        # and it is the hardened Action: it neither changes the caller's Python nor puts itself on PATH
        steps = yaml.safe_load(shown.stdout)["runs"]["steps"]
        assert not [s for s in steps if "setup-python" in s.get("uses", "") or "GITHUB_PATH" in s.get("run", "")], rev


# --------------------------------------------------------------------------- hardening, as linters read it


def test_the_workflow_is_hardened(git_repo: GitRepoFactory) -> None:
    repo = git_repo(files=FILES)
    assert ar(repo, "init", "--ci", "github", "--hook", "none").returncode == 0
    workflow = load(repo / WORKFLOW_PATH)
    trigger = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    assert list(trigger) == ["pull_request_target"]
    assert workflow["permissions"] == {}
    job = workflow["jobs"]["verify"]
    assert job["permissions"] == {"contents": "read", "security-events": "write"}
    assert 0 < job["timeout-minutes"] <= 15
    checkout = job["steps"][0]
    assert checkout["with"] == {"ref": "${{ github.event.pull_request.head.sha }}", "fetch-depth": 0,
                                "persist-credentials": False}  # fmt: skip
    for step in job["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]  # values reach scripts through env: only
    upload = job["steps"][-1]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@") and "always()" in upload["if"]
    verify_step = next(s for s in job["steps"] if s.get("uses", "").startswith(ACTION_HOME))
    assert upload["with"]["sarif_file"] == verify_step["with"]["sarif"]
    assert verify_step["with"]["sarif"].startswith("${{ runner.temp }}/")  # never a file of the checkout


def test_actionlint_and_zizmor_find_nothing_in_the_workflow(git_repo: GitRepoFactory) -> None:
    """Every finding is fixed; the one kept (zizmor's dangerous-triggers on pull_request_target) is
    ignored inline with its reason, and docs/security.md says why it holds."""
    repo = git_repo(files=FILES)
    assert ar(repo, "init", "--ci", "github", "--hook", "none").returncode == 0
    workflow = repo / WORKFLOW_PATH
    lint = subprocess.run([str(tool("actionlint")), "-no-color", str(workflow)], cwd=repo, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert lint.returncode == 0, lint.stdout + lint.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_CONFIG")}
    zizmor = subprocess.run(
        [str(tool("zizmor")), "--offline", "--no-progress", "--persona", "pedantic", "--format", "plain",
         str(workflow)],
        cwd=repo, capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert zizmor.returncode == 0, zizmor.stdout + zizmor.stderr
    assert "No findings to report" in zizmor.stdout
    ignored = re.findall(r"zizmor: ignore\[([\w-]+)\]", workflow.read_text())
    assert ignored == ["dangerous-triggers"]


# --------------------------------------------------------------------------- as the runner runs it


def _publish_reviewed_change(repo: Path, files: dict[str, str]) -> str:
    git(repo, "switch", "-q", "-c", "feature")
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
        if text.startswith("#!"):
            (repo / rel).chmod(0o755)
    commit_all(repo, "neg")
    # The console script, not `python -m agentreview`: with -m the working directory comes first on
    # sys.path, and the hostile tree's own agentreview/ package would be imported instead.
    run = subprocess.run([str(AGENTREVIEW), "run", "--binding", "local", "--publish"], cwd=repo, env=_env(),
                         capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                         check=False)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert git(repo, "ls-remote", "origin", "refs/notes/agentreview").strip(), run.stdout + run.stderr
    git(repo, "push", "-q", "origin", "feature")
    return git(repo, "rev-parse", "HEAD").strip()


def test_the_runner_runs_the_workflow_and_a_hostile_base_name_or_title_runs_nothing(
    git_repo: GitRepoFactory, bot: str, tmp_path: Path
) -> None:
    """Attack: the base branch is named ``main";id>&2;"`` and the title carries shell. The
    runner splices every expression as text; no script holds one, so nothing runs, and the
    review published as a git note verifies under the (oddly named) base's policy, with no
    export file in the change."""
    repo = git_repo(files=FILES)
    bare, server = setup_remote(repo, tmp_path)
    workflow = adopt(repo, bot)
    git(repo, "push", "-q", "origin", f"main:refs/heads/{HOSTILE_BASE}")
    head = _publish_reviewed_change(repo, {"calc.py": FILES["calc.py"] + "\n\ndef neg(a):\n    return -a\n"})
    assert not (repo / ".reviews").exists()  # nothing for the base branch to keep
    base_sha = git(repo, "rev-parse", "main").strip()
    ci = runner_checkout(bare, tmp_path, head)
    event = event_payload(head_sha=head, head_ref=HOSTILE_TITLE, base_ref=HOSTILE_BASE, base_sha=base_sha,
                          title=HOSTILE_TITLE)  # fmt: skip
    runner = runner_for(workflow, ci, tmp_path, server, event, os.environ["PATH"])
    ran = runner.run_job()
    out = "".join(r.proc.stdout + r.proc.stderr for r in ran)
    assert [r.proc.returncode for r in ran] == [0, 0], out
    assert "uid=" not in out and not Path("/tmp/pwned-title").exists()
    assert ran[1].argv[3] == f"refs/remotes/origin/{HOSTILE_BASE}"  # one argument, as written
    assert "refs/notes/agentreview" in ran[1].proc.stdout  # verified from the published note
    sarif = Path(runner.context["runner"]["temp"]) / "agentreview.sarif"
    assert sarif.is_file() and '"version": "2.1.0"' in sarif.read_text()


def test_without_a_published_review_the_gate_fails_and_an_export_commit_still_passes(
    git_repo: GitRepoFactory, bot: str, tmp_path: Path
) -> None:
    """No note on the remote: the fetch step says so and succeeds, verify finds nothing (4); a
    fork's export commit (which cannot push notes) verifies as before."""
    repo = git_repo(files=FILES)
    bare, server = setup_remote(repo, tmp_path)
    workflow = adopt(repo, bot)
    git(repo, "switch", "-q", "-c", "unreviewed")
    (repo / "calc.py").write_text(FILES["calc.py"] + "\n\ndef two():\n    return 2\n")
    commit_all(repo, "two")
    git(repo, "switch", "-q", "-c", "exported", "main")
    (repo / "calc.py").write_text(FILES["calc.py"] + "\n\ndef three():\n    return 3\n")
    commit_all(repo, "three")
    run = ar(repo, "run", "--binding", "local", "--export")
    assert run.returncode == 0, run.stdout + run.stderr
    commit_all(repo, "review: attest")
    git(repo, "push", "-q", "origin", "unreviewed", "exported")
    base_sha = git(repo, "rev-parse", "main").strip()
    codes = {}
    for branch in ("unreviewed", "exported"):
        head = git(repo, "rev-parse", branch).strip()
        (tmp_path / branch).mkdir()
        ci = runner_checkout(bare, tmp_path / branch, head)
        event = event_payload(head_sha=head, head_ref=branch, base_ref="main", base_sha=base_sha, title=branch)
        ran = runner_for(workflow, ci, tmp_path / branch, server, event, os.environ["PATH"]).run_job()
        assert ran[0].proc.returncode == 0 and "no published reviews" in ran[0].proc.stdout
        codes[branch] = ran[1].proc.returncode
        if branch == "unreviewed":  # the pull request's author reads where the gate looked, and what to do
            said = ran[1].proc.stdout + ran[1].proc.stderr
            assert f"HEAD {head[:10]} has no refs/notes/agentreview note" in said, said
            assert "--publish')" in said and "--export')" in said, said
    assert codes == {"unreviewed": 4, "exported": 0}


# --------------------------------------------------------------------------- nothing of the checkout runs

MARK_DIR_ENV = "AGENTREVIEW_TEST_GATE_MARKS"


def _hostile_tree(marks: Path) -> dict[str, str]:
    """Files of the pull request that run code if anything executes them: each appends its name
    to MARKS/ran (a folder created only while the gate runs, so the author's own review is not
    counted)."""
    sh = f'#!/bin/sh\necho "$0 $*" >> {marks}/ran 2>/dev/null\nexit 0\n'
    py = f"try:\n    open({str(marks)!r} + '/ran', 'a').write(__file__ + '\\n')\nexcept OSError:\n    pass\n"
    tree = {
        name: sh
        for name in (
            "git",
            "python",
            "python3",
            "ssh-keygen",
            "bin/agentreview",
            "base64",
            "tr",
            "ssh",
            "git-upload-pack",
            "bin/git",
            "bin/ssh-keygen",
            "bin/python3",
            "bin/base64",
        )
    }
    tree.update({
        "sitecustomize.py": py, "usercustomize.py": py, "conftest.py": py,
        "evil.pth": "import evil_pth_hook\n", "evil_pth_hook.py": py,
        "agentreview/__init__.py": py, "agentreview/__main__.py": py, "typer/__init__.py": py,
        "yaml/__init__.py": py, "json.py": py, "venv/__init__.py": py, "pip/__init__.py": py,
        ".gitattributes": "* filter=evil diff=evil merge=evil\n*.py text eol=crlf\n",
        "calc.py": FILES["calc.py"] + "\n\ndef neg(a):\n    return -a\n",
    })  # fmt: skip
    return tree


def _plant_git_config(ci: Path, marks: Path) -> None:
    """What a hostile .git/config and .git/hooks could hold (actions/checkout writes neither from
    the pull request; this is the worst case): every program git may be told to run."""
    touch = f"sh -c 'echo config >> {marks}/ran'"
    for key, value in {
        "core.fsmonitor": touch, "core.hooksPath": str(ci / ".git" / "evil-hooks"), "core.pager": touch,
        "core.sshCommand": touch, "core.askPass": touch, "core.editor": touch, "diff.external": touch,
        "diff.evil.command": touch, "diff.evil.textconv": touch, "filter.evil.clean": touch,
        "filter.evil.smudge": touch, "filter.evil.process": touch, "filter.evil.required": "true",
        "merge.evil.driver": touch, "credential.helper": f"!{touch}", "gpg.program": touch,
        "gpg.ssh.program": touch, "log.showSignature": "true", "remote.origin.uploadpack": touch,
        "protocol.allow": "always", "alias.verify": f"!{touch}", "pager.log": touch, "pager.diff": touch,
    }.items():  # fmt: skip
        git(ci, "config", key, value)
    for hooks in (ci / ".git" / "hooks", ci / ".git" / "evil-hooks"):
        hooks.mkdir(exist_ok=True)
        for name in ("reference-transaction", "post-checkout", "post-merge", "pre-auto-gc", "post-index-change",
                     "fsmonitor-watchman", "pre-commit", "post-rewrite"):  # fmt: skip
            (hooks / name).write_text(f"#!/bin/sh\necho hook-{name} >> {marks}/ran\n")
            (hooks / name).chmod(0o755)


def test_the_gate_runs_no_file_of_the_checkout(git_repo: GitRepoFactory, bot: str, tmp_path: Path) -> None:
    """Attack: the pull request's tree holds a fake git, python, ssh-keygen, base64 and agentreview
    (at its root and in bin/), sitecustomize/usercustomize, a .pth, a conftest, packages named
    agentreview, typer, yaml, json, venv and pip, and .gitattributes naming filter, diff and merge drivers; the
    checkout's .git/config and hooks name a program for every hook git has; PATH holds ``.``,
    ``bin`` and an empty entry. The workflow's steps run as the runner runs them with the
    checkout as working directory: the review verifies, and not one of those files ran."""
    marks = tmp_path / "marks"
    repo = git_repo(files=FILES)
    bare, server = setup_remote(repo, tmp_path)
    workflow = adopt(repo, bot)
    head = _publish_reviewed_change(repo, _hostile_tree(marks))
    base_sha = git(repo, "rev-parse", "main").strip()
    ci = runner_checkout(bare, tmp_path, head)
    assert (ci / "sitecustomize.py").is_file() and os.access(ci / "git", os.X_OK)
    _plant_git_config(ci, marks)
    marks.mkdir()  # from here on, anything of the checkout that runs leaves a line
    event = event_payload(head_sha=head, head_ref="feature", base_ref="main", base_sha=base_sha, title="neg")
    hostile_path = os.pathsep.join([".", "bin", "", os.environ["PATH"]])
    runner = runner_for(workflow, ci, tmp_path, server, event, hostile_path)
    ran = runner.run_job()
    out = "".join(r.proc.stdout + r.proc.stderr for r in ran)
    assert [r.proc.returncode for r in ran] == [0, 0], out
    assert not (marks / "ran").exists(), (marks / "ran").read_text()
    assert git(ci, "notes", "--ref=refs/notes/agentreview", "list", head).strip()  # the fetch did happen
    shutil.rmtree(marks)


def test_a_note_is_found_beside_an_export_folder_without_the_range(
    git_repo: GitRepoFactory, bot: str, tmp_path: Path
) -> None:
    """The base branch keeps an old export in .reviews/ (from before notes, or a fork's): a head
    published as a note still verifies, the report says where it was found; a note of another
    commit does not stand in for the head's (exit 4)."""
    repo = git_repo(files=FILES)
    setup_remote(repo, tmp_path)
    adopt(repo, bot)
    git(repo, "switch", "-q", "-c", "old")
    (repo / "calc.py").write_text(FILES["calc.py"] + "\n\ndef old():\n    return 0\n")
    commit_all(repo, "old")
    assert ar(repo, "run", "--binding", "local", "--export").returncode == 0
    commit_all(repo, "review: attest")
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "old")
    git(repo, "push", "-q", "origin", "main")
    assert (repo / ".reviews").is_dir()
    head = _publish_reviewed_change(
        repo, {"calc.py": (repo / "calc.py").read_text() + "\n\ndef new():\n    return 1\n"}
    )
    verify = ar(repo, "verify", "--policy-from", "refs/remotes/origin/main", "--require-signed")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert f"refs/notes/agentreview note of {head[:10]}" in verify.stdout
    (repo / "more.txt").write_text("unreviewed\n")
    commit_all(repo, "unreviewed on top")
    again = ar(repo, "verify", "--policy-from", "refs/remotes/origin/main", "--require-signed")
    assert again.returncode == 4, again.stdout + again.stderr
    top = git(repo, "rev-parse", "HEAD").strip()
    said = again.stdout + again.stderr
    assert f"in {repo / '.reviews'}, and HEAD {top[:10]} has no refs/notes/agentreview note here" in said, said
    assert "'agentreview run --publish'" in said and "'agentreview run --export'" in said, said
    git(repo, "notes", "--ref=refs/notes/agentreview", "add", "-m", '{"not": "an attestation"}', top)
    other = ar(repo, "verify", "--policy-from", "refs/remotes/origin/main", "--require-signed")
    assert other.returncode == 4, other.stdout + other.stderr
    assert f"the refs/notes/agentreview note of {top[:10]} has none for" in other.stdout + other.stderr
