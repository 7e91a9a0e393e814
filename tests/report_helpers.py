"""A real repository whose review has a blocking reviewer finding, for the SARIF, summary and Action tests.

The agent lane runs a small reviewer script through the ``exec`` provider (a host-local preset
in ``$AGENTREVIEW_HOME/presets.toml``); the script reports the findings in ``FINDINGS`` (or
none, with ``approve``). The host key signs every run; its allowed_signers line is committed on
main, which is pushed to a real bare remote so ``--policy-from origin/main`` works as in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

AGENTREVIEW = [sys.executable, "-m", "agentreview"]
SCHEMA = Path(__file__).parent / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"
HOSTILE_TITLE = "eval on input | <script>alert(1)</script> ::warning::pwned"
HOSTILE_DETAIL = "see [click me](https://evil.example) ![px](https://t.example/p.png) `code` <img src=x>"

FINDINGS: list[dict[str, Any]] = [
    {"severity": "high", "title": HOSTILE_TITLE, "detail": HOSTILE_DETAIL, "file": "app.py", "line": 1},
    {"severity": "medium", "title": "no tests for the change", "detail": ""},
    {"severity": "low", "title": "outside the repository", "detail": "", "file": "../../etc/passwd", "line": 3},
]

REVIEWER = """
import json, os, sys
mode = open(os.path.join(os.path.dirname(sys.argv[0]), "mode")).read().strip()
findings = json.loads(open(os.path.join(os.path.dirname(sys.argv[0]), "findings.json")).read())
verdict = {"decision": "approve", "summary": "ok", "findings": []}
if mode == "block":
    verdict = {"decision": "request_changes", "summary": "risky", "findings": findings}
open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w").write(json.dumps(verdict))
"""

MANIFEST = """---
kind: review
id: demo
target: { kind: git-range, base: main }
verdict: { exportDir: .reviews }
checks:
  - id: tests
    kind: command
    run: "true"
  - id: correctness
    kind: agent
    preset: fake
    rubric: ./rubrics/correctness.md
    blockOn: high
    timeoutMs: 300000
---

# demo
"""


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, env=env, check=True)
    return proc.stdout.strip()


def forge_unsigned_pass(root: Path, export: Path) -> None:
    """The forged-verdict attack: a committed blocked review's export rewritten to pass (every lane
    passing, no finding), its signature dropped, and the export commit amended with it."""
    raw = json.loads(export.read_text())
    raw["verdict"] = "pass"
    for lane in raw["lanes"]:
        lane["status"], lane["findings"] = "pass", []
    del raw["attestor"]["signature"]
    export.write_text(json.dumps(raw, indent=2) + "\n")
    git(root, "commit", "-q", "--amend", "--no-edit", "-a")


class GateRepo:
    """A repository on branch ``feature`` off ``main``, with ``origin`` a bare remote holding main."""

    def __init__(self, tmp: Path, manifest: str = MANIFEST):
        self.root = tmp / "repo"
        self.home = tmp / "home"
        self.tools = tmp / "reviewer"
        for folder in (self.root, self.home, self.tools):
            folder.mkdir(parents=True)
        (self.tools / "reviewer.py").write_text(REVIEWER)
        (self.tools / "findings.json").write_text(json.dumps(FINDINGS))
        self.reviewer_mode("block")
        (self.home / "presets.toml").write_text(
            "[presets.fake]\nprovider = \"exec\"\n"
            f"command = {json.dumps([sys.executable, str(self.tools / 'reviewer.py')])}\n"
        )
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GITHUB_"))}
        self.env.pop("CI", None)
        self.env["AGENTREVIEW_HOME"] = str(self.home)
        git(self.root, "init", "-q", "-b", "main")
        git(self.root, "config", "user.email", "dev@example.test")
        git(self.root, "config", "user.name", "Dev")
        git(self.root, "config", "commit.gpgsign", "false")
        (self.root / "REVIEW.md").write_text(manifest)
        (self.root / "rubrics").mkdir()
        (self.root / "rubrics" / "correctness.md").write_text("# correctness\nLook for bugs.\n")
        (self.root / "app.py").write_text("x = 1\n")
        key = json.loads(self.agentreview("key", "--json").stdout)
        (self.root / ".agentproto").mkdir()
        (self.root / ".agentproto" / "allowed_signers").write_text(key["allowedSignersLine"] + "\n")
        self.principal = key["principal"]
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "base")
        remote = tmp / "origin.git"
        git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
        git(self.root, "remote", "add", "origin", str(remote))
        git(self.root, "push", "-q", "origin", "main")
        git(self.root, "fetch", "-q", "origin")
        git(self.root, "switch", "-q", "-c", "feature")
        (self.root / "app.py").write_text("x = eval(input())\n")
        git(self.root, "commit", "-q", "-am", "change")

    def reviewer_mode(self, mode: str) -> None:
        (self.tools / "mode").write_text(mode)

    def agentreview(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTREVIEW, *args],
            cwd=self.root,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )


def validate_sarif(doc: dict[str, Any]) -> None:
    """Raise unless ``doc`` is valid against the OASIS SARIF 2.1.0 JSON schema."""
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
