"""Imports at the top of their module, unless one defers a module for a reason docs/performance.md gives.

Every import inside a function in the core and the shipped plugins must (1) sit in a package the
"Imports kept inside functions" table of docs/performance.md lists, and (2) defer something: a fresh
interpreter that imports the enclosing module must not have loaded the deferred module (or name)
already, since such an import saves nothing and belongs at the top.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [*sorted((ROOT / "agentreview").rglob("*.py")), *sorted((ROOT / "plugins").glob("*/agentreview_*/**/*.py"))]

# A fresh interpreter: import the module, then say which of the deferred targets it loaded already.
PROBE = """
import importlib, json, sys
module, targets = sys.argv[1], json.loads(sys.argv[2])
importlib.import_module(module)
def loaded(target):
    base, _, name = target.partition(":")
    if not name:
        return base in sys.modules
    held = sys.modules.get(base)
    return held is not None and name in vars(held)  # vars, not hasattr: a module __getattr__ would load it
print(json.dumps([t for t in targets if loaded(t)]))
"""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "plugins":
        parts = parts[2:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def function_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of every import inside a function: ``module`` or ``module:name``."""
    found: list[tuple[int, str]] = []
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif inside and isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package[: len(package) - child.level + 1] + ([base] if base else []))
                found.extend((child.lineno, f"{base}:{alias.name}") for alias in child.names)
            visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def listed_packages() -> list[str]:
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    section = text.split("### Imports kept inside functions", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+/)` \|", section, flags=re.MULTILINE)


IMPORTS = {path: found for path in SOURCES if (found := function_imports(path))}


def test_the_table_lists_packages_that_exist() -> None:
    listed = listed_packages()
    assert listed, "docs/performance.md has no 'Imports kept inside functions' table"
    assert [p for p in listed if not (ROOT / p).is_dir()] == []


def test_every_function_level_import_is_in_a_listed_package() -> None:
    listed = listed_packages()
    unlisted = sorted(
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path, found in IMPORTS.items()
        for line, target in found
        if not any(f"{path.parent.relative_to(ROOT).as_posix()}/" == p for p in listed)
    )
    assert unlisted == [], "imports inside functions in a package docs/performance.md does not list"


@pytest.mark.parametrize("path", sorted(IMPORTS), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_function_level_import_defers_a_module_not_loaded_already(path: Path) -> None:
    by_target: dict[str, list[int]] = defaultdict(list)
    for line, target in IMPORTS[path]:
        by_target[target].append(line)
    proc = subprocess.run([sys.executable, "-c", PROBE, module_name(path), json.dumps(sorted(by_target))],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    saves_nothing = [f"{path.relative_to(ROOT)}:{line}: {t}" for t in json.loads(proc.stdout) for line in by_target[t]]
    assert saves_nothing == [], "these imports defer nothing: move them to the top of the module"
