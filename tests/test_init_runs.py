"""``agentreview init`` writes a review that runs on this host, and a mistake in REVIEW.md is found early.

Each test controls what is on PATH with a folder of its own (links to the real ``git`` and
``ssh-keygen``, small launchers for this interpreter), so "tox is not here" or "python3.9 is not
here" is a fact of the test, not of the machine it runs on. The test runs are real: the lane
starts real pytest on a real library's tests, and the counts come from pytest's own summary.
A ``tox`` launcher stands in for tox where one is needed: init only reads its ``#!`` line, and
the launcher records any run, which the tests assert never happens when tox was not chosen.
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

from tests.conftest import GitRepoFactory, git

PYTHON = sys.executable
REVIEWER = Path(__file__).resolve().parent.parent / "agentreview" / "demo" / "reviewer.py"
# A src-layout library whose tox wants interpreters and a plugin that are not here (as click's does).
LIBRARY = {
    "pyproject.toml": '[project]\nname = "mylib"\nversion = "0.1.0"\ndependencies = []\n\n'
    '[dependency-groups]\ntests = ["pytest"]\n\n'
    '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n'
    '[tool.tox]\nenv_list = ["py3.9", "py3.14t", "pypy3.11", "typing"]\n\n'
    '[tool.tox.env_run_base]\nrunner = "uv-venv-lock-runner"\ndependency_groups = ["tests"]\n'
    'commands = [["pytest", "-v", "--basetemp={env_tmp_dir}"]]\n',
    "src/mylib/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_add.py": "from mylib import add\n\nfrom tests_log import log\n\n\n"
    "def test_add():\n    log('test_add')\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_zero():\n    log('test_add_zero')\n    assert add(0, 7) == 7\n",
    ".gitignore": ".pytest_cache/\n__pycache__/\n.reviews/\n",
}


def launcher(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    """A PATH folder with git, ssh-keygen and ``python3`` (this interpreter, which has pytest): nothing else."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for program in ("git", "ssh-keygen"):
        found = shutil.which(program)
        assert found, f"{program} is needed"
        (folder / program).symlink_to(found)
    launcher(folder, "python3", f'#!/bin/sh\nexec "{PYTHON}" "$@"\n')
    return folder


def env_for(path: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env.update(PATH=str(path), HOME=str(tmp_path / "empty-home"), PYTHONDONTWRITEBYTECODE="1")
    (tmp_path / "empty-home").mkdir(exist_ok=True)
    env.pop("AGENTREVIEW_DISABLE_PLUGINS", None)
    return env


def ar(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "agentreview", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def lanes_of(result: dict) -> dict[str, str]:
    return {lane["id"]: lane["status"] for lane in result["attestation"]["lanes"]}


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def library(tmp_path: Path) -> dict[str, str]:
    """LIBRARY whose tests append their names to a file outside the repository: proof that they ran."""
    log = tmp_path / "tests-ran"
    helper = f"def log(name):\n    with open({str(log)!r}, 'a') as out:\n        out.write(name + '\\n')\n"
    return {**LIBRARY, "tests/tests_log.py": helper}


def executed(tmp_path: Path) -> list[str]:
    log = tmp_path / "tests-ran"
    return log.read_text().splitlines() if log.exists() else []


def test_a_tox_that_cannot_run_here_becomes_the_tests_it_runs(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path
) -> None:
    """tox is on PATH but lacks tox-uv and its environments' interpreters: a bare ``tox`` would skip
    every environment and pass with nothing tested. init writes pytest instead, and it runs tests."""
    ran = tmp_path / "tox-ran"
    launcher(bindir, "tox", f"#!{PYTHON}\nimport pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n")
    repo = git_repo(files=library(tmp_path))
    env = env_for(bindir, tmp_path)
    init = ar(repo, env, "init", "--hook", "none", "--json")
    assert init.returncode == 0, init.stderr
    report = json.loads(init.stdout)
    (tests,) = report["checks"]
    assert tests["id"] == "tests" and tests["run"] == "PYTHONPATH=src python3 -m pytest -q"
    assert "tox lacks the plugin tox-uv" in tests["why"] and "pypy3.11, python3.14t, python3.9" in tests["why"]
    warning = next(w for w in report["warnings"] if w.startswith("not running tox"))
    assert "pip install tox-uv" in warning and "uv python install" in warning
    assert report["preset"] is None and any("no agent check" in w for w in report["warnings"])
    commit_all(repo, "adopt agentreview")
    source = repo / "src" / "mylib" / "__init__.py"
    source.write_text("def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n")
    commit_all(repo, "neg")
    run = ar(repo, env, "run", "--base", "HEAD^", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["verdict"] == "pass" and lanes_of(result) == {"tests": "pass"}
    assert executed(tmp_path) == ["test_add", "test_add_zero"]  # the library's tests really ran
    source.write_text("def add(a, b):\n    return a - b\n")
    commit_all(repo, "break add")
    broken = ar(repo, env, "run", "--base", "HEAD^", "--json")
    assert broken.returncode == 1 and "2 failed" in broken.stdout
    assert not ran.exists()  # tox itself never ran


def test_tox_is_kept_when_tox_and_what_its_environments_need_are_here(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path
) -> None:
    launcher(bindir, "tox", f"#!{PYTHON}\nraise SystemExit(0)\n")
    repo = git_repo(files={"tox.ini": "[tox]\nenv_list = py3, lint\n\n[testenv]\ncommands = pytest\n", "t.py": ""})
    init = ar(repo, env_for(bindir, tmp_path), "init", "--hook", "none", "--json")
    assert init.returncode == 0, init.stderr
    (tox,) = json.loads(init.stdout)["checks"]
    assert tox["run"] == "tox" and "py3, lint" in tox["why"]


def test_no_pytest_here_writes_no_test_check_and_says_how_to_get_one(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path
) -> None:
    launcher(bindir, "python3", f'#!/bin/sh\nexec "{PYTHON}" -S "$@"\n')  # no site-packages: no pytest
    repo = git_repo(files=LIBRARY)
    init = ar(repo, env_for(bindir, tmp_path), "init", "--hook", "none", "--json")
    assert init.returncode == 0, init.stderr
    report = json.loads(init.stdout)
    assert report["checks"] == []
    assert any("no pytest is installed here" in w and "python3 -m pip install pytest" in w for w in report["warnings"])
    # nothing else runs here either: the review keeps a blocking check, the agent check to set up
    assert report["preset"] == "claude" and any("every review is incomplete" in w for w in report["warnings"])
    assert ar(repo, env_for(bindir, tmp_path), "check").returncode == 0


def test_a_command_whose_program_is_missing_is_left_out_with_its_install_command(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path
) -> None:
    repo = git_repo(files={"go.mod": "module example.com/x\n", "ruff.toml": "", "conftest.py": ""})
    init = ar(repo, env_for(bindir, tmp_path), "init", "--hook", "none", "--json")
    report = json.loads(init.stdout)
    assert [c["id"] for c in report["checks"]] == ["pytest"]
    assert any("'go-test'" in w and "go is not on PATH" in w and "go.dev" in w for w in report["warnings"])
    assert any("'ruff'" in w and "pip install ruff" in w for w in report["warnings"])


def test_a_usable_user_preset_is_chosen_when_no_built_in_reviewer_is(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path, agentreview_home: Path
) -> None:
    (agentreview_home / "presets.toml").write_text(
        f'[presets.team-bot]\nprovider = "exec"\ncommand = [{json.dumps(PYTHON)}, {json.dumps(str(REVIEWER))}]\n'
    )
    repo = git_repo(files={"conftest.py": "", "test_x.py": "def test_x():\n    pass\n"})
    init = ar(repo, env_for(bindir, tmp_path), "init", "--hook", "none", "--json")
    report = json.loads(init.stdout)
    assert report["preset"] == "team-bot" and not any("reviewer" in w for w in report["warnings"])
    assert "preset: team-bot" in (repo / "REVIEW.md").read_text()


REVIEW = """---
kind: review
id: demo
target: {{ kind: git-range, base: {base} }}
checks:
  - id: marker
    kind: command
    run: "touch {marker} && tox -q"
  - id: correctness
    kind: agent
    preset: {preset}
    rubric: ./rubric.md
bindings:
  local: {{ checks: [{refs}] }}
---
"""


def manifest_repo(git_repo: GitRepoFactory, tmp_path: Path, **fields: str) -> Path:
    values = {"base": "refs/heads/main", "marker": str(tmp_path / "lane-ran"), "preset": "team-bot"}
    values["refs"] = "marker, correctness"
    values.update(fields)
    return git_repo(files={"REVIEW.md": REVIEW.format(**values), "rubric.md": "find bugs\n"})


@pytest.fixture
def team_bot(agentreview_home: Path) -> str:
    (agentreview_home / "presets.toml").write_text(
        f'[presets.team-bot]\nprovider = "exec"\ncommand = [{json.dumps(PYTHON)}, {json.dumps(str(REVIEWER))}]\n'
    )
    return "team-bot"


def test_check_warns_about_a_missing_program_and_an_unknown_preset(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path, team_bot: str
) -> None:
    repo = manifest_repo(git_repo, tmp_path, preset="team-bott")
    proc = ar(repo, env_for(bindir, tmp_path), "check", "--json")
    assert proc.returncode == 0, proc.stderr  # still valid: another host may have what this one lacks
    warnings = json.loads(proc.stdout)["warnings"]
    assert any(w.startswith("check 'marker': tox is not on PATH") and "pip install tox" in w for w in warnings)
    assert any("unknown preset 'team-bott' — did you mean 'team-bot'?" in w for w in warnings)
    assert "agentreview check: warning: check 'correctness': unknown preset" in proc.stderr


def test_run_refuses_an_unknown_preset_before_any_lane_starts(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path, team_bot: str
) -> None:
    repo = manifest_repo(git_repo, tmp_path, preset="team-bott")
    proc = ar(repo, env_for(bindir, tmp_path), "run", "--base", "HEAD")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "REVIEW.md" in line and "preset" in line and "did you mean 'team-bot'?" in line and "presets.toml" in line
    assert not (tmp_path / "lane-ran").exists()  # no lane ran


def test_did_you_mean_for_a_binding_and_a_check_id(git_repo: GitRepoFactory, bindir: Path, tmp_path: Path) -> None:
    repo = manifest_repo(git_repo, tmp_path, refs="marker, corectness")
    check = ar(repo, env_for(bindir, tmp_path), "check")
    assert check.returncode == 3 and "unknown check 'corectness' — did you mean 'correctness'?" in check.stderr
    repo = manifest_repo(git_repo, tmp_path)
    run = ar(repo, env_for(bindir, tmp_path), "run", "--binding", "locl", "--base", "HEAD")
    assert run.returncode == 3 and "has no binding 'locl' — did you mean 'local'?" in run.stderr


def test_a_missing_target_base_names_the_field_of_review_md(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path, team_bot: str
) -> None:
    repo = manifest_repo(git_repo, tmp_path, base="refs/remotes/origin/develop")
    proc = ar(repo, env_for(bindir, tmp_path), "run")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "'refs/remotes/origin/develop' (REVIEW.md's target.base)" in line and "git fetch origin develop" in line
    assert "correct target.base in REVIEW.md" in line
    assert "Traceback" not in proc.stderr and not (tmp_path / "lane-ran").exists()


def readme_tour() -> list[str]:
    """The commands of README.md's "A short tour" block, as written (comments dropped)."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    tour = text.split("## A short tour", 1)[1]
    block = re.search(r"```sh\n(.*?)```", tour, re.DOTALL)
    assert block, "README.md's tour has a sh block"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line.startswith("agentreview ")]


def test_readme_tour_runs_verbatim_on_what_init_writes(git_repo: GitRepoFactory, tmp_path: Path, team_bot: str) -> None:
    """init on a Python repository with an origin, a change on a branch, then every command of
    README's tour exactly as written there, each exiting 0 (run reviews and exports, verify accepts)."""
    tour = readme_tour()
    assert tour[:3] == [
        "agentreview check",
        "agentreview run --export",
        "agentreview verify --policy-from refs/remotes/origin/main --require-signed",
    ]
    env = env_for(Path(PYTHON).parent, tmp_path)
    env["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # the README's `agentreview`
    repo = git_repo(files=library(tmp_path))
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    init = ar(repo, env, "init", "--reviewer", team_bot)
    assert init.returncode == 0, init.stderr
    commit_all(repo, "adopt agentreview")
    git(repo, "push", "-q", "--no-verify", "origin", "main")  # the policy lands on the base branch first
    git(repo, "switch", "-q", "-c", "topic")
    source = repo / "src" / "mylib" / "__init__.py"
    source.write_text("def add(a, b):\n    return a + b\n\n\ndef two():\n    return 2\n")
    commit_all(repo, "two")
    for command in tour:
        proc = subprocess.run(
            ["sh", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=300,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 0, f"{command}: {proc.stdout}{proc.stderr}"
        if command == "agentreview run --export":
            assert "verdict: pass" in proc.stdout and "binding" not in proc.stderr
    assert executed(tmp_path) == ["test_add", "test_add_zero"]
    assert list((repo / ".reviews").glob("*-local-*.json"))


def test_init_runs_no_program_of_the_repository_it_inspects(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path
) -> None:
    """Attack: the repository init inspects plants executables named ``python3``, ``pytest``,
    ``tox`` and ``python3.9`` at its root and in ``bin/``, and PATH has an empty and a relative
    entry (``:$PATH``, ``bin:$PATH``). init looks programs up on absolute PATH entries only and
    starts only interpreters found there (to ask their version): none of the planted ones runs."""
    pwned = tmp_path / "pwned"
    files = dict(library(tmp_path))
    for folder in ("", "bin/"):
        for name in ("python3", "pytest", "tox", "python3.9"):
            files[f"{folder}{name}"] = f"#!/bin/sh\necho {name} >> {pwned}\n"
    repo = git_repo(files=files)
    for rel in files:
        if rel.rsplit("/", 1)[-1] in ("python3", "pytest", "tox", "python3.9"):
            (repo / rel).chmod(0o755)
    env = env_for(bindir, tmp_path)
    env["PATH"] = f"{os.pathsep}bin{os.pathsep}{bindir}"
    init = ar(repo, env, "init", "--hook", "none", "--json")
    assert init.returncode == 0, init.stderr
    assert not pwned.exists()
    (tests,) = json.loads(init.stdout)["checks"]
    assert tests["run"] == "PYTHONPATH=src python3 -m pytest -q"  # the python3 of bindir, by absolute path


@pytest.mark.parametrize(
    ("files", "envs", "plugins", "interpreters"),
    [
        ({"tox.ini": "[tox]\nenvlist = py{39,312}-django{4,5}, lint\nrequires =\n    tox>=4\n    tox-gh\n"},
         ["py39-django4", "py39-django5", "py312-django4", "py312-django5", "lint"], ["tox-gh"],
         {"python3.9", "python3.12", None}),
        ({"tox.ini": "[tox]\nenv_list = docs\n[testenv:docs]\nbasepython = python3.13\nrunner = uv-venv-runner\n"},
         ["docs"], ["tox-uv"], {"python3.13"}),
        ({"pyproject.toml": '[tool.tox]\nlegacy_tox_ini = """\n[tox]\nenvlist = pypy3, py3.11t\n"""\n'},
         ["pypy3", "py3.11t"], [], {"pypy3", "python3.11t"}),
        ({"tox.toml": 'requires = ["tox-uv>=1"]\nenv_list = ["3.12", "type"]\n'
                      '[env.type]\nbase_python = ["python3.10"]\n'},
         ["3.12", "type"], ["tox-uv"], {"python3.12", "python3.10"}),
        ({"setup.cfg": "[tox:tox]\nenvlist = py38\n"}, ["py38"], [], {"python3.8"}),
    ],
)  # fmt: skip
def test_what_a_tox_configuration_needs(
    tmp_path: Path, files: dict[str, str], envs: list[str], plugins: list[str], interpreters: set[str | None]
) -> None:
    from agentreview.setup.detect import read_text
    from agentreview.setup.toxconf import read_tox_config

    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    config = read_tox_config(tmp_path, read_text)
    assert config is not None
    assert list(config.envs) == envs and list(config.plugins) == plugins
    assert set(config.interpreters.values()) == interpreters


@pytest.mark.parametrize(("requires", "kept"), [("pytest-xdist", True), ("tox-uv", False)])
def test_tox_is_kept_only_when_its_interpreter_has_the_plugins_it_requires(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path, requires: str, kept: bool
) -> None:
    """The plugins are asked of the interpreter in tox's ``#!`` line (this one, which has pytest-xdist)."""
    launcher(bindir, "tox", f"#!{PYTHON}\nraise SystemExit(0)\n")
    repo = git_repo(files={"tox.ini": f"[tox]\nenv_list = py3\nrequires =\n    {requires}\n", "conftest.py": ""})
    init = ar(repo, env_for(bindir, tmp_path), "init", "--hook", "none", "--json")
    (check,) = json.loads(init.stdout)["checks"]
    assert (check["run"] == "tox") is kept
    if not kept:
        assert f"tox lacks the plugin {requires}" in check["why"] and check["run"].endswith("python3 -m pytest -q")


def test_an_unknown_reviewer_names_the_closest_preset(
    git_repo: GitRepoFactory, bindir: Path, tmp_path: Path, team_bot: str
) -> None:
    repo = git_repo()
    proc = ar(repo, env_for(bindir, tmp_path), "init", "--reviewer", "team-bott")
    assert proc.returncode == 64 and "did you mean 'team-bot'?" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (repo / "REVIEW.md").exists()
