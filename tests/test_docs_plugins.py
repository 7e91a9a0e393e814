"""docs/plugins.md stays true: its hook reference is the generated one, its examples import real API names."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import agentreview.api as api
from agentreview.plugins import hookspecs, reference
from agentreview.plugins.registry import HOOKS

DOC = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
PY_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def page() -> str:
    return DOC.read_text(encoding="utf-8")


def test_the_hook_reference_is_the_generated_one() -> None:
    assert reference.splice(page(), reference.render()) == page(), (
        "docs/plugins.md: the hook reference is stale — run `python -m agentreview.plugins.reference docs/plugins.md`"
    )


def test_there_are_four_hooks_the_plugin_manager_and_the_reference_all_know() -> None:
    specs = reference.hookspec_functions()
    assert set(specs) == set(HOOKS)
    assert len(specs) == 4
    for name in specs:
        assert f"\n### {name}\n" in page()


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_reference_shows_the_exact_signature(name: str) -> None:
    fn = getattr(hookspecs, name)
    shown = re.search(rf"^def {name}(\(.*\)) -> None: \.\.\.$", page(), re.M)
    assert shown, f"docs/plugins.md: no def line for {name}"
    namespace: dict[str, object] = {}
    exec(compile(f"from __future__ import annotations\ndef {name}{shown.group(1)} -> None: ...\n", "doc", "exec"),
         namespace)
    assert inspect.signature(namespace[name]) == inspect.signature(fn)  # type: ignore[arg-type]


def test_every_contract_the_reference_names_is_public() -> None:
    text = page().split(reference.START, 1)[1]
    names = set(re.findall(r"`{1,2}([A-Z][A-Za-z]+)(?:\.\w+)?(?:\(|`)", text))
    missing = sorted(n for n in names if not hasattr(api, n))
    assert not missing, f"docs/plugins.md names contract objects agentreview.api does not export: {missing}"


def test_every_python_example_parses_and_imports_only_public_names() -> None:
    blocks = PY_BLOCK.findall(page().split(reference.START, 1)[0])
    assert len(blocks) >= 3  # a provider, a signer, a check kind
    for block in blocks:
        tree = ast.parse(block)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("agentreview"):
                assert node.module == "agentreview.api", f"docs/plugins.md example imports {node.module}"
                unknown = [a.name for a in node.names if a.name not in api.__all__]
                assert not unknown, f"docs/plugins.md example imports names agentreview.api lacks: {unknown}"


def test_the_provider_tutorial_is_about_forty_lines() -> None:
    provider = next(b for b in PY_BLOCK.findall(page()) if "agentreview_register_reviewer_providers" in b)
    code = [line for line in provider.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert len(code) <= 45, len(code)
