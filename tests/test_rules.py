"""Cross-field rules 1–11 of AIP-62: one rejection per rule naming the field, plus binding resolution."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentreview.manifest.parse import ManifestError, parse_review
from agentreview.manifest.rules import finalize_bindings, resolve_binding, validate_reviewer_chain
from agentreview.model.errors import EXIT_ERROR, AgentreviewError, UsageError
from agentreview.model.manifest import AgentCheck, Binding, CommandCheck

HEAD = "kind: review\nid: demo\ntarget: git-range\n"
CHECKS = """checks:
  - id: lint
    kind: command
    run: make lint
  - id: gen
    kind: command
    run: make gen {base}
    effects: true
  - id: notes
    kind: command
    run: make notes
    blocking: false
  - id: review
    kind: agent
    preset: kimi
    rubric: ./r.md
"""


def parse(frontmatter: str):
    return parse_review(f"---\n{frontmatter}---\n".encode())


def rejected(frontmatter: str) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse(frontmatter)
    return info.value


def only(err: ManifestError, location: str):
    matches = [p for p in err.problems if p.location == location]
    assert matches, f"no problem at {location}: {err.render()}"
    return matches[0]


def test_valid_base_parses() -> None:
    parsed = parse(HEAD + CHECKS + "bindings:\n  local: {prepare: [gen], checks: [lint, notes, review]}\n")
    assert parsed.bindings["local"].prepare == ["gen"]


def test_rule1_check_ids_unique() -> None:
    err = rejected(HEAD + CHECKS + "  - id: lint\n    kind: command\n    run: again\n")
    problem = only(err, "checks[4].id")
    assert problem.message == "checks[] lists 'lint' more than once (first at checks[0])"
    assert problem.line == 21  # the file line of the repeated id


def test_rule1_uses_as_unique() -> None:
    uses = "uses:\n  - {pack: ./a, as: core}\n  - {pack: ./b, as: core}\nbindings:\n  b: {checks: [lint]}\n"
    err = rejected(HEAD + CHECKS + uses)
    assert "uses[] lists 'core' more than once" in only(err, "uses[1].as").message


def test_rule2_no_repeated_refs_in_prepare_or_checks() -> None:
    err = rejected(HEAD + CHECKS + "bindings:\n  local:\n    prepare: [gen, gen]\n    checks: [lint, review, lint]\n")
    assert only(err, "bindings.local.prepare[1]").message == "binding 'local' prepare lists 'gen' more than once"
    assert only(err, "bindings.local.checks[2]").message == "binding 'local' checks lists 'lint' more than once"


def test_rule3_only_declared_checks() -> None:
    err = rejected(HEAD + CHECKS + "bindings:\n  local:\n    prepare: [setup]\n    checks: [lint, typo]\n")
    assert "prepare references unknown check 'setup'" in only(err, "bindings.local.prepare[0]").message
    assert "checks references unknown check 'typo'" in only(err, "bindings.local.checks[1]").message


def test_rule4_prepare_entries_are_effects_checks() -> None:
    err = rejected(HEAD + CHECKS + "bindings:\n  local: {prepare: [lint], checks: [review]}\n")
    problem = only(err, "bindings.local.prepare[0]")
    assert "prepare lists 'lint', which is not an 'effects: true' check" in problem.message
    assert "effects: true" in problem.fix


def test_rule5_effects_check_never_a_lane() -> None:
    err = rejected(HEAD + CHECKS + "bindings:\n  local: {checks: [lint, gen]}\n")
    assert "checks lists 'gen', an 'effects: true' check" in only(err, "bindings.local.checks[1]").message


def test_rule6_every_binding_selects_a_blocking_check() -> None:
    err = rejected(HEAD + CHECKS + "bindings:\n  ok: {checks: [lint]}\n  quiet: {checks: [notes]}\n")
    problem = only(err, "bindings.quiet.checks")
    assert problem.message.startswith("binding 'quiet' selects no blocking check")
    assert len(err.problems) == 1


def test_rule6_applies_to_the_implied_binding() -> None:
    err = rejected(HEAD + "checks:\n  - {id: notes, kind: command, run: x, blocking: false}\n")
    assert "binding 'default' selects no blocking check" in str(err)


def test_rule7_implied_default_over_non_effects_checks_in_order() -> None:
    parsed = parse(HEAD + CHECKS)
    assert list(parsed.bindings) == ["default"]
    default = parsed.bindings["default"]
    assert default.checks == ["lint", "notes", "review"]
    assert default.prepare == []


def test_rule7_no_non_effects_check_is_an_error() -> None:
    err = rejected(HEAD + "checks:\n  - {id: gen, kind: command, run: x, effects: true}\n")
    assert "no bindings declared and no non-effects check to imply a 'default' binding" in only(err, "bindings").message


def test_rule8_uses_requires_explicit_bindings() -> None:
    err = rejected(HEAD + CHECKS + "uses:\n  - {pack: ./p, as: core}\n")
    assert "uses[] requires at least one explicit binding" in only(err, "bindings").message
    err = rejected(HEAD + CHECKS + "uses:\n  - {pack: ./p, as: core}\nbindings: {}\n")
    assert "uses[] requires at least one explicit binding" in only(err, "bindings").message


def test_rule9_namespaced_ref_needs_a_declared_as() -> None:
    base = HEAD + CHECKS + "uses:\n  - {pack: ./p, as: core}\n"
    parsed = parse(base + "bindings:\n  b: {checks: [core/anything, core/else]}\n")
    assert parsed.bindings["b"].checks == ["core/anything", "core/else"]  # existence is checked after resolution
    err = rejected(base + "bindings:\n  b: {checks: [lint, sec/x]}\n")
    assert "no uses[] entry declares namespace 'sec'" in only(err, "bindings.b.checks[1]").message


def test_rule9_without_uses_a_namespaced_ref_is_unknown() -> None:
    err = rejected(HEAD + CHECKS + "bindings:\n  b: {checks: [lint, core/x]}\n")
    assert "unknown check 'core/x'" in only(err, "bindings.b.checks[1]").message


def test_local_refs_are_checked_at_parse_time_even_with_uses() -> None:
    base = HEAD + CHECKS + "uses:\n  - {pack: ./p, as: core}\n"
    err = rejected(base + "bindings:\n  b: {prepare: [lint], checks: [core/x, gen, nope]}\n")
    assert {p.location for p in err.problems} == {
        "bindings.b.prepare[0]",
        "bindings.b.checks[1]",
        "bindings.b.checks[2]",
    }
    err = rejected(base + "bindings:\n  b: {checks: [notes]}\n")
    assert "selects no blocking check" in only(err, "bindings.b.checks").message


def test_rule10_effects_on_agent_check() -> None:
    err = rejected(HEAD + CHECKS + "    effects: true\n")
    problem = only(err, "checks[3].effects")
    assert problem.message == "'effects: true' is only supported on command checks"


def test_rule11_unbound_placeholder() -> None:
    err = rejected(HEAD + CHECKS.replace("run: make lint", "run: make lint {target}"))
    problem = only(err, "checks[0].run")
    assert "uses placeholder {target}, which is not bound" in problem.message
    assert "{{target}}" in problem.fix


def test_rule11_head_in_a_prepare_check() -> None:
    err = rejected(HEAD + CHECKS.replace("run: make gen {base}", "run: make gen {head}"))
    assert "uses {head}, which is not bound yet" in only(err, "checks[1].run").message


def test_rule11_checks_unselected_checks_too() -> None:
    text = HEAD + CHECKS + "  - {id: spare, kind: command, run: 'x {oops}'}\nbindings:\n  b: {checks: [lint]}\n"
    assert "{oops}" in only(rejected(text), "checks[4].run").message


def test_reviewer_chain_in_manifest() -> None:
    err = rejected(HEAD + CHECKS + "    fallbackPresets: [codex, kimi, codex]\n")
    messages = [p.message for p in err.problems if p.location == "checks[3].fallbackPresets"]
    assert messages == [
        "fallbackPresets lists 'kimi', which is already the primary preset",
        "fallbackPresets lists 'codex' more than once",
    ]


def test_reviewer_chain_on_uses_and_overrides() -> None:
    uses = (
        "uses:\n  - pack: ./p\n    as: core\n    preset: kimi\n    fallbackPresets: [kimi]\n"
        "    overrides:\n      sec: {preset: codex, fallbackPresets: [codex]}\n"
        "bindings:\n  b: {checks: [lint]}\n"
    )
    err = rejected(HEAD + CHECKS + uses)
    assert only(err, "uses[0].fallbackPresets")
    assert only(err, "uses[0].overrides.sec.fallbackPresets")


def test_validate_reviewer_chain_direct() -> None:
    assert validate_reviewer_chain("x", "a", ["b", "c"]) == []
    assert len(validate_reviewer_chain("x", None, ["b", "b"])) == 1
    assert validate_reviewer_chain("label", "a", ["a"])[0].location == "label"


def test_a_malformed_check_does_not_cascade() -> None:
    text = (
        HEAD
        + CHECKS.replace("run: make lint", "run: make lint\n    timeoutMs: -1")
        + "bindings:\n  b: {checks: [lint]}\n"
    )
    err = rejected(text)
    assert [p.location for p in err.problems] == ["checks[0].timeoutMs"]


# --------------------------------------------------------------------------- finalize_bindings


def _cmd(cid: str, **kw) -> CommandCheck:
    return replace(CommandCheck(id="x", kind="command", run=kw.pop("run", "true"), **kw), id=cid)


def test_finalize_bindings_over_merged_checks() -> None:
    agent = replace(AgentCheck(id="c", kind="agent", preset="p", rubric="r.md"), id="core/c")
    checks = [_cmd("lint"), agent, _cmd("core/run", run="x {head}")]
    final = finalize_bindings(checks, {"b": Binding(checks=["lint", "core/c", "core/run"])})
    assert list(final) == ["b"]


def test_finalize_bindings_reports_every_problem() -> None:
    checks = [_cmd("lint", blocking=False), _cmd("core/run", run="x {nope}")]
    with pytest.raises(ManifestError) as info:
        finalize_bindings(checks, {"b": Binding(checks=["lint", "core/gone", "core/run"])})
    messages = [p.message for p in info.value.problems]
    assert any("unknown check 'core/gone'" in m for m in messages)
    assert any("{nope}" in m for m in messages)
    assert len(messages) == 2  # core/run is blocking, so rule 6 holds


def test_finalize_bindings_implies_default() -> None:
    final = finalize_bindings([_cmd("a"), _cmd("g", effects=True), _cmd("b", blocking=False)], None)
    assert final["default"].checks == ["a", "b"]


# --------------------------------------------------------------------------- resolve_binding


BINDINGS = {"local": Binding(checks=["a"]), "ci": Binding(checks=["a"])}


def test_resolve_named() -> None:
    assert resolve_binding("demo", BINDINGS, "ci")[0] == "ci"


def test_resolve_sole_binding() -> None:
    assert resolve_binding("demo", {"only": BINDINGS["ci"]}, None)[0] == "only"


def test_resolve_default_among_several() -> None:
    assert resolve_binding("demo", {**BINDINGS, "default": BINDINGS["ci"]}, None)[0] == "default"


def test_resolve_ambiguous_could_not_run() -> None:
    with pytest.raises(AgentreviewError) as info:
        resolve_binding("demo", BINDINGS, None)
    assert str(info.value).startswith("review 'demo' declares several bindings (local, ci) — name one")
    assert info.value.exit_code == EXIT_ERROR and not isinstance(info.value, UsageError)


def test_resolve_unknown_could_not_run() -> None:
    """One exit code for an unknown binding: 3, as the reference exits for an error resolveBinding throws."""
    with pytest.raises(AgentreviewError, match="review 'demo' has no binding 'prod' — available: local, ci") as info:
        resolve_binding("demo", BINDINGS, "prod")
    assert info.value.exit_code == EXIT_ERROR and not isinstance(info.value, UsageError)
