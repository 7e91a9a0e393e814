"""What the repository already runs, so REVIEW.md's command checks are the team's own.

Only files are read, nothing is executed: the repository is not yet trusted.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from agentreview.host.files import UnreadableFileError, read_regular_file
from agentreview.model.record import record

__all__ = ["DetectedCheck", "detect_checks", "read_text", "toml_of"]

_LIMIT = 1 << 20
# `npm init` writes this test script; running it only ever fails.
_NPM_PLACEHOLDER = re.compile(r"no test specified", re.IGNORECASE)
_MAKE_TEST = re.compile(r"^test\s*:(?!=)", re.MULTILINE)
_ESLINT_CONFIGS = (
    "eslint.config.js", "eslint.config.mjs", "eslint.config.cjs", "eslint.config.ts",
    ".eslintrc", ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.json", ".eslintrc.yml", ".eslintrc.yaml",
)  # fmt: skip


@record
class DetectedCheck:
    """One command check: its id in REVIEW.md, the shell command, why it was chosen (written into
    REVIEW.md, so nothing of this host), and what of this host it runs with (only shown)."""

    id: str
    run: str
    reason: str
    host: str = ""


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is absent, not a regular file, too large or not UTF-8."""
    try:
        return read_regular_file(path, limit=_LIMIT).decode("utf-8")
    except (UnreadableFileError, UnicodeDecodeError, OSError):
        return None


def toml_of(text: str | None) -> dict[str, Any]:
    """``text`` read as TOML; {} when there is none or it is not valid TOML."""
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def _mentions_pytest(pyproject: dict[str, Any], root: Path) -> bool:
    tool = pyproject.get("tool", {})
    if isinstance(tool, dict) and "pytest" in tool:
        return True
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    if "[tool:pytest]" in (read_text(root / "setup.cfg") or ""):
        return True
    project = pyproject.get("project", {})
    deps: list[Any] = []
    if isinstance(project, dict):
        deps += project.get("dependencies", []) or []
        for extra in (project.get("optional-dependencies", {}) or {}).values():
            deps += extra or []
    groups = pyproject.get("dependency-groups", {})
    if isinstance(groups, dict):
        for group in groups.values():
            deps += group or []
    return any(isinstance(d, str) and re.match(r"pytest\b(?![-_])", d.strip(), re.IGNORECASE) for d in deps)


def _python(root: Path) -> list[DetectedCheck]:
    pyproject = toml_of(read_text(root / "pyproject.toml"))
    tool = pyproject.get("tool", {}) if isinstance(pyproject.get("tool", {}), dict) else {}
    found: list[DetectedCheck] = []
    if (root / "tox.ini").is_file() or "tox" in tool:
        found.append(DetectedCheck("tox", "tox", "tox is configured (tox.ini or [tool.tox])"))
    elif (root / "noxfile.py").is_file():
        found.append(DetectedCheck("nox", "nox", "noxfile.py"))
    elif _mentions_pytest(pyproject, root):
        # `pytest`, not `python3 -m pytest`: a hook runner that puts its own interpreter first on
        # PATH (pre-commit's `language: python`) must still reach the project's pytest.
        found.append(DetectedCheck("pytest", "pytest -q", "pytest is configured or declared"))
    if "ruff" in tool or (root / "ruff.toml").is_file() or (root / ".ruff.toml").is_file():
        found.append(DetectedCheck("ruff", "ruff check .", "ruff is configured"))
    return found


def _node(root: Path) -> list[DetectedCheck]:
    text = read_text(root / "package.json")
    if text is None:
        return []
    try:
        package = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(package, dict):
        return []
    scripts = package.get("scripts") if isinstance(package.get("scripts"), dict) else {}
    manager = str(package.get("packageManager") or "").split("@")[0]
    if manager not in ("npm", "pnpm", "yarn"):
        manager = "pnpm" if (root / "pnpm-lock.yaml").is_file() else "yarn" if (root / "yarn.lock").is_file() else "npm"
    found: list[DetectedCheck] = []
    test = scripts.get("test") if scripts else None
    if isinstance(test, str) and test.strip() and not _NPM_PLACEHOLDER.search(test):
        found.append(DetectedCheck(f"{manager}-test", f"{manager} test", "package.json has a test script"))
    lint = scripts.get("lint") if scripts else None
    if isinstance(lint, str) and lint.strip():
        found.append(DetectedCheck("lint", f"{manager} run lint", "package.json has a lint script"))
    elif "eslintConfig" in package or any((root / name).is_file() for name in _ESLINT_CONFIGS):
        found.append(DetectedCheck("eslint", "npx --no-install eslint .", "eslint is configured"))
    return found


def detect_checks(root: Path) -> list[DetectedCheck]:
    """The command checks for ``root``, in a stable order (so a second ``init`` writes the same bytes).

    ``make test`` stands in for the language's test runner when the Makefile has it: running both would test twice.
    """
    makefile = next((root / n for n in ("GNUmakefile", "makefile", "Makefile") if (root / n).is_file()), None)
    make_test = makefile is not None and bool(_MAKE_TEST.search(read_text(makefile) or ""))
    found: list[DetectedCheck] = []
    if make_test:
        found.append(DetectedCheck("make-test", "make test", "the Makefile has a test target"))
    for check in [*_python(root), *_node(root)]:
        if make_test and check.id in ("pytest", "tox", "nox", "npm-test", "pnpm-test", "yarn-test"):
            continue
        found.append(check)
    if (root / "Cargo.toml").is_file() and not make_test:
        found.append(DetectedCheck("cargo-test", "cargo test", "Cargo.toml"))
    if (root / "go.mod").is_file() and not make_test:
        found.append(DetectedCheck("go-test", "go test ./...", "go.mod"))
    return found
