"""The Markdown job summary of ``run`` and ``verify`` (``GITHUB_STEP_SUMMARY``, ``--summary PATH``).

The attack: a reviewer's finding title ``| <script>alert(1)</script> ::warning::pwned`` and a
detail with a Markdown link, an image, a code span and an ``<img>`` tag. GitHub renders the
summary as Markdown with HTML; the summary is rendered here with markdown-it-py (CommonMark with
HTML and GFM tables, as GitHub does) and must hold no element the reviewer wrote, no broken
table, and no line a runner would take as a workflow command, while the text still reads the
same. ``test_the_oracle_sees_an_unescaped_summary`` shows the rendering check catches the
injection when the text is not escaped (the summary before md_text).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from report_helpers import HOSTILE_DETAIL, HOSTILE_TITLE, GateRepo, git

from agentreview.report import summary as summary_mod
from agentreview.report.summary import md_text, run_summary

COMMAND = re.compile(r"^\s*::", re.MULTILINE)


def render(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def injected(html: str) -> list[str]:
    """Elements in the rendered HTML that only the reviewer's text could have made."""
    return re.findall(r"<(?:script|img|a|code)\b[^>]*>", html)


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    return GateRepo(tmp_path)


def test_run_appends_to_the_step_summary_and_escapes_a_hostile_finding(gate: GateRepo, tmp_path: Path) -> None:
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    proc = gate.agentreview("run", env={**gate.env, "GITHUB_STEP_SUMMARY": str(step_summary)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = step_summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not replaced
    assert "### agentreview run: ❌ block" in text
    assert "<script>" not in text and not COMMAND.search(text)
    html = render(text)
    assert injected(html) == [], html
    # the lanes table keeps its six columns on every row
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 3 and all(len(re.findall(r"(?<!\\)\|", row)) == 7 for row in rows)
    assert "<td>correctness</td>" in html and "<td>fail</td>" in html
    # the reader still sees what the reviewer wrote, as text
    assert "eval on input | &lt;script&gt;alert(1)&lt;/script&gt; ::warning::pwned" in html
    assert "[click me](https://evil.example)" in html
    assert f"<strong>{gate.principal}</strong>" in html  # the signing principal


def test_verify_summary_names_the_verdict_steps_and_principal(gate: GateRepo, tmp_path: Path) -> None:
    gate.reviewer_mode("approve")
    assert gate.agentreview("run", "--export").returncode == 0
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    out = tmp_path / "summary.md"
    env = {**gate.env, "GITHUB_STEP_SUMMARY": str(tmp_path / "ignored.md")}
    args = ("verify", "--policy-from", "origin/main", "--require-signed", "--summary", str(out))
    proc = gate.agentreview(*args, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = out.read_text()
    assert text.startswith("### agentreview verify: ✅ verified")
    assert not (tmp_path / "ignored.md").exists()  # --summary wins over GITHUB_STEP_SUMMARY
    html = render(text)
    assert "verdict <strong>pass</strong>" in html and f"<strong>{gate.principal}</strong>" in html
    assert "<td>signature</td>" in html and "<td>correctness</td>" in html


def test_a_failing_verify_summary_says_not_verified(gate: GateRepo, tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    proc = gate.agentreview("verify", "--policy-from", "origin/main", "--summary", str(out))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert out.read_text().startswith("### agentreview verify: ❌ NOT verified (not&#95;found)")


def test_a_step_summary_that_cannot_be_written_is_a_warning(gate: GateRepo, tmp_path: Path) -> None:
    gate.reviewer_mode("approve")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = gate.agentreview("run", env={**gate.env, "GITHUB_STEP_SUMMARY": str(fifo)})
    assert proc.returncode == 0, proc.stderr  # only the environment named it: the pass stands
    (line,) = [line for line in proc.stderr.splitlines() if "GITHUB_STEP_SUMMARY" in line]
    assert str(fifo) in line
    # named with --summary, the same failure makes the passing gate exit 3 (and never hangs on the FIFO)
    proc = gate.agentreview("run", "--summary", str(fifo))
    assert proc.returncode == 3 and "--summary: cannot write" in proc.stderr


def test_a_symlinked_summary_is_not_followed(gate: GateRepo, tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep\n")
    link = tmp_path / "summary.md"
    link.symlink_to(target)
    proc = gate.agentreview("run", "--summary", str(link))
    assert proc.returncode == 1 and "--summary: cannot write" in proc.stderr  # the block keeps its code
    assert target.read_text() == "keep\n"


def test_md_text_is_inert_and_one_line() -> None:
    hostile = f"{HOSTILE_TITLE}\n| x | y |\n  ::error::z\r##[warning]w {HOSTILE_DETAIL} www.evil.example a@b.example"
    escaped = md_text(hostile, 10_000)
    assert "\n" not in escaped and "|" not in escaped and "<" not in escaped and "`" not in escaped
    html = render(f"| a |\n|---|\n| {escaped} |\n")
    assert injected(html) == [] and html.count("<td>") == 1
    assert "::error::z" in html and "www.evil.example" in html


def test_the_oracle_sees_an_unescaped_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without md_text the same checks fail: the rendering check is real."""
    att = {"verdict": "block", "lanes": [{"id": "c", "kind": "agent", "blocking": True, "status": "fail",
                                         "durationMs": 1, "findings": [{"severity": "high", "title": HOSTILE_TITLE,
                                                                        "detail": HOSTILE_DETAIL}]}]}
    assert injected(render(run_summary(att, status="done"))) == []
    monkeypatch.setattr(summary_mod, "md_text", lambda value, limit=0: str(value))
    raw = run_summary(att, status="done")
    assert injected(render(raw)) and "<script>" in raw


def test_summary_writes_are_bounded_in_time(tmp_path: Path) -> None:
    """A FIFO with no reader as --summary: the open fails at once (non-blocking), no hang."""
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-c", "from pathlib import Path; from agentreview.report.outputs import append_text; "
         f"append_text(Path({str(fifo)!r}), 'x')"],
        capture_output=True, text=True, timeout=20,
    )
    assert proc.returncode != 0 and "cannot write" in proc.stderr
