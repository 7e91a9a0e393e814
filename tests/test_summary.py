"""The Markdown job summary of ``run`` and ``verify`` (``GITHUB_STEP_SUMMARY``, ``--summary PATH``).

The attack: a reviewer's finding title ``| <script>alert(1)</script> ::warning::pwned`` and a
detail with a Markdown link, an image, a code span and an ``<img>`` tag; an export whose lane
ids, binding and principal carry backticks, pipes, HTML, newlines and ``@mentions``. GitHub
renders the summary as Markdown with HTML; the summary is rendered here with markdown-it-py
(CommonMark with HTML and GFM tables, as GitHub does) and must hold no element but agentreview's
own (its code spans hold the reviewer's text), no broken table, and no line a runner would take
as a workflow command, while the text reads the same. Read raw it is readable too: names
(lane ids, bindings, principals, emails) appear as written, never as character references.
``test_the_oracle_sees_an_unescaped_summary`` shows the rendering check catches the injection
when the text is not neutralized.
"""

from __future__ import annotations

import html as htmllib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from report_helpers import HOSTILE_DETAIL, HOSTILE_TITLE, GateRepo, git

from agentreview.report import summary as summary_mod
from agentreview.report.markdown import md_word, one_line
from agentreview.report.neutral import neutralize
from agentreview.report.summary import run_summary, verify_summary

COMMAND = re.compile(r"^\s*::", re.MULTILINE)
# The elements agentreview's own Markdown makes; any other one came from someone else's text.
OWN = {"h3", "p", "strong", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "code"}
HOSTILE_NAMES = ["x`` `y", "a|b|c", "<b>bold</b>", "two\nlines", "@octocat", "cc @octocat", "www.evil.example",
                 "[l](https://evil.example)", "**em**", "_u_", "\\|", "```", "::warning::w", "a\u202eb"]


def render(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def injected(html: str) -> list[str]:
    """Elements in the rendered HTML that only someone else's text could have made."""
    return [tag for tag in re.findall(r"</?([A-Za-z][\w-]*)", html) if tag.lower() not in OWN]


def cells(html: str) -> list[str]:
    """The text of each table cell (tags removed, references read back)."""
    return [htmllib.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td>(.*?)</td>", html, re.S)]


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
    assert not COMMAND.search(text) and "&#" not in text
    # read raw, the reviewer's text is as written, in a code span; rendered, it is text
    assert f"`{HOSTILE_TITLE}`" in text
    html = render(text)
    assert injected(html) == [] and "<script>" not in html, html
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
    assert out.read_text().startswith("### agentreview verify: ❌ NOT verified (not_found)")


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


def test_md_word_keeps_names_as_written_and_puts_other_text_in_a_code_span() -> None:
    for name in ("unit-tests", "full", "t@example.com", "dev@example.test", "3f61166796", "review_pr", "a/b.py"):
        assert md_word(name) == name
    for text in HOSTILE_NAMES:
        out = md_word(text, cell=True)
        assert out.startswith("`") and "\n" not in out, (text, out)


@pytest.mark.parametrize("text", [*HOSTILE_NAMES, HOSTILE_TITLE, HOSTILE_DETAIL])
def test_hostile_text_in_a_table_cell_and_a_list_item_is_inert(text: str) -> None:
    html = render(f"| a | b |\n|---|---|\n| {md_word(text, cell=True)} | z |\n\n- **high** {md_word(text)}\n")
    assert injected(html) == [], html
    assert cells(html) == [neutralize(one_line(text)), "z"]  # one cell, the same text, the next cell intact
    (item,) = re.findall(r"<li>(.*?)</li>", html, re.S)
    assert htmllib.unescape(re.sub(r"<[^>]+>", "", item)) == f"high {neutralize(one_line(text))}"
    assert "<code>" not in item or item.count("<code>") == 1  # at most the one span md_word made


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("`|<>[]()!*_~#\\&:@ \nabc/.-'\"")), max_size=40))
def test_any_text_stays_in_its_cell_and_reads_the_same(text: str) -> None:
    html = render(f"| a | b |\n|---|---|\n| {md_word(text, cell=True)} | z |\n")
    assert injected(html) == []
    assert cells(html) == [neutralize(one_line(text)), "z"]


def verify_summary_of(att: dict[str, Any], principal: str) -> str:
    report = {"ok": True, "reason": "verified", "principal": principal, "checks": [
        {"check": "rangeSha", "ok": True, "expected": "abc", "actual": "abc"}]}
    return verify_summary(report, att)


def test_a_hostile_export_cannot_break_the_verify_summary() -> None:
    lanes = [{"id": name, "kind": "agent", "blocking": True, "status": "fail", "durationMs": 1,
              "findings": [{"severity": "high", "title": name, "detail": name, "file": name, "line": 2}]}
             for name in HOSTILE_NAMES]
    att = {"verdict": "block", "reviewId": "r`v", "binding": "@octocat", "target": {"baseSha": "<b>", "headSha": "x|y"},
           "lanes": lanes}
    text = verify_summary_of(att, "a|b <i>@octocat</i>")
    html = render(text)
    assert injected(html) == [], html
    assert not COMMAND.search(text) and "&#" not in text
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    lane_rows = [row for row in rows if row.count("<td>") == 6]
    assert len(lane_rows) == len(HOSTILE_NAMES)  # every lane row keeps its six cells
    assert [cells(row)[0] for row in lane_rows] == [neutralize(one_line(name)) for name in HOSTILE_NAMES]


def test_the_summary_reads_raw_with_names_as_written() -> None:
    att = {"verdict": "block", "reviewId": "my-review", "binding": "full-ci", "target": {"baseSha": "a" * 40,
           "headSha": "b" * 40}, "lanes": [{"id": "unit-tests", "kind": "command", "blocking": True, "status": "fail",
                                          "durationMs": 1200, "findings": [{"severity": "high", "title": "tests fail",
                                                                            "detail": "", "file": "src/a_b.py",
                                                                            "line": 7}]}]}
    text = verify_summary_of(att, "t@example.com")
    assert "&#" not in text
    assert "review **my-review**, binding **full-ci**, range aaaaaaaaaa..bbbbbbbbbb, verdict **block**" in text
    assert "signature verified for **t@example.com**" in text
    assert "| unit-tests | command | blocking | fail | 1 | 1.2s |" in text
    assert "- **high** (unit-tests) src/a_b.py:7 — tests fail" in text


def test_findings_of_an_unverified_export_are_headed_unverified() -> None:
    att = {"verdict": "pass", "lanes": [{"id": "c", "kind": "agent", "blocking": True, "status": "pass",
                                         "findings": [{"severity": "low", "title": "t", "detail": ""}]}]}
    text = verify_summary({"ok": True, "reason": "verified", "principal": None, "checks": []}, att)
    assert "**Findings** (unverified: the attestation's signature did not verify against a trusted key)" in text


def test_the_oracle_sees_an_unescaped_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without md_word the same checks fail: the rendering check is real."""
    att = {"verdict": "block", "lanes": [{"id": "c", "kind": "agent", "blocking": True, "status": "fail",
                                         "durationMs": 1, "findings": [{"severity": "high", "title": HOSTILE_TITLE,
                                                                        "detail": HOSTILE_DETAIL}]}]}
    assert injected(render(run_summary(att, status="done"))) == []
    monkeypatch.setattr(summary_mod, "md_word", lambda value, limit=0, cell=False: str(value))
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
