"""action.yml, the gate as a composite GitHub Action: its shape, its steps run as a runner runs them,
and the hardening checks (zizmor, ShellCheck) with no finding.

The steps run for real, as the runner runs a composite action: the action's files are copied to
their own folder (the runner's ``_actions/<owner>/<repo>/<sha>``: ``github.action_path``), each
step's ``run:`` script goes to ``bash --noprofile --norc -eo pipefail`` with its ``env:`` and every
``${{ }}`` expression replaced by the value the runner would give it (the inputs, their defaults
themselves expressions, the ``github`` context, an earlier step's outputs), with ``RUNNER_TEMP``,
``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_PATH`` and ``GITHUB_ENV`` files of its own
and the caller's checkout as the working directory. The install step makes a fresh virtualenv
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from report_helpers import MANIFEST, GateRepo, forge_unsigned_pass, git, validate_sarif

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
CACHE_COMMIT = "55cc8345863c7cc4c66a329aec7e433d2d1c52a9"  # actions/cache v6.1.0
EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
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


def load_action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text())


def step(action: dict[str, Any], name_or_id: str) -> dict[str, Any]:
    (found,) = [s for s in action["runs"]["steps"] if name_or_id in (s.get("id"), s.get("name"))]
    return found


def evaluate(text: str, contexts: dict[str, dict[str, str]]) -> str:
    """``text`` with each ``${{ inputs.X }}`` / ``${{ github.X }}`` / ``${{ steps.ID.outputs.X }}``
    replaced as the runner would; any other expression fails the test."""

    def value(match: re.Match[str]) -> str:
        scope, _, name = match.group(1).partition(".")
        if scope == "steps":
            sid, _, output = name.partition(".outputs.")
            scope, name = f"steps.{sid}", output
        table = contexts.get(scope)
        assert table is not None and name in table, f"unexpected expression {match.group(0)}"
        return table[name]

    return EXPR.sub(value, text)


def tool(name: str) -> Path:
    """A lint tool the test extras install; missing is a failure in CI, a skip elsewhere."""
    found = VENV_BIN / name
    if not found.exists():
        message = f"{name} is not installed: run scripts/bootstrap (the test extras install it)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class Runner:
    """One job's runner: its temp folder, the action's folder, and a PATH with planted programs first."""

    tmp: Path
    action_path: Path
    temp: Path
    planted_bin: Path
    mark: Path

    def path(self) -> str:
        # The caller's PATH as a runner has it: the project's own venv is not on it, the planted
        # programs come first; python3 is the runner's.
        rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != VENV_BIN]
        return os.pathsep.join([str(self.planted_bin), *rest])

    def run_step(
        self, which: str, cwd: Path, inputs: dict[str, str], base_env: dict[str, str], steps: dict[str, dict[str, str]]
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, str], Path]:
        action = load_action()
        github = {"base_ref": "main", "action_path": str(self.action_path), "workspace": str(cwd)}
        contexts: dict[str, dict[str, str]] = {"github": github}
        defaults = {n: evaluate(str(s.get("default", "")), contexts) for n, s in action["inputs"].items()}
        contexts["inputs"] = {**defaults, **inputs}
        contexts.update({f"steps.{sid}": out for sid, out in steps.items()})
        spec = step(action, which)
        work = self.tmp / f"step-{which}-{len(list(self.tmp.glob('step-*')))}"
        work.mkdir()
        files = {k: work / k.lower() for k in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_PATH", "GITHUB_ENV")}
        for file in files.values():
            file.write_text("")
        script = work / "step.sh"
        script.write_text(evaluate(spec["run"], contexts))
        env = {
            **base_env,
            **{k: evaluate(str(v), contexts) for k, v in spec.get("env", {}).items()},
            **{k: str(v) for k, v in files.items()},
            "PATH": self.path(),
            "RUNNER_TEMP": str(self.temp),
            "PLANTED_MARK": str(self.mark),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert files["GITHUB_PATH"].read_text() == "" and files["GITHUB_ENV"].read_text() == ""
        outputs = dict(line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if "=" in line)
        return proc, outputs, files["GITHUB_STEP_SUMMARY"]


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


def copy_action(dest: Path) -> None:
    """The action's repository as the runner checks it out: every tracked file, as it is now."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    for rel in listed.stdout.decode().split("\0"):
        if rel and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)


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
    keyed, key, _ = runner.run_step("key", checkout, {}, env, {})
    assert keyed.returncode == 0, keyed.stdout + keyed.stderr
    proc, outputs, _ = runner.run_step("install", checkout, {}, env, {"key": key, "restore": {"cache-hit": ""}})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runner, outputs, proc.stdout


def run_gate(
    installed: tuple[Runner, dict[str, str], str], gate: GateRepo, inputs: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    runner, install_outputs, _ = installed
    runner.mark.unlink(missing_ok=True)
    planted = plant(gate.root)
    try:
        proc, outputs, summary = runner.run_step(
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
    steps = [each for each in steps if "run" in each]
    install = step(action, "install")
    assert install["env"]["AGENTREVIEW_ACTION_PATH"] == "${{ github.action_path }}"
    assert '-m pip install --disable-pip-version-check --no-input -q "$AGENTREVIEW_ACTION_PATH"' in install["run"]
    verify = step(action, "verify")
    assert verify["env"]["AGENTREVIEW_VENV"] == "${{ steps.install.outputs.venv }}"
    assert '"$AGENTREVIEW_VENV/bin/agentreview" "${args[@]}"' in verify["run"] and "--ci-binding" in verify["run"]
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
    proc, outputs, _ = runner.run_step("install", runner.tmp, {}, dict(os.environ), {"restore": {"cache-hit": "true"}})
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
    proc, outputs, _ = runner.run_step("install", tmp_path, {}, env, {"restore": {"cache-hit": "true"}})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert outputs["installed"] == "true" and "installed with" not in proc.stdout
    assert proc.stdout.strip().startswith("agentreview 0.1.0")
    assert (runner.temp / "agentreview-action-venv" / "bin" / "pip").exists()  # pip's venv, not uv's


@pytest.mark.slow
def test_install_refuses_a_python_older_than_the_core_needs(
    installed: tuple[Runner, dict[str, str], str], tmp_path: Path
) -> None:
    runner = installed[0]
    old = tmp_path / "python-old"
    old.write_text("#!/bin/sh\nexit 1\n")  # what `sys.exit(sys.version_info < (3, 11))` answers on 3.10
    old.chmod(0o755)
    proc, outputs, _ = runner.run_step("install", tmp_path, {"python": str(old)}, dict(os.environ),
                                       {"restore": {"cache-hit": ""}})  # fmt: skip
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
