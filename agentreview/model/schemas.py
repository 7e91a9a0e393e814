"""JSON Schemas of the three agentreview/v1 documents, generated from the pydantic models.

The models are the single source of truth: editors, other hosts and CI linters get a
schema that cannot say something the parser does not enforce. ``docs/schemas/`` holds
the committed copies and a test fails when they drift from the models.

The attestation schema is the spec's contract: the shapes a verifier accepts (unknown members
allowed). It is no longer generated: the attestation is plain Python read by a hand-written
reader (``model/attestation_read.py``) that a test holds to this schema, so the committed file
ships as package data (``model/attestation.schema.json``, equal to ``docs/schemas/``'s copy).
The rule that ``verdict`` is the fold of ``lanes`` cannot be written in JSON Schema; it is
stated in the description and enforced by the verifier.
"""

from __future__ import annotations

import json
from typing import Any

DOCUMENTS = ("review", "review-pack", "attestation")
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_TITLES = {
    "review": "agentreview/v1 REVIEW.md frontmatter (kind: review)",
    "review-pack": "agentreview/v1 review pack manifest (kind: review-pack)",
    "attestation": "agentproto.review.attestation/v1",
}
_DESCRIPTIONS = {
    "review": "The YAML frontmatter of a REVIEW.md. Unknown keys are errors at every level; "
    "cross-field rules (bindings, prepare, uses) are checked by the parser, not by this schema.",
    "review-pack": "The YAML frontmatter of a review pack's own REVIEW.md. Unknown keys are errors at every level.",
    "attestation": "A review attestation as a verifier reads it. Unknown members are allowed and are "
    "covered by the signature. verdict MUST equal the fold of lanes; the signature covers the canonical JSON "
    "with attestor.signature removed.",
}


class UnknownDocumentError(ValueError):
    """The name is not one of :data:`DOCUMENTS`."""


def _model(name: str) -> type[Any]:
    if name == "review":
        from agentreview.model.manifest import ReviewManifest

        return ReviewManifest
    if name == "review-pack":
        from agentreview.model.manifest import ReviewPack

        return ReviewPack
    raise UnknownDocumentError(f"unknown document '{name}': use one of {', '.join(DOCUMENTS)}")


def _allow_string_target(schema: dict[str, Any]) -> None:
    # `target: git-range` is accepted as the short form of `{kind: git-range}` by a
    # before-validator the generated schema cannot see.
    prop = schema["properties"]["target"]
    schema["properties"]["target"] = {"anyOf": [{"const": "git-range"}, prop]}


def _pack_ref_pattern(schema: dict[str, Any]) -> None:
    # The model checks `uses[].pack` in Python (its look-ahead is beyond pydantic's regex
    # engine); JSON Schema's ECMA-262 patterns have look-ahead, so the schema states it.
    from agentreview.model.packref import PACK_REF_PATTERN

    schema["$defs"]["UsesEntry"]["properties"]["pack"]["pattern"] = PACK_REF_PATTERN


def _closed_key_patterns(node: Any) -> None:
    # pydantic writes ``dict[Id, X]`` as ``patternProperties`` alone, which lets a key that does
    # not match the pattern through unchecked; the model refuses such a key, so the schema must.
    if isinstance(node, dict):
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) == 1 and "additionalProperties" not in node:
            ((pattern, value_schema),) = patterns.items()
            del node["patternProperties"]
            node["propertyNames"] = {"pattern": pattern, **node.get("propertyNames", {})}
            node["additionalProperties"] = value_schema
        for value in node.values():
            _closed_key_patterns(value)
    elif isinstance(node, list):
        for value in node:
            _closed_key_patterns(value)


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document ``name``: review, review-pack or attestation."""
    if name == "attestation":
        return _attestation_schema()
    model = _model(name)
    from agentreview.model.manifest_fields import adapter

    generated = adapter(model).json_schema(by_alias=True, mode="validation")
    if name == "review":
        _allow_string_target(generated)
        _pack_ref_pattern(generated)
    _closed_key_patterns(generated)
    generated.pop("title", None)
    generated.pop("description", None)
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"urn:agentreview:v1:{name}",
        "title": _TITLES[name],
        "description": _DESCRIPTIONS[name],
        **generated,
    }


def _attestation_schema() -> dict[str, Any]:
    from importlib.resources import files

    text = files("agentreview.model").joinpath("attestation.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_text(name: str) -> str:
    """The schema as the committed files hold it: two-space indent, trailing newline."""
    return json.dumps(schema_for(name), indent=2, ensure_ascii=False) + "\n"
