"""Check kinds contributed by plugins: parsed with the plugin's model, held to the cross-field rules, folded
by the core, recorded in the attestation; an unprovided kind or an unusable model is a located manifest error.

The plugins here are in-process (``load_registry(load_entry_points=False, extra_plugins=...)``); the installed
example distribution is exercised end to end in tests/test_checkkind_example.py.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from agentreview import hookimpl
from agentreview.api import CheckModel, LaneOutcome, ReportedFinding
from agentreview.manifest.parse import ManifestError, parse_pack, parse_review
from agentreview.model.attestation import Attestation, LaneResult
from agentreview.model.lanes import to_lane_result
from agentreview.plugins.registry import Registry, load_registry


class GaugeCheck(CheckModel):
    kind: Literal["gauge"]
    target: str
    limit: int = 10


class StrictGaugeCheck(CheckModel):
    kind: Literal["strict-gauge"]
    blockOn: Literal["high", "medium", "low"] = "high"


class GaugeExecutor:
    """A real small kind: a finding when the ``target`` file at the checkout is larger than ``limit`` bytes."""

    kind = "gauge"
    check_model = GaugeCheck

    def run_lane(self, request: Any) -> LaneOutcome:
        check = request.check
        size = (request.repo_root / check.target).stat().st_size
        findings = [ReportedFinding("high", f"{check.target} is {size} bytes")] if size > check.limit else []
        return LaneOutcome.reported(findings, summary=f"{size} bytes")


class _Executor:
    def __init__(self, kind: str, check_model: Any = None) -> None:
        self.kind = kind
        if check_model is not None:
            self.check_model = check_model

    def run_lane(self, request: Any) -> LaneOutcome:
        return LaneOutcome.exited(0)


def registry_with(*executors: _Executor) -> Registry:
    class Plugin:
        @staticmethod
        @hookimpl
        def agentreview_register_lane_executors(register: Any) -> None:
            for executor in executors:
                register(executor)

    return load_registry(load_entry_points=False, extra_plugins=[("kinds-test", Plugin())])


GAUGE = registry_with(_Executor("gauge", GaugeCheck), _Executor("strict-gauge", StrictGaugeCheck))


def review(frontmatter: str) -> bytes:
    return f"---\nkind: review\nid: demo\ntarget: git-range\n{frontmatter}---\n".encode()


CHECKS = """checks:
  - id: size
    kind: gauge
    target: dist/app.js
  - id: lint
    kind: command
    run: make lint
"""


def problems_of(source: bytes, registry: Registry | None = GAUGE) -> list[Any]:
    with pytest.raises(ManifestError) as info:
        parse_review(source, registry=registry)
    return info.value.problems


# --------------------------------------------------------------------------- parsing


def test_a_plugin_kind_is_validated_with_the_plugin_model() -> None:
    parsed = parse_review(review(CHECKS), registry=GAUGE)
    size = parsed.manifest.checks[0]
    assert isinstance(size, GaugeCheck)
    assert (size.target, size.limit, size.blocking, size.timeoutMs) == ("dist/app.js", 10, True, 600_000)
    assert parsed.bindings["default"].checks == ["size", "lint"]
    assert parsed.registry is GAUGE


def test_schema_errors_in_a_plugin_check_are_located_and_translated() -> None:
    source = review(
        "checks:\n  - id: size\n    kind: gauge\n    target: 5\n    limit: '3'\n    colour: red\n"
        "  - id: other\n    kind: gauge\n"
    )
    by_location = {p.location: p for p in problems_of(source)}
    assert by_location["checks[0].target"].message == "must be a string, got int 5"
    assert by_location["checks[0].target"].line == 8
    assert by_location["checks[0].limit"].message == "must be a whole number, got string '3'"
    colour = by_location["checks[0].colour"]
    assert colour.message == "unknown key 'colour'" and colour.line == 10
    assert "allowed here: id, kind, description, blocking, timeoutMs, target, limit" in colour.fix
    assert by_location["checks[1].target"].message == "is required but missing"


def test_a_kind_no_plugin_provides_names_the_kind_and_what_to_install() -> None:
    (problem,) = problems_of(review(CHECKS.replace("kind: gauge", "kind: notebook")))
    assert problem.location == "checks[0]" and problem.line == 6
    assert problem.message == (
        "check kind 'notebook' is not provided by any installed plugin — install the plugin that provides it "
        "(agentreview plugins lists what is installed)"
    )
    assert "use kind: command or kind: agent" in problem.fix


BUILTIN = "checks:\n  - id: lint\n    kind: command\n    run: make lint\n"


def test_built_in_kinds_never_load_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentreview.plugins.registry as registry_module

    def refuse(**_: Any) -> Registry:
        raise AssertionError("plugins were loaded for a manifest of built-in kinds")

    monkeypatch.setattr(registry_module, "load_registry", refuse)
    assert parse_review(review(BUILTIN)).registry is None


def test_check_of_built_in_kinds_does_not_import_the_plugin_machinery(git_repo) -> None:
    root = git_repo(files={"REVIEW.md": review(BUILTIN).decode()})
    code = (
        "import sys, contextlib, io; from agentreview.cli.entry import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): rc = main(['check', '--cwd', {str(root)!r}])\n"
        "print(rc, 'pluggy' in sys.modules, 'agentreview.plugins.registry' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["0", "False", "False"], proc.stderr


def test_a_plugin_kind_loads_the_installed_plugins_when_no_registry_is_given() -> None:
    # The installed plugins provide no 'gauge': the lookup happened, and said so.
    (problem,) = problems_of(review(CHECKS), registry=None)
    assert "check kind 'gauge' is not provided by any installed plugin" in problem.message


@pytest.mark.parametrize(
    ("executor", "fragment"),
    [
        (_Executor("gauge"), "declares no check_model"),
        (_Executor("gauge", dict), "is not a subclass of agentreview.api.CheckModel"),
        (_Executor("gauge", StrictGaugeCheck), "whose 'kind' is not Literal['gauge']"),
    ],
)
def test_an_unusable_check_model_is_a_located_error_naming_the_plugin(executor: _Executor, fragment: str) -> None:
    (problem,) = problems_of(review(CHECKS), registry=registry_with(executor))
    assert problem.location == "checks[0]"
    assert problem.message.startswith("check kind 'gauge' (plugin 'kinds-test') ") and fragment in problem.message
    assert "plugin" in problem.fix


def test_a_check_model_must_stay_closed_and_may_not_declare_effects() -> None:
    class Loose(CheckModel):
        model_config = ConfigDict(extra="allow")
        kind: Literal["gauge"]

    class Mutating(CheckModel):
        kind: Literal["gauge"]
        effects: bool = False

    (problem,) = problems_of(review(CHECKS), registry=registry_with(_Executor("gauge", Loose)))
    assert "not frozen, strict and closed to unknown keys" in problem.message
    (problem,) = problems_of(review(CHECKS), registry=registry_with(_Executor("gauge", Mutating)))
    assert "with 'effects'" in problem.message


def test_a_kind_name_that_is_not_an_id_is_refused() -> None:
    class Upper(CheckModel):
        kind: Literal["Gauge"]

    (problem,) = problems_of(review(CHECKS.replace("kind: gauge", "kind: Gauge")),
                             registry=registry_with(_Executor("Gauge", Upper)))
    assert "is not a usable kind name" in problem.message


def test_a_plugin_model_cannot_replace_a_built_in_kind() -> None:
    class FakeCommand(CheckModel):
        kind: Literal["command"]

    registry = registry_with(_Executor("command", FakeCommand))
    parsed = parse_review(review(BUILTIN), registry=registry)
    assert type(parsed.manifest.checks[0]).__name__ == "CommandCheck" and parsed.registry is registry
    assert problems_of(review("checks:\n  - id: lint\n    kind: command\n"), registry=registry)[0].location == (
        "checks[0].run"
    )


def test_a_non_string_kind_is_one_clear_problem() -> None:
    (problem,) = problems_of(review("checks:\n  - id: lint\n    kind: 5\n"))
    assert problem.message == "kind must be a string, got int 5"


# --------------------------------------------------------------------------- cross-field rules


def test_rules_treat_a_plugin_kind_like_any_check() -> None:
    source = review(
        CHECKS + "  - id: size\n    kind: gauge\n    target: x\n"
        "bindings:\n  ci:\n    prepare: [size]\n    checks: [lint, ghost]\n"
    )
    by_location = {p.location: p for p in problems_of(source)}
    assert "more than once" in by_location["checks[2].id"].message
    assert "not an 'effects: true' check" in by_location["bindings.ci.prepare[0]"].message
    assert "unknown check 'ghost'" in by_location["bindings.ci.checks[1]"].message


def test_a_plugin_check_can_be_the_one_blocking_lane_and_placeholders_are_not_its_business() -> None:
    source = review(
        "checks:\n  - id: size\n    kind: gauge\n    target: '{head}/{nope}'\n"
        "  - id: lint\n    kind: command\n    run: make lint\n    blocking: false\n"
        "bindings:\n  ci:\n    checks: [size, lint]\n"
    )
    parsed = parse_review(source, registry=GAUGE)
    assert parsed.bindings["ci"].checks == ["size", "lint"]
    advisory = source.replace(b"target: '{head}/{nope}'", b"target: x\n    blocking: false")
    assert "selects no blocking check" in problems_of(advisory)[0].message


def test_a_pack_cannot_declare_a_plugin_kind() -> None:
    pack = b"---\nkind: review-pack\nid: core\nversion: 1.0.0\nchecks:\n  - id: size\n    kind: gauge\n---\n"
    with pytest.raises(ManifestError) as info:
        parse_pack(pack)
    (problem,) = info.value.problems
    assert problem.location == "checks[0]" and "not a check kind a review pack may declare" in problem.message
    assert "consumer's REVIEW.md" in problem.fix


# --------------------------------------------------------------------------- folding and recording


def _gauge(**fields: Any) -> GaugeCheck:
    return GaugeCheck.model_validate({"id": "size", "kind": "gauge", "target": "x", **fields})


def test_an_exited_plugin_lane_passes_only_on_zero() -> None:
    passed = to_lane_result(_gauge(), LaneOutcome.exited(0), 5)
    assert (passed.kind, passed.status, passed.exitCode, passed.findings) == ("gauge", "pass", 0, ())
    failed = to_lane_result(_gauge(blocking=False), LaneOutcome.exited(2, "too big"), 5)
    assert (failed.status, failed.exitCode, failed.blocking) == ("fail", 2, False)
    assert failed.findings[0].title == "'size' exited with code 2" and failed.findings[0].detail == "too big"


def test_reported_findings_fail_a_plugin_lane_without_block_on() -> None:
    low = ReportedFinding(severity="low", title="a bit big", file="dist/app.js")
    assert to_lane_result(_gauge(), LaneOutcome.reported([], summary="fine"), 1).status == "pass"
    lane = to_lane_result(_gauge(), LaneOutcome.reported([low], summary="1 finding", session_id="s", preset="p"), 1)
    assert lane.status == "fail" and lane.summary == "1 finding"
    assert (lane.sessionId, lane.preset, lane.composedFrom) == (None, None, None)  # agent lane members only
    assert lane.findings[0].file == "dist/app.js"


def test_reported_findings_are_judged_by_block_on_when_the_model_has_one() -> None:
    check = StrictGaugeCheck.model_validate({"id": "s", "kind": "strict-gauge", "blockOn": "medium"})
    low = ReportedFinding(severity="low", title="nit")
    medium = ReportedFinding(severity="medium", title="real")
    assert to_lane_result(check, LaneOutcome.reported([low]), 1).status == "pass"
    assert to_lane_result(check, LaneOutcome.reported([low, medium]), 1).status == "fail"


def test_timeouts_and_skips_of_a_plugin_lane_are_recorded_as_such() -> None:
    assert to_lane_result(_gauge(), LaneOutcome.timeout("too slow"), 1).status == "timeout"
    skipped = to_lane_result(_gauge(), LaneOutcome.skipped("no target"), 1)
    assert (skipped.status, skipped.error) == ("skipped", "no target")


def test_the_attestation_records_a_plugin_kind_and_refuses_a_kind_that_is_not_an_id() -> None:
    lane = to_lane_result(_gauge(), LaneOutcome.exited(0), 1)
    att = Attestation.build(
        run_id="review-1", review_id="demo", manifest_sha="a" * 64, binding="default", repo_remote="local:/r",
        base_sha="1" * 40, head_sha="2" * 40, lanes=[lane], daemon="d",
    )  # fmt: skip
    again = Attestation.from_json(att.to_json_dict())
    assert again.lanes[0].kind == "gauge" and again.verdict == "pass"
    for bad in ("Gauge", "", "a" * 65, "two words"):
        with pytest.raises(ValueError):
            LaneResult.from_json({**lane.to_json_dict(), "kind": bad})


def test_a_pydantic_model_that_is_not_a_check_model_is_not_enough() -> None:
    class Plain(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
        id: str
        kind: Literal["gauge"]

    (problem,) = problems_of(review(CHECKS), registry=registry_with(_Executor("gauge", Plain)))
    assert "is not a subclass of agentreview.api.CheckModel" in problem.message


# --------------------------------------------------------------------------- run and verify in process


def test_run_and_verify_use_the_registry_they_are_given(git_repo) -> None:
    """The parse of run and verify validates a plugin kind with the caller's registry, not the installed plugins."""
    from agentreview.engine.options import RunOptions
    from agentreview.engine.run import run_review
    from agentreview.verify.gate import verify
    from agentreview.verify.result import VerifyOptions
    from conftest import git

    manifest = review(
        "checks:\n  - id: size\n    kind: gauge\n    target: app.js\n    limit: 8\nverdict:\n  exportDir: .reviews\n"
    ).decode().replace("target: git-range", "target: {kind: git-range, base: main}")
    root = git_repo(files={"REVIEW.md": manifest, "app.js": "x = 1\n", ".gitignore": ".reviews/\n"})
    registry = registry_with(GaugeExecutor())
    git(root, "checkout", "-q", "-b", "feature")
    (root / "app.js").write_text("x = 12\n")
    git(root, "commit", "-qam", "small change")
    result = run_review(RunOptions(cwd=root, export=True), registry=registry)
    assert result.status == "done" and result.verdict == "pass", result.error
    assert result.attestation is not None
    (lane,) = result.attestation.lanes
    assert (lane.kind, lane.status, lane.summary) == ("gauge", "pass", "7 bytes")
    assert verify(VerifyOptions(cwd=root, registry=registry)).exit_code == 0

    (root / "app.js").write_text("x = 123456789\n")
    git(root, "commit", "-qam", "big change")
    result = run_review(RunOptions(cwd=root, export=True), registry=registry)
    assert result.verdict == "block" and result.attestation is not None
    assert result.attestation.lanes[0].findings[0].title == "app.js is 14 bytes"
    assert verify(VerifyOptions(cwd=root, registry=registry, verdict="block")).exit_code == 0
