"""Verdict files the reference host reads are read here too, byte for byte (docs/concepts.md,
"Where agentreview is stricter or looser"); what stays refused is refused for a stated reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentreview_agent.verdict import VerdictError, read_verdict

FINDING = b'{"severity": "high", "title": "SQL injection", "file": "src/db.py", "line": %s}'


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "correctness.verdict.json"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("spelling", "line"), [(b"3", 3), (b"3.0", 3), (b"1e1", 10), (b"1E1", 10), (b"2.5e1", 25)])
def test_an_integral_line_in_any_spelling_is_a_whole_number(tmp_path: Path, spelling: bytes, line: int) -> None:
    """JSON.parse reads 3.0 and 1e1 as the numbers 3 and 10; so does this reader, and keeps an int."""
    verdict = read_verdict(write(tmp_path, b'{"findings": [' + FINDING % spelling + b"]}"))
    (finding,) = verdict.findings
    assert finding.line == line and type(finding.line) is int
    assert (finding.severity, finding.file) == ("high", "src/db.py")


@pytest.mark.parametrize("spelling", [b"3.5", b"0", b"-1", b"0.0", b"true", b'"3"', b"1e400", b"null"])
def test_a_line_that_is_not_a_positive_whole_number_skips_the_lane(tmp_path: Path, spelling: bytes) -> None:
    with pytest.raises(VerdictError, match=r"findings\.0\.line: must be a positive integer"):
        read_verdict(write(tmp_path, b'{"findings": [' + FINDING % spelling + b"]}"))


def test_a_leading_zero_line_is_not_json(tmp_path: Path) -> None:
    """``010`` is refused on this path too: JSON has no leading-zero numbers, on either host."""
    with pytest.raises(VerdictError, match="verdict file is not valid JSON"):
        read_verdict(write(tmp_path, b'{"findings": [' + FINDING % b"010" + b"]}"))


@pytest.mark.parametrize(
    "data",
    [
        b'\xef\xbb\xbf{"findings": []}',
        b'\xef\xbb\xbf  \n{"findings": []}\n',
        b'\xef\xbb\xbf```json\n{"findings": []}\n```\n',
    ],
)
def test_a_leading_bom_is_read_as_the_reference_reads_it(tmp_path: Path, data: bytes) -> None:
    """JavaScript's trim removes a BOM before JSON.parse; the lane reports instead of being skipped."""
    verdict = read_verdict(write(tmp_path, data))
    assert verdict.findings == ()


def test_a_bom_with_findings_keeps_them(tmp_path: Path) -> None:
    verdict = read_verdict(write(tmp_path, b'\xef\xbb\xbf{"findings": [' + FINDING % b"7.0" + b"]}"))
    assert [(f.title, f.line) for f in verdict.findings] == [("SQL injection", 7)]


def test_a_bom_in_the_middle_is_still_not_json(tmp_path: Path) -> None:
    with pytest.raises(VerdictError, match="not valid JSON"):
        read_verdict(write(tmp_path, b'{"findings": \xef\xbb\xbf[]}'))


def test_duplicate_keys_stay_refused(tmp_path: Path) -> None:
    """Stricter than the reference (JSON.parse keeps the last): two readers must never disagree
    about which findings a verdict holds, so a verdict that says it twice is refused."""
    data = b'{"findings": [' + FINDING % b"3" + b'], "findings": []}'
    with pytest.raises(VerdictError, match="duplicate key 'findings'"):
        read_verdict(write(tmp_path, data))
