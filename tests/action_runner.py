"""action.yml's steps run as a GitHub runner runs a composite action, for tests/test_action.py and
bench/bench_ci.py.

The action's files are copied to a folder of their own (the runner's
``_actions/<owner>/<repo>/<sha>``: ``github.action_path``); each step's ``run:`` script goes to
``bash --noprofile --norc -eo pipefail`` with its ``env:`` and every ``${{ }}`` expression
replaced by the value the runner would give it (the inputs, whose defaults are expressions
themselves, the ``github`` context, an earlier step's outputs), with ``RUNNER_TEMP``,
``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_PATH`` and ``GITHUB_ENV`` of its own.

It lives beside the tests (as report_helpers.py does) because the tests are what it must stay
faithful to: they import it as a sibling, and the bench puts this folder on ``sys.path`` as
bench_packs.py does, so the bench never times a runner the tests do not check.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
RUNNER_FILES = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_PATH", "GITHUB_ENV")


def load_action(path: Path = ACTION) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def step(action: dict[str, Any], name_or_id: str) -> dict[str, Any]:
    """The one step whose id or name is ``name_or_id``."""
    (found,) = [s for s in action["runs"]["steps"] if name_or_id in (s.get("id"), s.get("name"))]
    return found


def evaluate(text: str, contexts: dict[str, dict[str, str]]) -> str:
    """``text`` with each ``${{ inputs.X }}`` / ``${{ github.X }}`` / ``${{ steps.ID.outputs.X }}``
    replaced as the runner would; any other expression is an error (AssertionError)."""

    def value(match: re.Match[str]) -> str:
        scope, _, name = match.group(1).partition(".")
        if scope == "steps":
            sid, _, output = name.partition(".outputs.")
            scope, name = f"steps.{sid}", output
        table = contexts.get(scope)
        if table is None or name not in table:
            raise AssertionError(f"unexpected expression {match.group(0)}")
        return table[name]

    return EXPR.sub(value, text)


def copy_action(dest: Path) -> None:
    """The action's repository as the runner checks it out: every tracked file, as it is now."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    for rel in listed.stdout.decode().split("\0"):
        if rel and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)


@dataclass
class RanStep:
    """One step's process, the outputs it wrote to GITHUB_OUTPUT, and the runner's files it had."""

    proc: subprocess.CompletedProcess[str]
    outputs: dict[str, str]
    files: dict[str, Path]


@dataclass
class ActionRunner:
    """One job's runner: a scratch folder for the steps' files, the action's folder, RUNNER_TEMP,
    the PATH the steps see and any variables the runner adds to every step."""

    tmp: Path
    action_path: Path
    temp: Path
    path: str
    extra_env: dict[str, str] = field(default_factory=dict)

    def run_step(
        self,
        which: str,
        cwd: Path,
        inputs: dict[str, str],
        base_env: dict[str, str],
        steps: dict[str, dict[str, str]],
        *,
        prelude: str = "",
        timeout: float = 900,
    ) -> RanStep:
        """Run the step ``which`` in ``cwd`` with the given inputs (the rest at their defaults) and
        earlier steps' outputs; ``prelude`` goes before its script (bash options, say)."""
        action = load_action(self.action_path / "action.yml")
        github = {"base_ref": "main", "action_path": str(self.action_path), "workspace": str(cwd)}
        contexts: dict[str, dict[str, str]] = {"github": github}
        defaults = {n: evaluate(str(s.get("default", "")), contexts) for n, s in action["inputs"].items()}
        contexts["inputs"] = {**defaults, **inputs}
        contexts.update({f"steps.{sid}": out for sid, out in steps.items()})
        spec = step(action, which)
        work = self.tmp / f"step-{which}-{len(list(self.tmp.glob('step-*')))}"
        work.mkdir()
        files = {k: work / k.lower() for k in RUNNER_FILES}
        for file in files.values():
            file.write_text("")
        script = work / "step.sh"
        script.write_text(prelude + evaluate(spec["run"], contexts))
        env = {
            **base_env,
            **{k: evaluate(str(v), contexts) for k, v in spec.get("env", {}).items()},
            **{k: str(v) for k, v in files.items()},
            "PATH": self.path,
            "RUNNER_TEMP": str(self.temp),
            **self.extra_env,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        outputs = dict(line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if "=" in line)
        return RanStep(proc, outputs, files)
