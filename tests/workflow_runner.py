"""Run init's GitHub workflow the way a runner does, on this machine.

What the runner does and this does too: every ``${{ expr }}`` in a step's ``run:``, ``env:`` and
``with:`` is replaced by its value *as text* before the script is written (which is how a
spliced expression becomes shell), then each ``run:`` step runs as ``bash -e SCRIPT`` with the
workspace as its working directory and the step's ``env:`` over the runner's environment.

The project's Action (``uses: OWNER/REPO@SHA``) runs as action.yml maps its inputs: the installed
``agentreview`` console script, called by its absolute path as the Action calls its own venv's
binary, with ``verify --policy-from POLICY-REF [--require-signed] (--binding B | --ci-binding) --sarif SARIF``.
Third-party actions (checkout, upload-sarif) are not run: the test lays the checkout itself.

Expressions are dotted lookups into the context (``github.event.pull_request.head.sha``,
``runner.temp``); anything else fails the test, so the workflow stays that simple.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
DOTTED = re.compile(r"[A-Za-z_][\w-]*(?:\.[\w-]+)*")
AGENTREVIEW = Path(sys.executable).parent / "agentreview"  # the installed script, as the Action's venv has it


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def substitute(text: str, context: Mapping[str, Any]) -> str:
    """Each ``${{ a.b.c }}`` replaced by its value's text, exactly as the runner splices it."""

    def value(match: re.Match[str]) -> str:
        expr = match.group(1)
        if not DOTTED.fullmatch(expr):
            raise AssertionError(f"expression the test runner does not evaluate: {expr!r}")
        node: Any = context
        for part in expr.split("."):
            node = node.get(part, "") if isinstance(node, Mapping) else ""
        return "" if node is None else str(node)

    return EXPR.sub(value, text)


def context_for(event: dict[str, Any], *, token: str, repository: str, server_url: str, temp: Path) -> dict[str, Any]:
    """The ``github`` and ``runner`` contexts of a ``pull_request_target`` run of ``event``."""
    pull = event["pull_request"]
    github = {
        "event_name": "pull_request_target",
        "event": event,
        "base_ref": pull["base"]["ref"],
        "head_ref": pull["head"]["ref"],
        "token": token,
        "repository": repository,
        "server_url": server_url,
    }
    return {"github": github, "runner": {"temp": str(temp)}}


@dataclass
class StepRun:
    name: str
    argv: list[str]
    proc: subprocess.CompletedProcess[str]


@dataclass
class Runner:
    """One job of a workflow run: ``workspace`` is the checkout, ``env`` the runner's environment."""

    workflow: dict[str, Any]
    workspace: Path
    env: dict[str, str]
    context: dict[str, Any]
    action_prefix: str  # "OWNER/REPO@": the step that uses it runs as the project's Action
    ran: list[StepRun] = field(default_factory=list)

    def steps(self, job: str = "verify") -> list[dict[str, Any]]:
        return list(self.workflow["jobs"][job]["steps"])

    def run_job(self, job: str = "verify") -> list[StepRun]:
        """Every step after the checkout, in order, stopping at the first that fails (as the runner does)."""
        for step in self.steps(job):
            uses = step.get("uses", "")
            if "run" in step:
                done = self._shell(step)
            elif uses.startswith(self.action_prefix):
                done = self._action(step)
            else:
                continue  # actions/checkout (laid by the test), upload-sarif (checked by the test)
            self.ran.append(done)
            if done.proc.returncode != 0:
                break
        return self.ran

    def _step_env(self, step: Mapping[str, Any]) -> dict[str, str]:
        env = dict(self.env)
        for key, raw in (step.get("env") or {}).items():
            env[key] = substitute(str(raw), self.context)
        return env

    def _shell(self, step: Mapping[str, Any]) -> StepRun:
        script = substitute(step["run"], self.context)
        temp = Path(self.context["runner"]["temp"])
        path = temp / f"step-{len(self.ran)}.sh"
        path.write_text(script, encoding="utf-8")
        argv = ["/bin/bash", "-e", str(path)]  # the runner's default shell on Linux: bash -e {0}
        return StepRun(step.get("name", ""), argv, self._spawn(argv, self._step_env(step)))

    def _action(self, step: Mapping[str, Any]) -> StepRun:
        given = {k: substitute(str(v), self.context) for k, v in (step.get("with") or {}).items()}
        argv = [str(AGENTREVIEW), "verify", "--policy-from", given["policy-ref"], "--sarif", given["sarif"]]
        if given.get("require-signed", "true") == "true":
            argv.append("--require-signed")
        if given.get("binding"):
            argv += ["--binding", given["binding"]]
        else:  # the Action's default: the policy's binding meant for CI
            argv.append("--ci-binding")
        return StepRun(step.get("name", ""), argv, self._spawn(argv, self._step_env(step)))

    def _spawn(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=self.workspace, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
        )


def event_payload(*, head_sha: str, head_ref: str, base_ref: str, base_sha: str, title: str) -> dict[str, Any]:
    """A ``pull_request_target`` event as GitHub sends it (the fields the workflow may read, and a
    few it must not trust: title, body, head ref, labels)."""
    return {
        "action": "synchronize",
        "number": 7,
        "pull_request": {
            "number": 7,
            "title": title,
            "body": f"{title}\n\n`$(touch /tmp/never)` ${{{{ github.token }}}}",
            "head": {"ref": head_ref, "sha": head_sha, "label": f"fork:{head_ref}", "repo": {"fork": True}},
            "base": {"ref": base_ref, "sha": base_sha},
            "labels": [{"name": title}],
            "user": {"login": "mallory"},
        },
        "repository": {"full_name": "acme/widgets", "default_branch": base_ref},
    }
