"""JSON Schemas of the three agentreview/v1 documents, for editors, other hosts and CI linters.

The manifests' schemas are generated from their one declaration; the attestation's is the spec's contract,
shipped as package data. ``docs/schemas/`` holds the committed copies, and tests hold both to the readers.
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


def _record(name: str) -> type[Any]:
    from agentreview.model.manifest import ReviewManifest, ReviewPack

    if name == "review":
        return ReviewManifest
    if name == "review-pack":
        return ReviewPack
    raise UnknownDocumentError(f"unknown document '{name}': use one of {', '.join(DOCUMENTS)}")


def _allow_string_target(schema: dict[str, Any]) -> None:
    # `target: git-range` is the short form of `{kind: git-range}` (the record's before-step).
    prop = schema["properties"]["target"]
    schema["properties"]["target"] = {"anyOf": [{"const": "git-range"}, prop]}


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document ``name``: review, review-pack or attestation."""
    if name == "attestation":
        return _attestation_schema()
    from agentreview.model.reader import json_schema

    generated = json_schema(_record(name))
    if name == "review":
        _allow_string_target(generated)
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
