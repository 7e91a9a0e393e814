"""Placeholders: the regex table of reference-notes 2.3, substitution, and the compile-time rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentreview.manifest.placeholders import (
    PlaceholderError,
    compile_checks,
    host_values,
    placeholders_in,
    substitute,
)
from agentreview.model.manifest import AgentCheck, Binding, CommandCheck
from agentreview.packs.resolve import ResolvedCheck

SHA = "a" * 40
VALUES = {"base": SHA, "head": "b" * 40, "changed": f"'[{SHA}]'"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("git diff {base}..{head}", f"git diff {SHA}..{'b' * 40}"),
        ("turbo --filter={changed}", f"turbo --filter='[{SHA}]'"),
        ("turbo --filter=...{changed}", f"turbo --filter=...'[{SHA}]'"),
        ("echo {{base}}", "echo {base}"),
        ("echo {{unbound-name}}", "echo {unbound-name}"),
        ("echo ${base}", "echo ${base}"),
        ("echo ${HOME} $HOME", "echo ${HOME} $HOME"),
        ("echo { base }", "echo { base }"),
        ("echo {a,b}", "echo {a,b}"),
        ("echo {1x}", "echo {1x}"),
        ("echo {}", "echo {}"),
        ("awk '{print $1}'", "awk '{print $1}'"),
        ("echo $ {base}", f"echo $ {SHA}"),
        ("echo x{base}y", f"echo x{SHA}y"),
    ],
)
def test_substitution_table(text: str, expected: str) -> None:
    assert substitute(text, VALUES, label="lane 'x'") == expected


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("{base} {head} {changed}", {"base", "head", "changed"}),
        ("{{base}} ${head} {a,b} {1x} { base }", set()),
        ("{Foo_bar-1}", {"Foo_bar-1"}),
        ("{{x}}{y}", {"y"}),
    ],
)
def test_placeholders_in(text: str, names: set[str]) -> None:
    assert placeholders_in(text) == names


def test_unbound_is_an_error_never_literal() -> None:
    with pytest.raises(PlaceholderError) as info:
        substitute("echo {base} {nope}", {"base": SHA}, label="check 'lint'")
    assert str(info.value) == "check 'lint': placeholder '{nope}' has no value — bound placeholders: {base}"


def test_unbound_without_any_binding_has_no_tail() -> None:
    with pytest.raises(PlaceholderError) as info:
        substitute("echo {base}", {}, label="prepare 'gen'")
    assert str(info.value) == "prepare 'gen': placeholder '{base}' has no value"


def test_values_are_not_expanded_again() -> None:
    assert substitute("echo {base}", {"base": "{head}"}, label="x") == "echo {head}"


def test_host_values_quote_changed() -> None:
    assert host_values(SHA) == {"base": SHA, "changed": f"'[{SHA}]'"}


def _cmd(cid: str, run: str, effects: bool = False) -> CommandCheck:
    return CommandCheck(id=cid, kind="command", run=run, effects=effects)


def test_compile_head_in_prepare_is_an_error() -> None:
    checks = {"gen": _cmd("gen", "gen --since {head}", effects=True), "t": _cmd("t", "test {head}")}
    problems = compile_checks(Binding(prepare=["gen"], checks=["t"]), checks, binding_name="local")
    assert len(problems) == 1
    assert problems[0].location == "bindings.local.prepare[0]"
    assert "prepare check 'gen' uses {head}, which is not bound yet" in problems[0].message


def test_compile_unknown_name_in_a_lane() -> None:
    checks = {"t": _cmd("t", "test {base} {target}")}
    problems = compile_checks(Binding(checks=["t"]), checks, binding_name="ci")
    assert [p.location for p in problems] == ["bindings.ci.checks[0]"]
    assert (
        problems[0].message
        == "check 't' uses placeholder {target}, which is not bound — bound: {base}, {changed}, {head}"
    )


def test_compile_accepts_bound_names_and_skips_agents_and_unknown_refs() -> None:
    agent = AgentCheck(id="a", kind="agent", preset="p", rubric="r.md")
    checks = {
        "gen": _cmd("gen", "gen {base} {changed} {{head}}", effects=True),
        "t": _cmd("t", "t {base} {head} {changed}"),
        "a": agent,
        "core/w": ResolvedCheck(check=replace(_cmd("w", "w {head}"), id="core/w"), rubric_base=Path(".")),
    }
    binding = Binding(prepare=["gen"], checks=["t", "a", "core/w", "core/missing"])
    assert compile_checks(binding, checks) == []


def test_compile_sees_through_resolved_checks() -> None:
    wrapped = ResolvedCheck(check=replace(_cmd("w", "w {oops}"), id="core/w"), rubric_base=Path("."))
    problems = compile_checks(Binding(checks=["core/w"]), {"core/w": wrapped})
    assert len(problems) == 1 and "{oops}" in problems[0].message


def test_host_vars_are_configurable() -> None:
    checks = {"gen": _cmd("gen", "gen {base} {changed}", effects=True)}
    problems = compile_checks(Binding(prepare=["gen"], checks=["gen"]), checks, host_vars=("base",))
    assert any("{changed}" in p.message for p in problems)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="{}$ab1-_ ,", max_size=30))
def test_substitute_fails_exactly_when_a_placeholder_is_unbound(text: str) -> None:
    names = placeholders_in(text)
    if names:
        with pytest.raises(PlaceholderError):
            substitute(text, {}, label="x")
    else:
        out = substitute(text, {}, label="x")
        assert placeholders_in(out) == set() or "{{" in text
