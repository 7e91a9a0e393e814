"""The JSON Schemas: committed copies match the models, and schema and model agree on documents.

The agreement tests use a small validator for exactly the keywords these schemas use; it fails
on any other keyword, so a schema that grows a new construct cannot pass unchecked.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentreview.manifest.parse import load_frontmatter
from agentreview.model.attestation import Attestation, AttestationShapeError
from agentreview.model.manifest import ReviewManifest, ReviewPack
from agentreview.model.numbers import whole_number
from agentreview.model.reader import ReadError
from agentreview.model.reader import read as validate_record
from agentreview.model.schemas import DOCUMENTS, JSON_SCHEMA_DIALECT, UnknownDocumentError, schema_for, schema_text

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DIR = ROOT / "docs" / "schemas"
EXAMPLES = ROOT / "tests" / "fixtures" / "examples"

ANNOTATIONS = {"title", "description", "default", "format", "discriminator", "$schema", "$id", "$defs"}


class Invalid(Exception):
    pass


def validate(instance: Any, schema: dict[str, Any], root: dict[str, Any], at: str = "$") -> None:
    """Validate against the subset of draft 2020-12 these schemas use."""
    for keyword, arg in schema.items():
        if keyword in ANNOTATIONS:
            continue
        check = _KEYWORDS.get(keyword)
        if check is None:
            raise AssertionError(f"the test validator does not know the keyword '{keyword}' (at {at}); extend it")
        check(instance, arg, schema, root, at)


def _ref(instance: Any, ref: str, _s: dict[str, Any], root: dict[str, Any], at: str) -> None:
    assert ref.startswith("#/$defs/"), ref
    validate(instance, root["$defs"][ref.removeprefix("#/$defs/")], root, at)


def _is_type(instance: Any, name: str) -> bool:
    return {
        "object": isinstance(instance, dict),
        "array": isinstance(instance, list),
        "string": isinstance(instance, str),
        "boolean": isinstance(instance, bool),
        "null": instance is None,
        "integer": whole_number(instance) is not None,  # JSON Schema's meaning: 1000.0 is an integer
        "number": isinstance(instance, (int, float)) and not isinstance(instance, bool),
    }[name]


def _type(instance: Any, arg: str, *_: Any) -> None:
    if not _is_type(instance, arg):
        raise Invalid(f"{_[-1]}: not of type {arg}")


def _properties(instance: Any, arg: dict[str, Any], _s: dict[str, Any], root: dict[str, Any], at: str) -> None:
    if isinstance(instance, dict):
        for key, sub in arg.items():
            if key in instance:
                validate(instance[key], sub, root, f"{at}.{key}")


def _additional(instance: Any, arg: Any, schema: dict[str, Any], root: dict[str, Any], at: str) -> None:
    if not isinstance(instance, dict) or arg is True:
        return
    for key in set(instance) - set(schema.get("properties", {})):
        if arg is False:
            raise Invalid(f"{at}: unknown member '{key}'")
        validate(instance[key], arg, root, f"{at}.{key}")


def _required(instance: Any, arg: list[str], _s: Any, _r: Any, at: str) -> None:
    if isinstance(instance, dict) and (missing := [k for k in arg if k not in instance]):
        raise Invalid(f"{at}: missing {missing}")


def _property_names(instance: Any, arg: dict[str, Any], _s: Any, root: dict[str, Any], at: str) -> None:
    if isinstance(instance, dict):
        for key in instance:
            validate(key, {"type": "string", **arg}, root, f"{at}[{key!r}]")


def _any_of(instance: Any, arg: list[dict[str, Any]], _s: Any, root: dict[str, Any], at: str) -> None:
    if not any(_passes(instance, sub, root, at) for sub in arg):
        raise Invalid(f"{at}: matches none of anyOf")


def _one_of(instance: Any, arg: list[dict[str, Any]], _s: Any, root: dict[str, Any], at: str) -> None:
    if sum(_passes(instance, sub, root, at) for sub in arg) != 1:
        raise Invalid(f"{at}: does not match exactly one of oneOf")


def _passes(instance: Any, schema: dict[str, Any], root: dict[str, Any], at: str) -> bool:
    try:
        validate(instance, schema, root, at)
    except Invalid:
        return False
    return True


def _const(instance: Any, arg: Any, _s: Any, _r: Any, at: str) -> None:
    if instance != arg or type(instance) is not type(arg):
        raise Invalid(f"{at}: not {arg!r}")


def _enum(instance: Any, arg: list[Any], _s: Any, _r: Any, at: str) -> None:
    if not any(instance == value and type(instance) is type(value) for value in arg):
        raise Invalid(f"{at}: not one of {arg}")


def _string(test: Any) -> Any:
    def check(instance: Any, arg: Any, _s: Any, _r: Any, at: str) -> None:
        if isinstance(instance, str) and not test(instance, arg):
            raise Invalid(f"{at}: string constraint {arg!r} fails")

    return check


def _number(test: Any) -> Any:
    def check(instance: Any, arg: Any, _s: Any, _r: Any, at: str) -> None:
        if _is_type(instance, "number") and not test(instance, arg):
            raise Invalid(f"{at}: number constraint {arg!r} fails")

    return check


def _array(test: Any) -> Any:
    def check(instance: Any, arg: Any, _s: Any, _r: Any, at: str) -> None:
        if isinstance(instance, list) and not test(instance, arg):
            raise Invalid(f"{at}: array constraint {arg!r} fails")

    return check


def _items(instance: Any, arg: dict[str, Any], _s: Any, root: dict[str, Any], at: str) -> None:
    if isinstance(instance, list):
        for index, item in enumerate(instance):
            validate(item, arg, root, f"{at}[{index}]")


_KEYWORDS: dict[str, Any] = {
    "$ref": _ref,
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "propertyNames": _property_names,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "const": _const,
    "enum": _enum,
    # ECMA-262 and Python agree on these patterns (anchors, classes, the one look-ahead).
    "pattern": _string(lambda s, p: re.search(p, s) is not None and "\n" not in s),
    "minLength": _string(lambda s, n: len(s) >= n),
    "maxLength": _string(lambda s, n: len(s) <= n),
    "minimum": _number(lambda x, n: x >= n),
    "maximum": _number(lambda x, n: x <= n),
    "exclusiveMinimum": _number(lambda x, n: x > n),
    "minItems": _array(lambda a, n: len(a) >= n),
    "uniqueItems": _array(lambda a, u: not u or len({json.dumps(x, sort_keys=True) for x in a}) == len(a)),
    "items": _items,
}

MODELS = {"review": ReviewManifest, "review-pack": ReviewPack}


def schema_accepts(name: str, doc: Any) -> bool:
    schema = schema_for(name)
    return _passes(doc, schema, schema, "$")


def model_accepts(name: str, doc: Any) -> bool:
    try:
        if name == "attestation":
            Attestation.read(copy.deepcopy(doc))
        else:
            validate_record(MODELS[name], copy.deepcopy(doc))
    except (ReadError, AttestationShapeError):
        return False
    return True


def frontmatter(file: str) -> dict[str, Any]:
    return load_frontmatter((EXAMPLES / file).read_bytes()).data


# --------------------------------------------------------------------------- the committed files


@pytest.mark.parametrize("name", DOCUMENTS)
def test_committed_schema_matches_the_models(name: str) -> None:
    path = SCHEMA_DIR / f"{name}.schema.json"
    assert path.read_text(encoding="utf-8") == schema_text(name), (
        f"{path.relative_to(ROOT)} is out of date with the models; regenerate it: "
        f"agentreview schema {name} > docs/schemas/{name}.schema.json"
    )


@pytest.mark.parametrize("name", DOCUMENTS)
def test_schema_header(name: str) -> None:
    schema = schema_for(name)
    assert list(schema)[:4] == ["$schema", "$id", "title", "description"]
    assert schema["$schema"] == JSON_SCHEMA_DIALECT
    assert schema["$id"] == f"urn:agentreview:v1:{name}"
    assert schema["type"] == "object"


def test_unknown_document_is_refused() -> None:
    with pytest.raises(UnknownDocumentError, match="review, review-pack, attestation"):
        schema_for("REVIEW")


def test_aliases_appear_not_python_names() -> None:
    review, attestation = json.dumps(schema_for("review")), schema_for("attestation")
    assert '"as"' in review and '"as_"' not in review
    assert "schema" in attestation["properties"] and "schema_" not in attestation["properties"]
    assert attestation["properties"]["schema"]["const"] == "agentproto.review.attestation/v1"


def test_strictness_per_document() -> None:
    review, pack, attestation = (schema_for(name) for name in DOCUMENTS)
    for schema, closed in ((review, False), (pack, False), (attestation, True)):
        assert schema["additionalProperties"] is closed
        for name, definition in schema["$defs"].items():
            if definition.get("type") == "object":
                assert definition["additionalProperties"] is closed, name


def test_attestation_required_members_follow_reference_notes() -> None:
    schema = schema_for("attestation")
    assert set(schema["required"]) == {
        "schema", "runId", "reviewId", "manifestSha", "binding", "target", "rangeSha", "lanes", "verdict",
        "attestor", "rubrics", "createdAt",
    }
    assert set(schema["$defs"]["LaneResult"]["required"]) == {
        "id", "kind", "status", "blocking", "findings", "durationMs",
    }
    assert set(schema["$defs"]["Finding"]["required"]) == {"severity", "title", "detail"}
    assert schema["properties"]["verdict"]["enum"] == ["pass", "block", "incomplete"]


def test_review_schema_documents_only_the_spec_check_kinds() -> None:
    """A plugin may add check kinds at parse time; the published review schemas stay the spec's."""
    for name, prefix in (("review", ""), ("review-pack", "Pack")):
        defs = schema_for(name)["$defs"]
        kinds = sorted(d["properties"]["kind"]["const"] for k, d in defs.items() if k.endswith("Check"))
        assert kinds == ["agent", "command"], name
        assert sorted(k for k in defs if k.endswith("Check")) == [f"{prefix}AgentCheck", f"{prefix}CommandCheck"]


# --------------------------------------------------------------------------- schema and model agree


@pytest.mark.parametrize("file", ["push-gate.md", "two-bindings.md", "consumer.md"])
def test_example_reviews_are_valid(file: str) -> None:
    doc = frontmatter(file)
    assert model_accepts("review", doc)
    assert schema_accepts("review", doc)


def test_example_pack_is_valid() -> None:
    doc = frontmatter("pack.md")
    assert model_accepts("review-pack", doc)
    assert schema_accepts("review-pack", doc)


def _review_variants() -> list[tuple[str, Any]]:
    base = frontmatter("consumer.md")
    variants: list[tuple[str, Any]] = []

    def variant(label: str, change: Any) -> None:
        doc = copy.deepcopy(base)
        change(doc)
        variants.append((label, doc))

    variant("unknown top-level key", lambda d: d.update(extra=1))
    variant("unknown key in a check", lambda d: d["checks"][0].update(extra=1))
    variant("bad id", lambda d: d.update(id="Bad_Id"))
    variant("id too long", lambda d: d.update(id="a" * 65))
    variant("no checks", lambda d: d.update(checks=[]))
    variant("unknown kind", lambda d: d["checks"][0].update(kind="script"))
    variant("string target", lambda d: d.update(target="git-range"))
    variant("other string target", lambda d: d.update(target="branch"))
    variant("timeout zero", lambda d: d["checks"][0].update(timeoutMs=0))
    variant("timeout beyond a day", lambda d: d["checks"][0].update(timeoutMs=24 * 60 * 60_000 + 1))
    variant("binding key with capitals", lambda d: d.update(bindings={"CI": {"checks": ["x"]}}))
    variant("binding with no checks", lambda d: d.update(bindings={"ci": {"checks": []}}))
    variant("unknown quorum", lambda d: d.update(bindings={"ci": {"checks": ["x"], "quorum": "any"}}))
    variant("git ref without pin", lambda d: d.update(uses=[{"pack": "git+https://h/r", "as": "p"}]))
    variant("git ref pinned", lambda d: d.update(uses=[{"pack": "git+https://h/r#" + "a" * 40, "as": "p"}]))
    variant("path ref with space", lambda d: d.update(uses=[{"pack": "./a b", "as": "p"}]))
    variant("override key with capitals", lambda d: d.update(uses=[{"pack": "./p", "as": "p",
                                                                     "overrides": {"Bad": {"blocking": False}}}]))
    variant("uses without as", lambda d: d.update(uses=[{"pack": "./p"}]))
    return variants


@pytest.mark.parametrize(("label", "doc"), _review_variants(), ids=lambda v: v if isinstance(v, str) else "")
def test_schema_and_model_agree_on_review_variants(label: str, doc: Any) -> None:
    assert schema_accepts("review", doc) == model_accepts("review", doc), label


def full_document() -> dict[str, Any]:
    """An attestation with every optional member of reference-notes 1.3 present."""
    lane = {
        "id": "core/correctness", "kind": "agent", "status": "pass", "blocking": True, "durationMs": 5,
        "findings": [{"severity": "low", "title": "nit", "detail": "d", "file": "a.py", "line": 3}],
        "sessionId": "s", "preset": "claude", "summary": "ok", "model": "m", "error": "e", "exitCode": 0,
        "fallbacks": [{"preset": "codex", "error": "missing"}],
        "composedFrom": {"rangeSha": "b" * 64, "headSha": "3" * 40, "attestationSha256": "c" * 64},
    }
    att = Attestation.build(
        run_id="review-1", review_id="web", manifest_sha="a" * 64, binding="ci", repo_remote="github.com/o/r",
        base_sha="1" * 40, head_sha="2" * 40, lanes=[lane], daemon="d", dirty=True,
        rubrics=[{"check": "core/correctness", "path": "r.md", "sha256": "d" * 64}],
        packs=[{"ref": "./p", "id": "p", "version": "1.0.0", "alg": "agentproto-pack-digest/v1", "sha256": "e" * 64}],
        requester={"sessionId": "s", "gitAuthor": {"name": "n", "email": "e@x"}},
        pr={"provider": "github", "repo": "o/r", "number": 1, "url": "https://github.com/o/r/pull/1"},
    ).with_signature({"alg": "ssh-ed25519", "keyFingerprint": "SHA256:x", "principal": "p",
                      "signedAt": "2025-01-31T12:00:00Z", "sig": "S"})
    return att.to_json_dict()


def _attestation_variants() -> list[tuple[str, Any]]:
    variants: list[tuple[str, Any]] = [("full", full_document())]

    def variant(label: str, change: Any) -> None:
        doc = full_document()
        change(doc)
        variants.append((label, doc))

    variant("unknown members", lambda d: (d.update(future=1), d["lanes"][0].update(future=2)))
    variant("wrong schema", lambda d: d.update(schema="agentproto.review.attestation/v2"))
    variant("finding without detail", lambda d: d["lanes"][0]["findings"][0].pop("detail"))
    variant("negative duration", lambda d: d["lanes"][0].update(durationMs=-1))
    variant("fractional duration", lambda d: d["lanes"][0].update(durationMs=0.25))
    variant("line zero", lambda d: d["lanes"][0]["findings"][0].update(line=0))
    variant("bad rangeSha", lambda d: d.update(rangeSha="A" * 64))
    variant("bad runId", lambda d: d.update(runId="run-1"))
    variant("dirty false", lambda d: d.update(dirty=False))
    variant("empty packs", lambda d: d.update(packs=[]))
    variant("repeated preset", lambda d: d["attestor"].update(presets=["a", "a"]))
    variant("bad fingerprint", lambda d: d["attestor"]["signature"].update(keyFingerprint="MD5:x"))
    variant("pr repo without owner", lambda d: d["pr"].update(repo="r"))
    variant("unknown verdict", lambda d: d.update(verdict="maybe"))
    variant("no lanes", lambda d: d.update(lanes=[]))
    variant("lane of a plugin's check kind", lambda d: d["lanes"][0].update(kind="notebook"))
    variant("lane kind that is not an id", lambda d: d["lanes"][0].update(kind="Note Book"))
    variant("empty lane kind", lambda d: d["lanes"][0].update(kind=""))
    return variants


@pytest.mark.parametrize(("label", "doc"), _attestation_variants(), ids=lambda v: v if isinstance(v, str) else "")
def test_schema_and_model_agree_on_attestation_variants(label: str, doc: Any) -> None:
    assert schema_accepts("attestation", doc) == model_accepts("attestation", doc), label


def test_the_validator_is_not_trivially_permissive() -> None:
    assert not schema_accepts("review", {"kind": "review"})
    assert not schema_accepts("attestation", {})
    assert not schema_accepts("review-pack", {**frontmatter("pack.md"), "kind": "review"})
