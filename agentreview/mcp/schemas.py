"""The tools' JSON Schemas: output schemas stay open, so a new field never breaks a validating client; input
schemas are closed, so an unknown argument is refused, never ignored."""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]

STRING: JSON = {"type": "string"}
NULLABLE_STRING: JSON = {"type": ["string", "null"]}
BOOLEAN: JSON = {"type": "boolean"}
SHA40: JSON = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
SHA64: JSON = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
VERDICT: JSON = {"type": "string", "enum": ["pass", "block", "incomplete"]}


def obj(required: dict[str, JSON], optional: dict[str, JSON] | None = None) -> JSON:
    """An object with these ``required`` members and these ``optional`` ones; other members allowed."""
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": sorted(required)}


LANE: JSON = obj({"id": STRING, "status": STRING})
ATTESTATION: JSON = obj({"runId": STRING, "verdict": VERDICT, "lanes": {"type": "array"}})

# One view of a run: what review_run (waiting or not) and review_status answer.
RUN_VIEW: JSON = obj(
    {"runId": STRING, "status": {"type": "string", "enum": ["running", "done", "failed", "cancelled"]}},
    {
        "lanes": {"type": "array", "items": LANE},
        "binding": NULLABLE_STRING,
        "range": obj({}, {"base": NULLABLE_STRING, "head": NULLABLE_STRING}),
        "repoRemote": STRING,
        "requesterSessionId": STRING,
        "verdict": VERDICT,
        "error": STRING,
        "attestation": ATTESTATION,
        "reviewId": STRING,
        "cached": BOOLEAN,
        "ledgerPath": STRING,
        "signingError": STRING,
        "superseded": BOOLEAN,
        "supersededBy": STRING,
        "startedAt": STRING,
    },
)

CANCEL: JSON = obj({"runId": STRING, "cancelled": BOOLEAN, "status": STRING})

# A review_ledger row: a recorded review, or (with includeRunning) one still running.
LEDGER_ROW: JSON = obj(
    {"runId": STRING},
    {
        "status": STRING,
        "reviewId": STRING,
        "binding": STRING,
        "verdict": VERDICT,
        "repoRemote": STRING,
        "baseSha": SHA40,
        "headSha": SHA40,
        "rangeSha": SHA64,
        "manifestSha": STRING,
        "createdAt": STRING,
        "cwd": STRING,
        "dirty": BOOLEAN,
        "requester": {"type": ["object", "string"]},
        "pr": {"type": "object"},
        "signed": BOOLEAN,
        "lanes": {"type": "array", "items": LANE},
    },
)
LEDGER: JSON = obj({"total": {"type": "integer", "minimum": 0}, "attestations": {"type": "array", "items": LEDGER_ROW}})

EXPORT: JSON = obj({"path": STRING, "runId": STRING, "verdict": VERDICT})

PR_REPO = "^[^/\\s]+/[^/\\s]+$"
PR_URL = "^https?://\\S+$"
PULL_REQUEST: JSON = {
    "type": "object",
    "properties": {
        "provider": {"const": "github", "title": "Provider", "description": "Always 'github'."},
        "repo": {"type": "string", "pattern": PR_REPO, "title": "Repository", "description": "owner/name on GitHub"},
        "number": {"type": "integer", "minimum": 1, "title": "Number", "description": "The pull request's number."},
        "url": {"type": "string", "pattern": PR_URL, "title": "URL", "description": "the pull request's https:// URL"},
    },
    "required": ["number", "provider", "repo", "url"],
    "additionalProperties": False,
}

PR_LINK: JSON = obj(
    {"ok": BOOLEAN},
    {
        "attestation": LEDGER_ROW,
        "pr": obj({"provider": STRING, "repo": STRING, "number": {"type": "integer"}, "url": STRING}),
        "linkedVia": STRING,
        "status": {"type": "object"},
        "snapshots": {"type": "array", "items": {"type": "object"}},
        "error": obj({"code": STRING, "message": STRING}),
        "warnings": {"type": "array", "items": STRING},
    },
)

PRESET_ROW: JSON = obj(
    {"name": STRING, "provider": STRING, "source": {"type": "string", "enum": ["builtin", "user"]},
     "installed": BOOLEAN, "usable": BOOLEAN},
    {"model": NULLABLE_STRING, "version": NULLABLE_STRING, "detail": NULLABLE_STRING, "probe": STRING},
)  # fmt: skip
PRESETS: JSON = obj({"total": {"type": "integer", "minimum": 0}, "presets": {"type": "array", "items": PRESET_ROW}})

OUTPUT: dict[str, JSON] = {
    "review_run": RUN_VIEW,
    "review_status": RUN_VIEW,
    "review_cancel": CANCEL,
    "review_ledger": LEDGER,
    "review_export": EXPORT,
    "review_pr": PR_LINK,
    "review_presets": PRESETS,
}

# Argument names as a person reads them (the SDK would title `manifestPath` "Manifestpath").
TITLES = {
    "cwd": "Working directory",
    "manifestPath": "Manifest path",
    "binding": "Binding",
    "base": "Base",
    "head": "Head",
    "nocache": "No cache",
    "compose": "Compose",
    "wait": "Wait",
    "requesterSessionId": "Requester session id",
    "pr": "Pull request",
    "supersede": "Supersede",
    "detach": "Detach",
    "runId": "Run id",
    "repoRemote": "Repository remote",
    "range": "Range",
    "subtree": "Session subtree",
    "includeRunning": "Include running",
    "limit": "Limit",
    "rangeSha": "Range sha",
    "outPath": "Output path",
    "prUrl": "Pull request URL",
    "probe": "Probe each CLI",
}


def strict_input(generated: JSON) -> JSON:
    """The input schema the SDK generated from a tool's signature, closed and readable: no unknown
    argument, each property titled by :data:`TITLES`, ``pr`` as its exact shape."""
    schema = copy.deepcopy(generated)
    schema.pop("$defs", None)
    schema.pop("title", None)
    schema["additionalProperties"] = False
    for name, prop in schema.get("properties", {}).items():
        if name not in TITLES:
            raise ValueError(f"argument {name!r} has no title in agentreview.mcp.schemas.TITLES")
        if name == "pr":  # the SDK sees `dict | None`; the tool takes exactly this object (or null)
            prop["anyOf"] = [copy.deepcopy(PULL_REQUEST), {"type": "null"}]
        prop["title"] = TITLES[name]
    return schema
