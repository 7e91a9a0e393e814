"""docs/security.md names, for every attack, the test that performs it: each named test must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "security.md"
# `tests/x.py::name`, or `::name` after one (same file), or `tests/x.py` (a whole file), or a bare
# `test_name` inside a parenthesised list right after a file.
REF = re.compile(r"`((?:tests|plugins/[\w-]+/tests)/[\w/]+\.py)?(?:::(\w+))?`")


def referenced() -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    current: str | None = None
    for paragraph in DOC.read_text(encoding="utf-8").split("\n- "):
        current = None
        for match in REF.finditer(paragraph):
            path, name = match.groups()
            if path:
                current = path
            if current and (path or name):
                found.append((current, name))
        if current:
            found += [(current, bare) for bare in re.findall(r"`(test_\w+)`", paragraph)]
    return found


def test_every_test_the_security_page_names_exists() -> None:
    refs = referenced()
    assert len(refs) >= 40
    missing = []
    for path, name in refs:
        file = ROOT / path
        if not file.is_file():
            missing.append(path)
        elif name and not re.search(rf"^(?:async )?def {name}\(", file.read_text(encoding="utf-8"), re.M):
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"
