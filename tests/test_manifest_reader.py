"""The manifest reader (model/reader over model/manifest's one declaration) against the committed JSON Schemas.

The oracle is ``jsonschema`` (draft 2020-12) on ``docs/schemas/review.schema.json`` and
``review-pack.schema.json``, with the ECMA-262 meaning of their patterns (``$`` is the end of the
text, ``\\d`` is [0-9]), an ``integer`` that is any integral number (``1000.0``, as JavaScript
reads it), and the one rule a schema cannot state (a pack lists each check id once). On valid
manifests and on mutations of them (missing and
unknown keys at every level, wrong types, boundary numbers, bad patterns, duplicate ids, bad kinds,
damaged bindings, uses and overrides, pack refs, an ``effects`` that equals a boolean without being
one: ``0``, ``-0.0``, ``"false"``), the reader accepts exactly what the oracle accepts; a parse
through the memo gives the same records or the same problems as a fresh one; and a manifest of
the built-in kinds, valid or not, is parsed in a fresh process without importing pydantic.

``AGENTREVIEW_TEST_EXAMPLES`` sets the examples per property (default 150, a few seconds).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import extend

from agentreview.manifest.parse import ManifestError, parse_pack, parse_review
from agentreview.model import manifest as m
from agentreview.model.numbers import whole_number
from agentreview.model.reader import Lit, Nullable, ReadError, read

EXAMPLES = int(os.environ.get("AGENTREVIEW_TEST_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

RECORDS = list(m.RECORDS)
MAX = m.MAX_TIMEOUT_MS
SHA = "0123456789abcdef0123456789abcdef01234567"


# --------------------------------------------------------------------------- literals are typed


def _specs(record: type) -> Iterator[tuple[str, Any]]:
    for f in dataclasses.fields(record):
        spec = f.metadata["spec"]
        yield f.name, spec.inner if isinstance(spec, Nullable) else spec


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_no_literal_takes_what_merely_equals_its_values(record: type) -> None:
    # 0 == 0.0 == False and 1 == True in Python: a literal must check its input's type too.
    for name, spec in _specs(record):
        if isinstance(spec, Lit):
            for value in spec.values:
                assert read(spec, value) is value, f"{record.__name__}.{name}"
                for equal in [0, 0.0, -0.0] if value is False else [1, 1.0] if value is True else []:
                    with pytest.raises(ReadError):
                        read(spec, equal)


def test_false_only_is_false_and_nothing_equal_to_it() -> None:
    assert read(m.FALSE_ONLY, False) is False
    for value in (0, 0.0, -0.0, "false", None, True, 1, 1.0, [], {}):
        with pytest.raises(ReadError):
            read(m.FALSE_ONLY, value)


# --------------------------------------------------------------------------- the decision, against the schema

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


def _ecma(pattern: str) -> str:
    """A schema pattern with its ECMA-262 meaning in Python: `$` is the end of the text, `\\d` is [0-9]."""
    return pattern.replace("\\d", "[0-9]").replace("$", "\\Z")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.search(_ecma(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Oracle = extend(
    Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: whole_number(value) is not None  # 1000.0 is an integer
    ),
)
ORACLES = {
    record: _Oracle(json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8")))
    for record, name in ((m.ReviewManifest, "review"), (m.ReviewPack, "review-pack"))
}


def _json(value: Any) -> bool:
    """Only what a YAML or JSON document holds (a tuple is a list to jsonschema, not to the reader)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)


def oracle_accepts(record: type, data: Any) -> bool:
    """The committed schema's decision, plus the rule it cannot state: a pack lists each check id once."""
    if not _json(data):
        return False
    if record not in ORACLES:  # a part of a manifest: judged inside a minimal whole one
        data, record = _inside(record, data)
    if not ORACLES[record].is_valid(data):
        return False
    if record is m.ReviewPack:
        ids = [check["id"] for check in data["checks"]]
        return len(ids) == len(set(ids))
    return True


def _inside(record: type, data: Any) -> tuple[Any, type]:
    if record in (m.CommandCheck, m.AgentCheck):
        kind = "command" if record is m.CommandCheck else "agent"
        if not (isinstance(data, dict) and data.get("kind") == kind):
            return None, m.ReviewManifest  # another record's kind: not this record
        return {**_REVIEW, "checks": [data]}, m.ReviewManifest
    if record is m.Binding:
        return {**_REVIEW, "bindings": {"b": data}}, m.ReviewManifest
    if record is m.UsesEntry:
        return {**_REVIEW, "uses": [data]}, m.ReviewManifest
    if record is m.Override:
        return {**_REVIEW, "uses": [{"pack": "./p", "as": "p", "overrides": {"a": data}}]}, m.ReviewManifest
    raise AssertionError(record)


def assert_same_decision(record: type, data: Any) -> str:
    """The reader accepts ``data`` exactly when the schema does (a record of its type); its outcome."""
    try:
        built: Any = read(record, copy.deepcopy(data))
    except ReadError as exc:
        assert exc.errors, data  # a refusal always says why
        assert not oracle_accepts(record, data), data
        return "invalid"
    assert oracle_accepts(record, data), data
    assert type(built) is record
    return "ok"


def typed(value: Any) -> Any:
    """``value`` with the type of every part: ``True`` and ``1``, ``0.0`` and ``False`` differ here."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, [(f.name, typed(getattr(value, f.name))) for f in dataclasses.fields(value)])
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    return (type(value).__name__, value)


_CHECK = {"id": "lint", "kind": "command", "run": "make lint"}
_AGENT = {"id": "rev", "kind": "agent", "preset": "claude", "rubric": "r.md"}
_PACK_AGENT = {"id": "rev", "kind": "agent", "rubric": "r.md"}
_REVIEW = {"kind": "review", "id": "demo", "target": "git-range", "checks": [_CHECK]}
_PACK = {"kind": "review-pack", "id": "core", "version": "1.0.0", "checks": [_CHECK]}

# Cases worth running every time, whatever hypothesis draws: (record, data, expected outcome).
EDGES: list[tuple[type, Any, str]] = [
    (m.CommandCheck, _CHECK, "ok"),
    (m.CommandCheck, {**_CHECK, "blocking": "true"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "blocking": 1}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": "5"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": 5.0}, "ok"),  # integral: 5, as JavaScript reads it
    (m.CommandCheck, {**_CHECK, "timeoutMs": 1e3}, "ok"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": 5.5}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": -0.0}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": float(MAX + 1)}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": float("inf")}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": float("nan")}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": True}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": 0}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": 1}, "ok"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": MAX}, "ok"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": MAX + 1}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": 10**40}, "invalid"),
    (m.CommandCheck, {**_CHECK, "timeoutMs": None}, "invalid"),
    (m.CommandCheck, {**_CHECK, "run": ""}, "invalid"),
    (m.CommandCheck, {**_CHECK, "run": " "}, "ok"),
    (m.CommandCheck, {**_CHECK, "cwd": None}, "ok"),
    (m.CommandCheck, {**_CHECK, "description": ""}, "ok"),
    (m.CommandCheck, {**_CHECK, "id": "a" * 64}, "ok"),
    (m.CommandCheck, {**_CHECK, "id": "a" * 65}, "invalid"),
    (m.CommandCheck, {**_CHECK, "id": "lint\n"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "id": "Lint"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "id": "1int"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "id": "lïnt"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "extra": 1}, "invalid"),
    (m.CommandCheck, {"id": "lint", "kind": "command"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "kind": "agent"}, "invalid"),
    (m.CommandCheck, {**_CHECK, "fallbackPresets": []}, "invalid"),
    (m.AgentCheck, _AGENT, "ok"),
    (m.AgentCheck, {**_AGENT, "effects": False}, "ok"),
    (m.AgentCheck, {**_AGENT, "effects": 0}, "invalid"),  # a bare Literal[False] would take it: 0 == False
    (m.AgentCheck, {**_AGENT, "effects": 0.0}, "invalid"),
    (m.AgentCheck, {**_AGENT, "effects": -0.0}, "invalid"),
    (m.AgentCheck, {**_AGENT, "effects": True}, "invalid"),
    (m.AgentCheck, {**_AGENT, "effects": 1}, "invalid"),
    (m.AgentCheck, {**_AGENT, "effects": "false"}, "invalid"),
    (m.AgentCheck, {**_AGENT, "effects": None}, "invalid"),
    (m.AgentCheck, {**_AGENT, "effects": []}, "invalid"),
    (m.AgentCheck, {**_AGENT, "blockOn": "medium"}, "ok"),
    (m.AgentCheck, {**_AGENT, "blockOn": "HIGH"}, "invalid"),
    (m.AgentCheck, {**_AGENT, "blockOn": None}, "invalid"),
    (m.AgentCheck, {**_AGENT, "fallbackPresets": ["a", "b"]}, "ok"),
    (m.AgentCheck, {**_AGENT, "fallbackPresets": [""]}, "invalid"),
    (m.AgentCheck, {**_AGENT, "fallbackPresets": "a"}, "invalid"),
    (m.AgentCheck, {**_AGENT, "fallbackPresets": ("a",)}, "invalid"),  # a tuple is not a list
    (m.Binding, {"checks": ["lint", "core/rev"]}, "ok"),
    (m.Binding, {"checks": []}, "invalid"),
    (m.Binding, {"checks": ["a/b/c"]}, "invalid"),
    (m.Binding, {"checks": ["lint"], "quorum": "all-blocking-pass", "on": "pre-push", "prepare": ["fmt"]}, "ok"),
    (m.Binding, {"checks": ["lint"], "quorum": "any"}, "invalid"),
    (m.Binding, {"checks": ["lint"], "on": ""}, "invalid"),
    (m.Binding, {"checks": ["lint"], "on": True}, "invalid"),
    (m.Binding, {"checks": ["x" * 64 + "/" + "y" * 64]}, "ok"),
    (m.Binding, {"checks": ["x" * 64 + "/" + "y" * 65]}, "invalid"),
    (m.Override, {}, "ok"),
    (m.Override, {"blocking": None, "timeoutMs": None, "blockOn": None}, "ok"),
    (m.Override, {"timeoutMs": 0}, "invalid"),
    (m.UsesEntry, {"pack": "./p", "as": "core"}, "ok"),
    (m.UsesEntry, {"pack": "./p", "as_": "core"}, "invalid"),
    (m.UsesEntry, {"pack": "./p", "as": "core", "as_": "core"}, "invalid"),
    (m.UsesEntry, {"pack": "./p", "as": "Core"}, "invalid"),
    (
        m.UsesEntry,
        {"pack": "@scope/pack", "as": "core", "checks": ["a"], "overrides": {"a": {"blocking": False}}},
        "ok",
    ),
    (m.UsesEntry, {"pack": "./p", "as": "core", "overrides": {"A": {}}}, "invalid"),
    (m.UsesEntry, {"pack": "./p", "as": "core", "overrides": {"a": {"nope": 1}}}, "invalid"),
    (m.UsesEntry, {"pack": "./p", "as": "core", "overrides": []}, "invalid"),
    (m.UsesEntry, {"pack": f"git+https://example.com/r.git#{SHA}", "as": "core"}, "ok"),
    (m.UsesEntry, {"pack": f"git+ssh://example.com/r.git#{SHA}", "as": "core"}, "invalid"),
    (m.UsesEntry, {"pack": "git+https://example.com/r.git#main", "as": "core"}, "invalid"),
    (m.UsesEntry, {"pack": f"git+https://example.com/r.git#{SHA}\n", "as": "core"}, "invalid"),
    (m.UsesEntry, {"pack": "has space", "as": "core"}, "invalid"),
    (m.UsesEntry, {"pack": "", "as": "core"}, "invalid"),
    (m.UsesEntry, {"pack": "./p", "as": "core", "allowCommands": "yes"}, "invalid"),
    (m.ReviewManifest, _REVIEW, "ok"),
    (m.ReviewManifest, {**_REVIEW, "target": {"kind": "git-range"}}, "ok"),
    (m.ReviewManifest, {**_REVIEW, "target": {"kind": "git-range", "base": "main"}}, "ok"),
    (m.ReviewManifest, {**_REVIEW, "target": {"kind": "git-range", "base": ""}}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "target": "git-ranges"}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "target": None}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "target": {}}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": []}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": [{**_CHECK, "kind": "notebook"}]}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": [{"id": "x", "run": "y"}]}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": [{**_CHECK, "kind": ["command"]}]}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": [{**_CHECK, "kind": None}]}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": ["lint"]}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "checks": [_CHECK, _CHECK]}, "ok"),  # duplicates are rule 1's, not the shape's
    (m.ReviewManifest, {**_REVIEW, "bindings": None}, "ok"),
    (m.ReviewManifest, {**_REVIEW, "bindings": {}}, "ok"),
    (m.ReviewManifest, {**_REVIEW, "bindings": {"Bad": {"checks": ["lint"]}}}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "bindings": {"local": {}}}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "uses": None}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "verdict": None}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "verdict": {}}, "ok"),
    (m.ReviewManifest, {**_REVIEW, "verdict": {"exportDir": ".reviews"}}, "ok"),
    (m.ReviewManifest, {**_REVIEW, "kind": "review-pack"}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "name": ""}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "id": 5}, "invalid"),
    (m.ReviewManifest, {**_REVIEW, "id": "\ud800"}, "invalid"),  # a lone surrogate
    (m.ReviewManifest, {**_REVIEW, "description": "é\ud800"}, "ok"),
    (m.ReviewManifest, [], "invalid"),
    (m.ReviewManifest, None, "invalid"),
    (m.ReviewPack, _PACK, "ok"),
    (m.ReviewPack, {**_PACK, "checks": [_CHECK, _CHECK]}, "invalid"),  # each id once
    (m.ReviewPack, {**_PACK, "checks": [_CHECK, {**_PACK_AGENT, "id": "lint"}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [_PACK_AGENT]}, "ok"),
    (m.ReviewPack, {**_PACK, "checks": [{**_PACK_AGENT, "fallbackPresets": []}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [{**_CHECK, "effects": True}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [{**_CHECK, "effects": False}]}, "ok"),
    (m.ReviewPack, {**_PACK, "checks": [{**_CHECK, "effects": 0}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [{**_CHECK, "effects": 0.0}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [{**_PACK_AGENT, "effects": -0.0}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [{**_PACK_AGENT, "effects": "false"}]}, "invalid"),
    (m.ReviewPack, {**_PACK, "checks": [{**_PACK_AGENT, "effects": False}]}, "ok"),
    (m.ReviewPack, {**_PACK, "checks": [{**_CHECK, "cwd": ""}]}, "ok"),  # a pack check's cwd is Text
    (m.ReviewPack, {**_PACK, "version": "1.0"}, "invalid"),
    (m.ReviewPack, {**_PACK, "version": "1.0.0-rc.1+build.5"}, "ok"),
    (m.ReviewPack, {**_PACK, "version": "1.0.0\n"}, "invalid"),
    (m.ReviewPack, {**_PACK, "version": "1.0.٣"}, "invalid"),  # \d is [0-9], as in ECMA-262
    (m.ReviewPack, {**_PACK, "target": "git-range"}, "invalid"),
]


@pytest.mark.parametrize(("record", "data", "expected"), EDGES, ids=range(len(EDGES)))
def test_edge_cases_are_decided_as_the_schema_decides(record: type, data: Any, expected: str) -> None:
    assert assert_same_decision(record, data) == expected


# ---- generated manifests

IDS = st.sampled_from(["lint", "test", "rev", "fmt", "sec", "a", "x-1", "a" * 64])
TEXT = st.sampled_from(["", " ", "make lint", "é", "x" * 80]) | st.text(max_size=6)
NON_EMPTY = st.sampled_from(["claude", "codex", "make lint", "r.md", "./rubrics/x.md", "é"])
RUN = st.sampled_from(
    ["make lint", "make {base}", "echo {head}", "lint {changed}", "x {{head}}", "x {nope}", "${HOME}"]
)
TIMEOUT = st.sampled_from([1, 60_000, MAX]) | st.integers(1, MAX)
PACK_REF = st.sampled_from(["./pack", "/abs/pack", "@scope/pack", "pack-name", f"git+https://example.com/r.git#{SHA}"])
SEMVER = st.sampled_from(["1.0.0", "0.1.2", "1.0.0-rc.1", "2.3.4+build.7", "10.20.30-a.b+c"])
WEIRD: list[Any] = [
    None, "", " ", "true", "false", "yes", "on", "5", 5, 5.0, -0.0, 0, 0.0, 1, 1.0, -1, True, False,
    MAX, MAX + 1, 10**20, [], {}, ["x"], ["lint"], [""], ["Bad"], ["core/lint"], [1], {"a": 1},
    {"kind": "command"}, {"kind": "agent"}, {"checks": ["lint"]}, "git-range", "Bad", "a" * 64, "a" * 65, "x\n",
    "lint", "core/lint", "a/b/c", "1.0.0", "1.0", "command", "agent", "notebook", "high", "HIGH",
    "all-blocking-pass", "./p", f"git+https://h/r#{SHA}", f"git+ssh://h/r#{SHA}", "git+https://h/r#abc",
    "git+http://h/r", "has space", "é", "review", "review-pack",
]  # fmt: skip
WEIRD_VALUE = (
    st.sampled_from(WEIRD).map(copy.deepcopy)  # a fresh copy: a later mutation must not change the pool
    | st.text(max_size=5)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
)
# What equals False without being false (refused where `effects` may only be false), and the booleans.
EFFECTS = st.sampled_from([0, 0.0, -0.0, "false", "False", None, 1, 1.0, True, False])
KEYS = ["extra", "as_", "as", "kind", "id", "fallbackPresets", "effects", "target", "bindings", "name", "on", "checks"]


def optional(draw: st.DrawFn, out: dict[str, Any], key: str, strategy: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        out[key] = draw(strategy)


@st.composite
def command_check(draw: st.DrawFn, check_id: str, *, pack: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"id": check_id, "kind": "command", "run": draw(RUN)}
    optional(draw, out, "description", TEXT)
    optional(draw, out, "cwd", TEXT if pack else NON_EMPTY)
    optional(draw, out, "blocking", st.booleans())
    optional(draw, out, "timeoutMs", TIMEOUT)
    optional(draw, out, "effects", st.just(False) if pack else st.booleans())
    return out


@st.composite
def agent_check(draw: st.DrawFn, check_id: str, *, pack: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"id": check_id, "kind": "agent", "rubric": draw(NON_EMPTY)}
    if not pack or draw(st.booleans()):
        out["preset"] = draw(NON_EMPTY)
    if not pack:
        optional(draw, out, "fallbackPresets", st.lists(NON_EMPTY, max_size=3))
    optional(draw, out, "description", TEXT)
    optional(draw, out, "blockOn", st.sampled_from(["high", "medium", "low"]))
    optional(draw, out, "blocking", st.booleans())
    optional(draw, out, "timeoutMs", TIMEOUT)
    optional(draw, out, "effects", st.just(False))
    return out


@st.composite
def checks(draw: st.DrawFn, *, pack: bool = False) -> list[dict[str, Any]]:
    ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    return [draw(draw(st.sampled_from([command_check, agent_check]))(i, pack=pack)) for i in ids]


@st.composite
def override(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    optional(draw, out, "blockOn", st.sampled_from(["high", "medium", "low"]))
    optional(draw, out, "blocking", st.booleans())
    optional(draw, out, "timeoutMs", TIMEOUT)
    optional(draw, out, "preset", NON_EMPTY)
    optional(draw, out, "fallbackPresets", st.lists(NON_EMPTY, max_size=2))
    return out


@st.composite
def uses_entry(draw: st.DrawFn, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"pack": draw(PACK_REF), "as": name}
    optional(draw, out, "checks", st.lists(IDS, max_size=3))
    optional(draw, out, "preset", NON_EMPTY)
    optional(draw, out, "fallbackPresets", st.lists(NON_EMPTY, max_size=2))
    optional(draw, out, "overrides", st.dictionaries(IDS, override(), max_size=2))
    optional(draw, out, "allowCommands", st.booleans())
    return out


@st.composite
def review_doc(draw: st.DrawFn) -> dict[str, Any]:
    local = draw(checks())
    ids = [c["id"] for c in local]
    effects = [c["id"] for c in local if c.get("effects") is True]
    lanes = [c["id"] for c in local if c.get("effects") is not True]
    names = draw(st.lists(st.sampled_from(["core", "sec", "ext"]), max_size=2, unique=True))
    refs = lanes + [f"{n}/{i}" for n in names for i in ("lint", "rev")]
    out: dict[str, Any] = {"kind": "review", "id": draw(IDS)}
    optional(draw, out, "name", NON_EMPTY)
    optional(draw, out, "description", TEXT)
    out["target"] = draw(
        st.sampled_from(["git-range", {"kind": "git-range"}])
        | st.builds(lambda b: {"kind": "git-range", "base": b}, NON_EMPTY)
    )
    out["checks"] = local
    if names:
        out["uses"] = [draw(uses_entry(n)) for n in names]
    declared: bool = draw(st.booleans())
    if names or declared:
        bindings: dict[str, Any] = {}
        for name in draw(st.lists(st.sampled_from(["local", "ci", "default"]), min_size=1, max_size=2, unique=True)):
            binding: dict[str, Any] = {"checks": draw(st.lists(st.sampled_from(refs or ids), min_size=1, max_size=3))}
            if effects:
                optional(draw, binding, "prepare", st.lists(st.sampled_from(effects), max_size=2))
            optional(draw, binding, "on", st.sampled_from(["pre-push", "ci"]))
            optional(draw, binding, "quorum", st.just("all-blocking-pass"))
            bindings[name] = binding
        out["bindings"] = bindings
    optional(draw, out, "verdict", st.sampled_from([{}, {"exportDir": ".reviews"}]))
    return out


@st.composite
def pack_doc(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "review-pack", "id": draw(IDS), "version": draw(SEMVER)}
    optional(draw, out, "description", TEXT)
    out["checks"] = draw(checks(pack=True))
    return out


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _nodes(item, (*path, index))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for seg in path[:-1]:
        parent = parent[seg]
    parent[path[-1]] = value
    return doc


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> Any:
    """A document, damaged 0 to 3 times: a key dropped, added or renamed, a value replaced, an item doubled.

    Or a check's ``effects`` set to a boolean or to a value that equals one without being one.
    """
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, 3))):
        path, node = draw(st.sampled_from(_nodes(doc)))
        op = draw(st.sampled_from(["drop", "add", "rename", "replace", "double", "empty", "effects"]))
        checks = [n for _, n in _nodes(doc) if isinstance(n, dict) and n.get("kind") in ("command", "agent")]
        if op == "effects" and checks:
            draw(st.sampled_from(checks))["effects"] = draw(EFFECTS)
        elif op == "drop" and isinstance(node, dict) and node:
            del node[draw(st.sampled_from(sorted(node)))]
        elif op == "add" and isinstance(node, dict):
            node[draw(st.sampled_from(KEYS))] = draw(WEIRD_VALUE)
        elif op == "rename" and isinstance(node, dict) and node:
            old = draw(st.sampled_from(sorted(node)))
            node[draw(st.sampled_from(["Bad", "a" * 65, "x-1", "as_", "1x", *KEYS]))] = node.pop(old)
        elif op == "double" and isinstance(node, list) and node:
            node.append(copy.deepcopy(draw(st.sampled_from(node))))
        elif op == "empty" and isinstance(node, list | dict):
            node.clear()
        else:
            doc = _set(doc, path, draw(WEIRD_VALUE))
    return doc


@SETTINGS
@given(doc=mutated(review_doc()))
def test_review_records_are_decided_as_the_schema_decides(doc: Any) -> None:
    event(assert_same_decision(m.ReviewManifest, doc))


@SETTINGS
@given(doc=mutated(pack_doc()))
def test_pack_records_are_decided_as_the_schema_decides(doc: Any) -> None:
    event(assert_same_decision(m.ReviewPack, doc))


# ---- whole parses, fresh and through the memo


def frontmatter(doc: Any, style: str) -> bytes:
    text = (
        json.dumps(doc, ensure_ascii=False)
        if style == "json"
        else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    )
    return f"---\n{text}\n---\n# body\n".encode("utf-8", "surrogatepass")


_REGISTRY: list[Any] = []


def registry() -> Any:
    """The installed plugins, loaded once (a manifest with a plugin's kind loads them otherwise, per parse)."""
    if not _REGISTRY:
        from agentreview.plugins.registry import load_registry

        _REGISTRY.append(load_registry())
    return _REGISTRY[0]


def outcome(parse: Any) -> Any:
    try:
        parsed = parse()
    except ManifestError as exc:
        return ("error", exc.problems, str(exc))
    if isinstance(parsed, m.ReviewPack):
        return ("pack", typed(parsed))
    return ("review", typed(parsed.manifest), typed(parsed.bindings), parsed.body, parsed.path, parsed.source)


def assert_same_parse(source: bytes, home: Path, *, pack: bool) -> str:
    """A parse answers the same fresh, when it stores its memo, and when the memo answers."""
    path = Path("/tmp/project/REVIEW.md")

    def parse(home: Path | None) -> Any:
        if pack:
            return parse_pack(source, path, home=home)
        return parse_review(source, path, registry=registry(), home=home)

    fresh = outcome(lambda: parse(None))
    assert outcome(lambda: parse(home)) == fresh  # a full parse that stores its memo
    assert outcome(lambda: parse(home)) == fresh  # answered by the memo when it stored one
    return str(fresh[0])


@SETTINGS
@given(doc=mutated(review_doc()), style=st.sampled_from(["yaml", "json"]))
def test_parse_review_is_the_same_through_the_memo(doc: Any, style: str, tmp_path_factory: Any) -> None:
    event(assert_same_parse(frontmatter(doc, style), tmp_path_factory.mktemp("home"), pack=False))


@SETTINGS
@given(doc=mutated(pack_doc()), style=st.sampled_from(["yaml", "json"]))
def test_parse_pack_is_the_same_through_the_memo(doc: Any, style: str, tmp_path_factory: Any) -> None:
    event(assert_same_parse(frontmatter(doc, style), tmp_path_factory.mktemp("home"), pack=True))


@pytest.mark.parametrize("name", ["push-gate.md", "consumer.md", "two-bindings.md", "pack.md"])
def test_the_examples_parse_the_same_through_the_memo(name: str, tmp_path: Path) -> None:
    source = (Path(__file__).parent / "fixtures" / "examples" / name).read_bytes()
    assert assert_same_parse(source, tmp_path, pack=name == "pack.md") in ("review", "pack")


# --------------------------------------------------------------------------- the point: no pydantic


def _fresh(program: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(proc.stdout.splitlines()[-1]))


def test_a_valid_manifest_is_parsed_without_importing_pydantic(tmp_path: Path) -> None:
    examples = Path(__file__).parent / "fixtures" / "examples"
    heavy = _fresh(
        f"""
        import json, sys
        from pathlib import Path
        from agentreview.manifest.parse import parse_pack, parse_review_file
        examples = Path({str(examples)!r})
        for name in ("push-gate.md", "consumer.md", "two-bindings.md"):
            parse_review_file(examples / name, home=Path({str(tmp_path / "home")!r}))  # new bytes: a full parse
        parse_pack((examples / "pack.md").read_bytes())
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core"))))
        """
    )
    assert heavy == []


def test_an_invalid_manifest_is_explained_without_pydantic() -> None:
    heavy = _fresh(
        """
        import json, sys
        from agentreview.manifest.parse import ManifestError, parse_review
        source = b"---\\nkind: review\\nid: demo\\ntarget: git-range\\nchecks:\\n  - {id: lint, kind: command}\\n---\\n"
        try:
            parse_review(source)
        except ManifestError as exc:
            assert [p.message for p in exc.problems] == ["is required but missing"], exc.problems
        print(json.dumps([m for m in ("pydantic",) if m in sys.modules]))
        """
    )
    assert heavy == []
