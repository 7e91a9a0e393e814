"""action.yml, the gate as a composite GitHub Action: its shape, its steps run as a runner runs them,
and the hardening checks (zizmor, ShellCheck) with no finding.

The steps run for real, as the runner runs a composite action (tests/action_runner.py), with the
caller's checkout as the working directory. The install step makes a fresh virtualenv
with the runner's python3 and installs the action's checkout into it (pip, from PyPI for the
dependencies); the verify step then runs that venv's agentreview on real repositories whose main
is pushed to a real bare remote, with real signed exports, a forged one and one of another
binding. The checkout and PATH hold planted programs and modules (``venv``, ``pip``, ``json``,
``agentreview``, ``python``) that leave a mark if anything runs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from action_runner import ACTION, EXPR, ROOT, ActionRunner, copy_action, load_action, step
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from report_helpers import MANIFEST, GateRepo, forge_unsigned_pass, git, validate_sarif

CACHE_COMMIT = "55cc8345863c7cc4c66a329aec7e433d2d1c52a9"  # actions/cache v6.1.0
VENV_BIN = Path(sys.executable).parent
IN_CI = bool(os.environ.get("CI"))
TWO_BINDINGS = MANIFEST.replace(
    "verdict: { exportDir: .reviews }\n",
    "verdict: { exportDir: .reviews }\n"
    "bindings:\n"
    "  local: { on: pre-push, checks: [tests] }\n"
    "  ci: { on: pull_request, checks: [tests, correctness] }\n",
)
# Planted where a careless step would run them: each leaves a mark and fails.
PLANTED_MODULE = (
    "import pathlib, os\npathlib.Path(os.environ['PLANTED_MARK']).write_text(__name__)\nraise SystemExit(97)\n"
)
PLANTED_PROGRAM = '#!/bin/sh\necho "$0" > "$PLANTED_MARK"\nexit 97\n'


def tool(name: str) -> Path:
    """A lint tool the test extras install; missing is a failure in CI, a skip elsewhere."""
    found = VENV_BIN / name
    if not found.exists():
        message = f"{name} is not installed: run scripts/bootstrap (the test extras install it)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found


class Runner(ActionRunner):
    """One job's runner whose PATH has planted programs first (each leaves a mark if it runs)."""

    def __init__(self, tmp: Path, action_path: Path, temp: Path, planted_bin: Path, mark: Path):
        # The caller's PATH as a runner has it: the project's own venv is not on it, the planted
        # programs come first; python3 is the runner's.
        rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != VENV_BIN]
        path = os.pathsep.join([str(planted_bin), *rest])
        super().__init__(tmp, action_path, temp, path, {"PLANTED_MARK": str(mark)})
        self.planted_bin, self.mark = planted_bin, mark

    def run(
        self, which: str, cwd: Path, inputs: dict[str, str], base_env: dict[str, str], steps: dict[str, dict[str, str]]
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, str], Path]:
        """The step's process, its outputs and its job summary; it wrote nothing to GITHUB_PATH or GITHUB_ENV."""
        ran = self.run_step(which, cwd, inputs, base_env, steps)
        assert ran.files["GITHUB_PATH"].read_text() == "" and ran.files["GITHUB_ENV"].read_text() == ""
        return ran.proc, ran.outputs, ran.files["GITHUB_STEP_SUMMARY"]


def plant(folder: Path) -> list[Path]:
    """Modules a step's python would import from its working directory, if it let it."""
    planted = []
    for name in ("venv", "pip", "ensurepip"):
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "__init__.py").write_text(PLANTED_MODULE)
        (folder / name / "__main__.py").write_text(PLANTED_MODULE)
        planted.append(folder / name)
    for name in ("json", "site", "sitecustomize"):
        (folder / f"{name}.py").write_text(PLANTED_MODULE)
        planted.append(folder / f"{name}.py")
    return planted


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runner, dict[str, str], str]]:
    """The install step, run once per module: a fresh venv under RUNNER_TEMP from the action's copy."""
    tmp = tmp_path_factory.mktemp("runner")
    action_path = tmp / "_actions" / "agentreview" / "agentreview" / "sha"
    runner = Runner(tmp, action_path, tmp / "temp", tmp / "bin", tmp / "mark")
    for folder in (runner.action_path, runner.temp, runner.planted_bin):
        folder.mkdir(parents=True)
    copy_action(runner.action_path)
    for name in ("agentreview", "python", "pip"):
        (runner.planted_bin / name).write_text(PLANTED_PROGRAM)
        (runner.planted_bin / name).chmod(0o755)
    checkout = tmp / "checkout"
    checkout.mkdir()
    plant(checkout)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_", "VIRTUAL_ENV"))}
    keyed, key, _ = runner.run("key", checkout, {}, env, {})
    assert keyed.returncode == 0, keyed.stdout + keyed.stderr
    proc, outputs, _ = runner.run("install", checkout, {}, env, {"key": key, "restore": {"cache-hit": ""}})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runner, outputs, proc.stdout


def run_gate(
    installed: tuple[Runner, dict[str, str], str], gate: GateRepo, inputs: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    runner, install_outputs, _ = installed
    runner.mark.unlink(missing_ok=True)
    planted = plant(gate.root)
    try:
        proc, outputs, summary = runner.run(
            "verify", gate.root, inputs or {}, gate.env, {"install": install_outputs}
        )
    finally:
        for each in planted:  # the test's own `python -m agentreview` runs in this folder next
            shutil.rmtree(each) if each.is_dir() else each.unlink()
    assert not runner.mark.exists(), f"a planted program or module ran: {runner.mark.read_text()}"
    return proc.returncode, outputs, summary.read_text() or proc.stdout + proc.stderr


def commit_export(gate: GateRepo, *args: str) -> Path:
    proc = gate.agentreview("run", "--export", "--json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    return Path(json.loads(proc.stdout)["exportPath"])


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    return GateRepo(tmp_path / "w")


# --------------------------------------------------------------------------- the file itself


def test_action_shape() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert set(inputs) == {"policy-ref", "require-signed", "binding", "sarif", "python"}
    assert inputs["policy-ref"]["default"] == "refs/remotes/origin/${{ github.base_ref }}"
    assert inputs["require-signed"]["default"] == "true" and inputs["sarif"]["default"] == "agentreview.sarif"
    assert inputs["binding"]["default"] == "" and inputs["python"]["default"] == "python3"
    steps = action["runs"]["steps"]
    # no setup-python (the caller's Python stays): the only actions used keep the venv in the cache
    used = [each["uses"] for each in steps if "uses" in each]
    assert used == [f"actions/cache/{how}@{CACHE_COMMIT}" for how in ("restore", "save")], used
    assert step(action, "restore")["with"]["key"] == "${{ steps.key.outputs.key }}"
    assert step(action, "install")["env"]["AGENTREVIEW_RESTORED"] == "${{ steps.restore.outputs.cache-hit }}"
    # the cache only where no pull request's code shares its scope
    assert step(action, "install")["env"]["AGENTREVIEW_CACHE"] == "${{ steps.key.outputs.cache }}"
    assert step(action, "restore")["if"] == "steps.key.outputs.cache == 'true'"
    save = [each for each in action["runs"]["steps"] if each.get("uses", "").startswith("actions/cache/save@")]
    assert save[0]["if"].startswith("steps.key.outputs.cache == 'true' && ")
    steps = [each for each in steps if "run" in each]
    install = step(action, "install")
    assert install["env"]["AGENTREVIEW_ACTION_PATH"] == "${{ github.action_path }}"
    # every file from PyPI checked against the committed hashes; the checkout adds no dependency
    assert 'requirements="$AGENTREVIEW_ACTION_PATH/action-requirements.txt"' in install["run"]
    assert install["run"].count('--require-hashes -r "$requirements"') == 2
    assert install["run"].count("--no-deps --no-build-isolation") == 2
    assert install["run"].count('pip install') == 5  # uv from PyPI, then two with uv and two with pip
    verify = step(action, "verify")
    assert verify["env"]["AGENTREVIEW_VENV"] == "${{ steps.install.outputs.venv }}"
    assert '"$AGENTREVIEW_VENV/bin/python" -I -m agentreview "${args[@]}"' in verify["run"]
    assert "--ci-binding" in verify["run"]
    assert set(action["outputs"]) == {"verdict", "verified", "exit-code", "sarif"}
    for output in action["outputs"].values():
        assert output["value"].startswith("${{ steps.verify.outputs.")
    for each in steps:
        script = each["run"]
        assert not EXPR.search(script), script  # inputs come through env:, never spliced into a script
        assert each["shell"] == "bash"
        assert "GITHUB_PATH" not in script and "GITHUB_ENV" not in script
        # every python runs isolated (-I): the checkout, its working directory, shadows no module
        for line in script.splitlines():
            if re.search(r"(PYTHON\"|/bin/python\")\s", line):
                assert " -I " in line, line
        subprocess.run(["bash", "-n"], input=script, text=True, check=True, timeout=30)
    for name in inputs:  # each input is read in one env: entry of a step and nowhere else
        uses = [(s["id"], k) for s in steps for k, v in s.get("env", {}).items() if f"inputs.{name} " in f"{v} "]
        expected = 2 if name == "python" else 1  # the python names the cache key and makes the venv
        assert len(uses) == expected and len({sid for sid, _ in uses}) == expected, (name, uses)


def pinned_requirements() -> dict[str, tuple[str, list[str]]]:
    """action-requirements.txt as {name: (version, hashes)}."""
    text = (ROOT / "action-requirements.txt").read_text().replace("\\\n", " ")
    pinned: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            spec, *options = line.split()
            name, version = spec.split("==")
            assert canonicalize_name(name) not in pinned, name
            assert all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", each) for each in options), line
            pinned[canonicalize_name(name)] = (version, [each.removeprefix("--hash=sha256:") for each in options])
    return pinned


def test_action_requirements_pin_every_runtime_dependency_of_the_core_by_hash() -> None:
    """Every requirement of agentreview-core, and of those in turn (markers as this Python takes
    them), is pinned at a version inside every range that names it, with its hashes; so is the
    setuptools pyproject's build-system asks for. A dependency added to pyproject and not here
    fails, as the Action's --require-hashes install would."""
    pinned = pinned_requirements()
    assert all(hashes for _, hashes in pinned.values())
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    todo = [Requirement(each) for each in [*(metadata.requires("agentreview-core") or []), *build]]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in action-requirements.txt: regenerate it (see its header)"
        assert requirement.specifier.contains(pinned[name][0], prereleases=True), (str(requirement), pinned[name][0])
        if name not in seen:
            seen.add(name)
            todo += [Requirement(each) for each in metadata.requires(name) or []] if name != "setuptools" else []
    assert {"pydantic-core", "typing-extensions", "setuptools"} <= seen  # the closure, not just pyproject's list


def test_zizmor_finds_nothing_in_action_yml() -> None:
    zizmor = tool("zizmor")
    proc = subprocess.run(
        [str(zizmor), "--offline", "--persona=auditor", "--no-progress", str(ACTION)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0 and "No findings to report" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def _actionlint(folder: Path, workflow: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = folder / ".github" / "workflows" / "gate.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not (folder / ".git").exists():  # `uses: ./` is the repository root: actionlint finds it by .git
        git(folder, "init", "-q")
    path.write_text(yaml.safe_dump(workflow, sort_keys=False))
    return subprocess.run(
        [str(tool("actionlint")), f"-shellcheck={tool('shellcheck')}", "-pyflakes=", "-oneline", str(path)],
        cwd=folder, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_actionlint_finds_nothing_in_the_action_steps_or_its_use(tmp_path: Path) -> None:
    """actionlint reads workflows: the action's steps as a reusable workflow's job (its inputs as the
    workflow's, so every expression is type-checked and every script shellchecked), and a workflow
    that uses the action (``uses: ./``) with every input, checked against action.yml's metadata."""
    action = load_action()
    inputs = {n: {"type": "string", "required": False, "default": s["default"]} for n, s in action["inputs"].items()}
    job = {"runs-on": "ubuntu-latest", "timeout-minutes": 15, "steps": action["runs"]["steps"]}
    steps = _actionlint(tmp_path / "steps", {"on": {"workflow_call": {"inputs": inputs}}, "jobs": {"gate": job}})
    assert steps.returncode == 0 and steps.stdout == "", steps.stdout + steps.stderr
    use = tmp_path / "use"
    use.mkdir()
    shutil.copy2(ACTION, use / "action.yml")
    given = {name: "x" for name in action["inputs"]}
    workflow = {
        "on": "pull_request",
        "jobs": {"gate": {"runs-on": "ubuntu-latest", "steps": [{"uses": "./", "with": given}]}},
    }
    used = _actionlint(use, workflow)
    assert used.returncode == 0 and used.stdout == "", used.stdout + used.stderr
    workflow["jobs"]["gate"]["steps"][0]["with"] = {"bindng": "ci"}  # it does read the metadata
    assert 'input "bindng" is not defined' in _actionlint(use, workflow).stdout


def test_shellcheck_finds_nothing_in_the_action_scripts(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    for each in [each for each in load_action()["runs"]["steps"] if "run" in each]:
        script = tmp_path / f"{each['id']}.sh"
        script.write_text("#!/usr/bin/env bash\n" + each["run"])
        proc = subprocess.run(
            [str(shellcheck), "--shell=bash", "--severity=style", str(script)],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout


# --------------------------------------------------------------------------- the steps, run


@pytest.mark.slow
def test_install_makes_a_venv_of_its_own_and_leaves_the_callers_python_and_path(
    installed: tuple[Runner, dict[str, str], str],
) -> None:
    runner, outputs, stdout = installed
    venv = Path(outputs["venv"])
    assert venv == runner.temp / "agentreview-action-venv" and (venv / "bin" / "agentreview").is_file()
    assert stdout.strip().splitlines()[-1].startswith("agentreview 0.1.0")
    # no uv on the runner's PATH: the action installed one of its own under RUNNER_TEMP and used it
    assert f"installed with {runner.temp / 'agentreview-action-uv' / 'bin' / 'uv'}" in stdout.splitlines()
    assert outputs["installed"] == "true"
    assert not runner.mark.exists()  # neither the checkout's venv/pip modules nor PATH's python ran
    names_of = "import importlib.metadata as m, json; print(json.dumps([d.name for d in m.distributions()]))"
    listed = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", names_of],
                            capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    names = set(json.loads(listed.stdout))
    assert "agentreview-core" in names and "agentreview" not in names
    # installed from the action's copy, not from this checkout (no editable link back to it)
    where = "import agentreview; print(agentreview.__file__)"
    shown = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", where],
                           capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert shown.stdout.startswith(str(venv))


@pytest.mark.slow
def test_a_venv_restored_from_the_cache_is_used_as_it_is(installed: tuple[Runner, dict[str, str], str]) -> None:
    runner, first, _ = installed
    compiled = list(Path(first["venv"]).glob("lib/python3*/site-packages/agentreview/__pycache__/*.pyc"))
    assert compiled, "uv installed without compiling bytecode"
    restored = {"key": {"cache": "true"}, "restore": {"cache-hit": "true"}}
    proc, outputs, _ = runner.run("install", runner.tmp, {}, dict(os.environ), restored)
    assert proc.returncode == 0, proc.stderr
    assert outputs == {"venv": first["venv"]} and proc.stdout.strip().startswith("agentreview 0.1.0")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three installs, the last through pip: 320 s at load 17, and the bound must hold at more
def test_a_broken_restored_venv_is_installed_again_and_pip_is_the_fallback_when_uv_fails(
    installed: tuple[Runner, dict[str, str], str], tmp_path: Path
) -> None:
    """The cache said hit but the venv does not start (restored onto another image, say), and the
    runner's uv fails: the install runs again, with pip."""
    first = installed[0]
    runner = Runner(tmp_path, first.action_path, tmp_path / "temp", tmp_path / "bin", tmp_path / "mark")
    broken = runner.temp / "agentreview-action-venv" / "bin"
    broken.mkdir(parents=True)
    runner.planted_bin.mkdir()
    for program in (broken / "agentreview", runner.planted_bin / "uv"):
        program.write_text("#!/bin/sh\nexit 1\n")
        program.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_", "VIRTUAL_ENV"))}
    restored = {"key": {"cache": "true"}, "restore": {"cache-hit": "true"}}
    proc, outputs, _ = runner.run("install", tmp_path, {}, env, restored)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert outputs["installed"] == "true" and "installed with" not in proc.stdout
    assert proc.stdout.strip().startswith("agentreview 0.1.0")
    assert (runner.temp / "agentreview-action-venv" / "bin" / "pip").exists()  # pip's venv, not uv's


TAMPERED = "import os, pathlib\npathlib.Path(os.environ['PLANTED_MARK']).write_text('tampered')\nos._exit(0)\n"
# Bytecode for a module's place: the header of the real .pyc (so it matches the source's mtime and
# size and Python loads it) followed by the tampered code.
FORGE_PYC = """import importlib.util, marshal, py_compile, sys
source, code = sys.argv[1], sys.argv[2]
pyc = py_compile.compile(source, cfile=importlib.util.cache_from_source(source))
with open(pyc, "rb") as fh:
    header = fh.read(16)
with open(pyc, "wb") as fh:
    fh.write(header + marshal.dumps(compile(code, source, "exec")))
"""


def restored_runner(installed: tuple[Runner, dict[str, str], str], tmp_path: Path) -> tuple[Runner, Path]:
    """A second runner whose RUNNER_TEMP holds a copy of the installed venv, as a cache restore
    leaves it (its scripts naming the venv where it now is, as on a runner whose RUNNER_TEMP is
    the same path every job), and the first runner's uv on PATH (installing again needs no download)."""
    first, outputs, _ = installed
    runner = Runner(tmp_path, first.action_path, tmp_path / "temp", tmp_path / "bin", tmp_path / "mark")
    runner.planted_bin.mkdir()
    (runner.planted_bin / "uv").symlink_to(first.temp / "agentreview-action-uv" / "bin" / "uv")
    venv = runner.temp / "agentreview-action-venv"
    shutil.copytree(outputs["venv"], venv, symlinks=True)
    for script in (venv / "bin").iterdir():  # restored where it was made: its scripts name this path
        if script.is_file() and not script.is_symlink() and script.read_bytes().startswith(b"#!"):
            script.write_text(script.read_text().replace(outputs["venv"], str(venv)))
    return runner, venv


def gate_after_restore(
    runner: Runner, event: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], int, dict[str, str]]:
    """The key, install and verify steps of a job on ``event`` whose restore step hit; verify runs
    on a branch with no export, which the real agentreview fails (exit 4)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_", "VIRTUAL_ENV"))}
    env["GITHUB_EVENT_NAME"] = event
    keyed, key, _ = runner.run("key", tmp_path, {}, env, {})
    assert keyed.returncode == 0, keyed.stderr
    proc, outputs, _ = runner.run("install", tmp_path, {}, env, {"key": key, "restore": {"cache-hit": "true"}})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code, verified, _ = run_gate((runner, outputs, proc.stdout), GateRepo(tmp_path / "w"))
    return proc, outputs, code, verified


@pytest.mark.slow
def test_a_restored_venv_with_tampered_agentreview_code_is_installed_again(
    installed: tuple[Runner, dict[str, str], str], tmp_path: Path
) -> None:
    """A cache entry under the action's key whose agentreview always passes: the install step finds
    its code is not the action's checkout and installs again; the gate runs the real verify."""
    runner, venv = restored_runner(installed, tmp_path)
    (init,) = venv.glob("lib/python3*/site-packages/agentreview/__init__.py")
    init.write_text(TAMPERED + init.read_text())
    proc, outputs, code, verified = gate_after_restore(runner, "pull_request_target", tmp_path)
    assert "holds agentreview code that is not the action's checkout: installing it again" in proc.stderr
    assert outputs["installed"] == "true"
    assert code == 4 and verified["verified"] == "false"  # run_gate asserts the tampered code left no mark


@pytest.mark.slow
def test_bytecode_forged_over_a_checked_module_of_a_restored_venv_never_runs(
    installed: tuple[Runner, dict[str, str], str], tmp_path: Path
) -> None:
    """Every source file matches the checkout, but agentreview/__init__'s .pyc holds other code
    behind the real header: the restored venv is used, without its bytecode."""
    runner, venv = restored_runner(installed, tmp_path)
    (init,) = venv.glob("lib/python3*/site-packages/agentreview/__init__.py")
    subprocess.run([str(venv / "bin" / "python"), "-I", "-c", FORGE_PYC, str(init), TAMPERED],
                   check=True, timeout=60, env={**os.environ, "PLANTED_MARK": str(runner.mark)})  # fmt: skip
    shown = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import agentreview"], timeout=60,
                           env={**os.environ, "PLANTED_MARK": str(runner.mark)})  # fmt: skip
    assert shown.returncode == 0 and runner.mark.read_text() == "tampered"  # the forged .pyc does run
    runner.mark.unlink()
    proc, outputs, code, verified = gate_after_restore(runner, "pull_request_target", tmp_path)
    assert "installed" not in outputs and proc.stdout.strip().startswith("agentreview 0.1.0")  # used as restored
    assert code == 4 and verified["verified"] == "false"


@pytest.mark.slow
def test_a_pull_request_run_uses_no_cache_entry(installed: tuple[Runner, dict[str, str], str], tmp_path: Path) -> None:
    """On pull_request the cache scope is one the pull request's own jobs can save to: an entry
    there, even one whose agentreview matches (here a dependency of it is tampered, which the
    install step does not check), is never used."""
    runner, venv = restored_runner(installed, tmp_path)
    (typer,) = venv.glob("lib/python3*/site-packages/typer/__init__.py")
    typer.write_text(TAMPERED + typer.read_text())
    proc, outputs, code, verified = gate_after_restore(runner, "pull_request", tmp_path)
    assert outputs["installed"] == "true" and "installing it again" not in proc.stderr
    assert code == 4 and verified["verified"] == "false"


@pytest.mark.slow
def test_a_dependency_whose_files_do_not_match_the_pinned_hashes_is_never_installed(
    installed: tuple[Runner, dict[str, str], str], tmp_path: Path
) -> None:
    """PyYAML's files as the index serves them are not the ones action-requirements.txt pins (here
    the pins are changed, standing for a changed upload): uv refuses, the pip fallback refuses,
    and the step fails before anything is checked by the gate."""
    first = installed[0]
    action_path = tmp_path / "action"
    shutil.copytree(first.action_path, action_path)
    requirements = action_path / "action-requirements.txt"
    version, hashes = pinned_requirements()["pyyaml"]
    text = requirements.read_text()
    for each in hashes:
        text = text.replace(each, "0" * 64)
    requirements.write_text(text)
    runner = Runner(tmp_path, action_path, tmp_path / "temp", tmp_path / "bin", tmp_path / "mark")
    for folder in (runner.temp, runner.planted_bin):
        folder.mkdir()
    (runner.planted_bin / "uv").symlink_to(first.temp / "agentreview-action-uv" / "bin" / "uv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_", "VIRTUAL_ENV"))}
    proc, outputs, _ = runner.run("install", tmp_path, {}, env, {"key": {"cache": ""}, "restore": {"cache-hit": ""}})
    assert proc.returncode != 0 and "venv" not in outputs and "installed" not in outputs
    assert "installed with" not in proc.stdout
    assert "DO NOT MATCH THE HASHES" in proc.stderr and f"pyyaml=={version}" in proc.stderr.lower()


@pytest.mark.slow
def test_install_refuses_a_python_older_than_the_core_needs(
    installed: tuple[Runner, dict[str, str], str], tmp_path: Path
) -> None:
    runner = installed[0]
    old = tmp_path / "python-old"
    old.write_text("#!/bin/sh\nexit 1\n")  # what `sys.exit(sys.version_info < (3, 11))` answers on 3.10
    old.chmod(0o755)
    proc, outputs, _ = runner.run("install", tmp_path, {"python": str(old)}, dict(os.environ),
                                       {"key": {"cache": ""}, "restore": {"cache-hit": ""}})  # fmt: skip
    assert proc.returncode == 3 and "venv" not in outputs
    assert "is not Python 3.11 or newer — name one with the python input" in proc.stderr


@pytest.mark.slow
def test_verify_step_passes_on_a_branch_with_a_signed_export(installed: Any, gate: GateRepo) -> None:
    gate.reviewer_mode("approve")
    commit_export(gate)
    code, outputs, summary = run_gate(installed, gate)
    assert code == 0, summary
    assert outputs == {"verdict": "pass", "verified": "true", "exit-code": "0", "sarif": "agentreview.sarif"}
    doc = json.loads((gate.root / "agentreview.sarif").read_text())
    validate_sarif(doc)
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["properties"]["principal"] == gate.principal
    assert summary.startswith("### agentreview verify: ✅ verified")


@pytest.mark.slow
def test_verify_step_fails_on_a_branch_without_an_export(installed: Any, gate: GateRepo) -> None:
    code, outputs, summary = run_gate(installed, gate)
    assert code == 4, summary
    assert outputs["verified"] == "false" and outputs["verdict"] == "" and outputs["exit-code"] == "4"
    doc = json.loads((gate.root / "agentreview.sarif").read_text())
    validate_sarif(doc)
    assert doc["runs"][0]["results"][0]["ruleId"] == "verify/not_found"
    assert "NOT verified (not_found)" in summary


@pytest.mark.slow
def test_verify_step_fails_on_a_blocked_review_and_reports_its_verdict(installed: Any, gate: GateRepo) -> None:
    commit_export(gate)
    code, outputs, _ = run_gate(installed, gate, {"sarif": "out/gate.sarif"})
    assert code == 1
    assert outputs["verdict"] == "block" and outputs["verified"] == "false" and outputs["sarif"] == "out/gate.sarif"
    validate_sarif(json.loads((gate.root / "out" / "gate.sarif").read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("require_signed", ["true", "false"])
def test_a_forged_unsigned_export_never_yields_verdict_pass(
    installed: Any, gate: GateRepo, require_signed: str
) -> None:
    """A blocked review's export rewritten to pass, its signature dropped, committed as the export."""
    path = commit_export(gate)
    forge_unsigned_pass(gate.root, path)
    code, outputs, _ = run_gate(installed, gate, {"require-signed": require_signed})
    assert outputs["verdict"] == ""  # the export says pass; nothing vouches for it
    if require_signed == "true":
        assert code == 6 and outputs["verified"] == "false"


@pytest.mark.slow
def test_a_sarif_log_planted_in_the_checkout_is_not_read_as_the_outcome(installed: Any, gate: GateRepo) -> None:
    planted = {"runs": [{"properties": {"attestedVerdict": "pass", "verdict": "pass"}}]}
    (gate.root / "agentreview.sarif").write_text(json.dumps(planted))
    git(gate.root, "add", "agentreview.sarif")
    git(gate.root, "commit", "-q", "-m", "a log of our own")
    code, outputs, _ = run_gate(installed, gate)
    assert code == 4 and outputs["verdict"] == ""


@pytest.mark.slow
def test_the_gate_requires_the_policys_ci_binding_by_default(installed: Any, tmp_path: Path) -> None:
    gate = GateRepo(tmp_path / "w", TWO_BINDINGS)
    gate.reviewer_mode("approve")
    commit_export(gate, "--binding", "local")  # the quick pre-push review, signed and valid
    code, outputs, summary = run_gate(installed, gate)
    assert code == 4 and outputs["verdict"] == "" and outputs["verified"] == "false", summary
    code, outputs, _ = run_gate(installed, gate, {"binding": "local"})  # a gate that names it accepts it
    assert code == 0 and outputs["verdict"] == "pass"
    git(gate.root, "reset", "-q", "--hard", "HEAD^")  # the change again, now reviewed with the ci binding
    commit_export(gate, "--binding", "ci")
    code, outputs, _ = run_gate(installed, gate)
    assert code == 0 and outputs["verdict"] == "pass" and outputs["verified"] == "true"


@pytest.mark.slow
def test_an_input_cannot_inject_shell(installed: Any, gate: GateRepo) -> None:
    marker = gate.root.parent / "pwned"
    hostile = f'x"; touch {marker}; echo "$(touch {marker})'
    code, outputs, _ = run_gate(installed, gate, {"binding": hostile, "policy-ref": f"main`touch {marker}`"})
    assert code != 0 and not marker.exists()
    assert outputs["verified"] == "false" and outputs["verdict"] == ""
    code, _, text = run_gate(installed, gate, {"require-signed": "yes"})
    assert code == 64 and "require-signed must be true or false" in text
