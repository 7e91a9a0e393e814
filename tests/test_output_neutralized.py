"""Reviewer and command text never reaches a CI log as a workflow command.

The attack: a command lane prints ``::warning title=X::...``, ``::add-mask::``,
``::stop-commands::`` (indented, after a carriage return, the older ``##[warning]`` form) and a
reviewer reports a finding whose title and detail hold ``"\\n::warning title=X::"``. GitHub's
runner trims a line's leading whitespace and obeys it when it begins with ``::``. Through the
real CLI, stdout and stderr of ``run`` in text mode (``CI=true``, and with no terminal and no
``CI``), of ``verify`` on an export whose strings carry the same, and of ``check`` on the
manifest that holds them, contain no such line; with ``--annotate github`` the only such lines
are the annotations it writes. Before neutralizing, the summary printed each of them as an
indented detail line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview.report.neutral import neutralize

AGENTREVIEW = [sys.executable, "-m", "agentreview"]
# How GitHub's runner splits lines (\r\n, \r, \n) and the wider set str.splitlines() knows.
RUNNER_LINES = re.compile(r"\r\n|\r|\n")
COMMAND = re.compile(r"^\s*::")

SHOUT = """  - id: shout
    kind: command
    run: |
      cat <<'EOF'
      ::warning title=X::from the command
        ::add-mask::secret-from-command
      \t::stop-commands::tok
      ##[warning]legacy form
      EOF
      printf '\\r::error::after a carriage return\\n'
      exit 1
    timeoutMs: 300000
"""

REVIEWER = r"""
import json, os
title = "looks fine\n::warning title=X::from the reviewer"
detail = "first\n  ::add-mask::secret-from-reviewer\n::stop-commands::tok\r::notice::cr"
verdict = {"findings": [{"severity": "high", "title": title, "detail": detail, "file": "app.py", "line": 1}]}
open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w").write(json.dumps(verdict))
"""

MANIFEST = (
    "---\nkind: review\nid: loud\ntarget: { kind: git-range, base: main }\nverdict: { exportDir: .reviews }\n"
    "checks:\n" + SHOUT + "  - id: reviewer\n    kind: agent\n    preset: loud\n    rubric: ./rubric.md\n"
    "    blockOn: high\n    timeoutMs: 300000\n---\n\n# loud\n"
)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=True)
    return proc.stdout.strip()


@pytest.fixture
def loud(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.test")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "commit.gpgsign", "false")
    (root / "REVIEW.md").write_text(MANIFEST)
    (root / "rubric.md").write_text("Look.\n")
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "switch", "-q", "-c", "feature")
    (root / "app.py").write_text("x = 2\n")
    git(root, "commit", "-q", "-am", "change")
    home = tmp_path / "home"
    home.mkdir()
    reviewer = tmp_path / "reviewer.py"
    reviewer.write_text(REVIEWER)
    (home / "presets.toml").write_text(
        f'[presets.loud]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(reviewer)])}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_") and k != "CI"}
    env["AGENTREVIEW_HOME"] = str(home)
    return root, env


def agentreview(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREVIEW, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def command_lines(text: str) -> list[str]:
    """Every line a CI runner (or any reader splitting more widely) would take as a workflow command."""
    lines = RUNNER_LINES.split(text) + text.splitlines()
    return [line for line in lines if COMMAND.match(line) or "##[" in line]


@pytest.mark.parametrize("ci", [True, False], ids=["CI=true", "no-terminal"])
def test_run_text_output_carries_no_workflow_command(loud, ci: bool) -> None:
    root, env = loud
    proc = agentreview(root, {**env, "CI": "true"} if ci else env, "run", "--export")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # both lanes block
    assert command_lines(proc.stdout) == [] and command_lines(proc.stderr) == [], proc.stdout + proc.stderr
    # still shown, escaped: the reader sees what the lane printed
    assert "%3A:warning title=X::from the command" in proc.stdout
    assert "%3A:warning title=X::from the reviewer" in proc.stdout
    assert "#%23[warning]legacy form" in proc.stdout


def test_with_annotate_github_the_only_commands_are_its_annotations(loud) -> None:
    root, env = loud
    proc = agentreview(root, {**env, "CI": "true"}, "run", "--annotate", "github")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert command_lines(proc.stderr) == []
    found = command_lines(proc.stdout)
    assert found, proc.stdout
    for line in found:
        assert line.startswith(("::error ", "::warning ")), line  # written by --annotate, at column 0
        assert "\n" not in line and "\r" not in line
    assert not any("add-mask" in line.split("::", 2)[1] for line in found)


def test_verify_text_of_a_forged_export_carries_no_workflow_command(loud) -> None:
    root, env = loud
    assert agentreview(root, env, "run", "--export").returncode == 1
    (export,) = (root / ".reviews").glob("*.json")
    raw = json.loads(export.read_text())
    raw["binding"] = "default\n::warning title=X::from the export"
    raw["reviewId"] = "loud\n  ::add-mask::secret-from-export"
    export.write_text(json.dumps(raw))
    proc = agentreview(root, {**env, "CI": "true"}, "verify", "--base", "main", str(export))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert command_lines(proc.stdout) == [] and command_lines(proc.stderr) == [], proc.stdout + proc.stderr
    assert "%3A:warning title=X::from the export" in proc.stdout


def test_check_text_of_the_manifest_carries_no_workflow_command(loud) -> None:
    root, env = loud
    proc = agentreview(root, env, "check")
    assert proc.returncode == 0, proc.stderr
    assert command_lines(proc.stdout) == [] and command_lines(proc.stderr) == [], proc.stdout
    assert "%3A:warning title=X::from the command" in proc.stdout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("::warning::x", "%3A:warning::x"),
        ("a\n  ::add-mask::s", "a\n  %3A:add-mask::s"),
        ("a\r::error::x\r\n\t::stop-commands::t", "a\\x0d::error::x\\x0d\n\t%3A:stop-commands::t"),
        ("a\u2028::x\x85::y\x0b::z", "a\u2028%3A:x\\x85::y\\x0b::z"),
        # what a terminal obeys: clear and home, conceal, a title (OSC), the clipboard (OSC 52), C1, DEL, bidi
        ("a\x1b[2J\x1b[Hb\x1b[8mc", "a\\x1b[2J\\x1b[Hb\\x1b[8mc"),
        ("t\x1b]0;pwned\x07 \x1b]52;c;ZWNobw==\x1b\\", "t\\x1b]0;pwned\\x07 \\x1b]52;c;ZWNobw==\\x1b\\"),
        ("c1\x9b2J del\x7f nul\x00", "c1\\x9b2J del\\x7f nul\\x00"),
        ("fn\u202eevil\u2066x\u2069", "fn\\u202eevil\\u2066x\\u2069"),
        ("\u00a0\u3000\ufeff\u200b::x", "\u00a0\u3000\ufeff\u200b%3A:x"),
        ("ok: a::b, c :: d", "ok: a::b, c :: d"),
        ("x ##[warning]y ##VSO[task.x]z", "x #%23[warning]y #%23VSO[task.x]z"),
        ("\n\n::\n::", "\n\n%3A:\n%3A:"),
    ],
)
def test_neutralize(text: str, expected: str) -> None:
    assert neutralize(text) == expected
    assert command_lines(neutralize(text)) == []
    assert neutralize(expected) == expected  # once is enough
