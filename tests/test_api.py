"""agentreview.api is the plugin API: complete, cheap to import, versioned, and the only core module plugins use."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentreview.api as api
import agentreview.model.contracts as contracts

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_PACKAGES = sorted(ROOT.glob("plugins/*/agentreview_*")) + sorted(ROOT.glob("docs/examples/*/agentreview_*"))


def test_all_lists_exactly_the_exported_names() -> None:
    assert len(api.__all__) == len(set(api.__all__))
    assert set(api.__all__) == set(api._EXPORTS) | {"API_VERSION", "ApiVersionError", "require"}


@pytest.mark.parametrize(("module", "lazy"), [(api, api._EXPORTS), (contracts, contracts._HOME)], ids=str)
def test_the_type_checkers_imports_name_exactly_the_lazy_names(module: Any, lazy: dict[str, str]) -> None:
    tree = ast.parse(Path(module.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = [alias.name for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names]
    assert sorted(imported) == sorted(lazy)


@pytest.mark.parametrize("name", sorted(api._EXPORTS))
def test_every_exported_name_resolves_to_its_defining_module(name: str) -> None:
    import importlib

    value = getattr(api, name)
    assert value is getattr(importlib.import_module(api._EXPORTS[name]), name)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        api.nope  # noqa: B018


def test_importing_the_api_loads_nothing_heavy() -> None:
    code = (
        "import sys, agentreview.api as a; a.hookimpl; a.LaneRequest; a.read_regular_file;"
        "heavy = [m for m in ('pydantic', 'typer', 'rich', 'yaml', 'sqlite3', 'git') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_require_accepts_this_and_older_minors_and_refuses_the_rest() -> None:
    major, minor = (int(x) for x in api.API_VERSION.split("."))
    api.require(f"{major}.0")
    api.require(api.API_VERSION)
    with pytest.raises(api.ApiVersionError, match="needs agentreview plugin API"):
        api.require(f"{major}.{minor + 1}")
    with pytest.raises(api.ApiVersionError):
        api.require(f"{major + 1}.0")


def _core_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "agentreview" else [f"agentreview.{a.name}" for a in node.names]
            found += [n for n in names if n == "agentreview" or n.startswith("agentreview.")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "agentreview" or a.name.startswith("agentreview.")]
    return found


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda p: p.name)
def test_plugins_import_nothing_from_the_core_but_the_api(package: Path) -> None:
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in package.rglob("*.py")
        for name in _core_imports(path)
        if name != "agentreview.api" and not name.startswith("agentreview.api.")
    }
    assert not offending, sorted(offending)
