"""docs/plugins.md documents every hook of agentreview/plugins/hookspecs.py with its exact signature."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentreview.model import contracts
from agentreview.plugins import hookspecs
from agentreview.plugins.registry import HOOKS

DOC = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
SECTION = re.compile(r"^### (agentreview_\w+)\n(.*?)(?=^### |^## |\Z)", re.M | re.S)
PY_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def hookspec_functions() -> dict[str, Callable[..., Any]]:
    return {
        name: fn
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, "agentreview_spec")
    }


def doc_sections() -> dict[str, str]:
    return {match.group(1): match.group(2) for match in SECTION.finditer(DOC.read_text(encoding="utf-8"))}


def documented_def(name: str, section: str) -> Callable[..., Any]:
    """The function the doc's code block declares, with annotations kept as strings (as hookspecs.py has them)."""
    blocks = PY_BLOCK.findall(section)
    assert blocks, f"docs/plugins.md: section '### {name}' has no ```python block with its def line"
    def_lines = [line for line in blocks[0].splitlines() if line.startswith("def ")]
    assert len(def_lines) == 1, f"docs/plugins.md: section '### {name}' must show exactly one def line"
    namespace: dict[str, Any] = {}
    source = f"from __future__ import annotations\n{def_lines[0]}\n    ...\n"
    exec(compile(source, str(DOC), "exec"), namespace)
    return namespace[name]


def test_there_are_four_hooks_and_the_plugin_manager_knows_them_all() -> None:
    assert set(hookspec_functions()) == set(HOOKS)
    assert len(HOOKS) == 4


def test_every_hook_has_a_section_and_no_section_names_a_missing_hook() -> None:
    specs, sections = set(hookspec_functions()), set(doc_sections())
    assert not specs - sections, f"docs/plugins.md lacks '### <hook>' sections for {sorted(specs - sections)}"
    assert not sections - specs, f"docs/plugins.md documents hooks that do not exist: {sorted(sections - specs)}"


@pytest.mark.parametrize("name", sorted(hookspec_functions()))
def test_documented_signature_is_exact(name: str) -> None:
    spec = inspect.signature(hookspec_functions()[name])
    documented = inspect.signature(documented_def(name, doc_sections()[name]))
    assert documented == spec, (
        f"docs/plugins.md: '### {name}' shows {documented}, hookspecs.py has {spec}; "
        "copy the def line from hookspecs.py"
    )


@pytest.mark.parametrize("name", sorted(hookspec_functions()))
def test_section_names_the_contract_it_registers(name: str) -> None:
    _, key_attr = HOOKS[name]
    annotation = inspect.signature(hookspec_functions()[name]).parameters["register"].annotation
    contract = re.fullmatch(r"Callable\[\[(\w+)\], None\]", annotation)
    assert contract, f"hookspecs.py: {name}(register) is not annotated Callable[[<Contract>], None]"
    section = doc_sections()[name]
    assert f"`{contract.group(1)}`" in section
    assert f"`{key_attr}: str`" in section, f"docs/plugins.md: '### {name}' must document the key `{key_attr}: str`"


def test_every_contract_name_the_doc_mentions_exists() -> None:
    text = DOC.read_text(encoding="utf-8").split("\n## The hooks\n", 1)[1]
    candidates = set(re.findall(r"`([A-Z][A-Za-z]+)(?:\.\w+)?(?:\(|`)", text))
    missing = sorted(name for name in candidates if not hasattr(contracts, name))
    # CommandCheck and AgentCheck are manifest models, reached through LaneRequest.check.
    assert missing == ["AgentCheck", "CommandCheck"], f"docs/plugins.md names unknown contract objects: {missing}"


def test_documented_protocol_members_exist() -> None:
    sections = doc_sections()
    protocols = {
        "agentreview_register_lane_executors": (contracts.LaneExecutor, ["run_lane"]),
        "agentreview_register_pack_loaders": (contracts.PackLoader, ["load"]),
        "agentreview_register_reviewer_providers": (contracts.ReviewerProvider, ["status", "review"]),
        "agentreview_register_signers": (contracts.Signer, ["sign", "verify", "key_info"]),
    }
    for hook, (protocol, methods) in protocols.items():
        for method in methods:
            assert f"`{method}(" in sections[hook], f"docs/plugins.md: '### {hook}' does not document {method}()"
            params = list(inspect.signature(getattr(protocol, method)).parameters)[1:]
            for param in params:
                assert f"{param}: " in sections[hook] or f"{param})" in sections[hook], (
                    f"docs/plugins.md: '### {hook}' does not show parameter '{param}' of {method}()"
                )
