"""docs/concepts.md "Where agentreview is stricter or looser": every row names a test, and each named test exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "concepts.md"
HEADING = "### Where agentreview is stricter or looser"
# `tests/x.py::name`, or `::name` after one in the same cell (same file)
REF = re.compile(r"`((?:tests|plugins/[\w-]+/tests)/[\w/]+\.py)?::(\w+)`")


def rows() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    return table[2:]  # past the header and its rule


def test_every_row_names_a_test_that_exists() -> None:
    table = rows()
    assert len(table) >= 20
    missing = []
    for row in table:
        refs, current = [], None
        for path, name in REF.findall(row.rsplit("|", 2)[1]):
            current = path or current
            assert current, f"'::{name}' names no file before it: {row}"
            refs.append((current, name))
        assert refs, f"a row of the table names no test: {row}"
        for path, name in refs:
            file = ROOT / path
            if not file.is_file() or not re.search(rf"^def {name}\(", file.read_text(encoding="utf-8"), re.M):
                missing.append(f"{path}::{name}")
    assert not missing, f"docs/concepts.md names tests that do not exist: {missing}"


def test_the_one_day_timeout_cap_is_in_the_table_with_its_reason() -> None:
    (row,) = [row for row in rows() if "86400000" in row]
    assert "unit slip" in row and "stricter" in row
