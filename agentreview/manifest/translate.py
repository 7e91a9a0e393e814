"""The reader's errors (and a plugin model's), translated into :class:`Problem` lines a person can act on.

Each becomes one line with its location (``checks[2].timeoutMs``), file line and fix; :func:`fail` raises them
all, in file order, capping what a hostile file can print.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, NoReturn

from agentreview.model.packref import GitPackRefError, parse_git_pack_ref
from agentreview.model.problems import MAX_PROBLEMS, ManifestError, Problem
from agentreview.model.record import record

_UNLISTED = "(not listed)"


@record
class Schema:
    """What a translation needs besides the error: the raw document and which models validated it.

    ``check_models``: a used plugin kind -> its executor's model; ``broken_kinds``: a kind without a usable
    model -> (message, fix); ``plugin_warnings``: the registry's load warnings, counted for an unprovided kind.
    """

    data: dict[str, Any]
    is_pack: bool = False
    check_models: Mapping[str, type[Any]] = field(default_factory=dict)
    broken_kinds: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    plugin_warnings: tuple[str, ...] = ()


def schema_problems(errors: list[dict[str, Any]], schema: Schema) -> list[Problem]:
    """Translated schema errors; past :data:`MAX_PROBLEMS` each is only counted (translation costs time)."""
    unlisted = Problem("manifest", _UNLISTED)
    return [_translate(err, schema) if i < MAX_PROBLEMS else unlisted for i, err in enumerate(errors)]


def fail(path: Path | None, problems: list[Problem], lines: dict[tuple[str | int, ...], int]) -> NoReturn:
    """Raise with the problems in file order, at most :data:`MAX_PROBLEMS` of them listed.

    A hostile file must not flood the terminal; the rest is one counted line.
    """
    unlisted = sum(p.message == _UNLISTED for p in problems)
    listed = _with_lines(_dedupe([p for p in problems if p.message != _UNLISTED]), lines)
    more = unlisted + max(0, len(listed) - MAX_PROBLEMS)
    listed = listed[:MAX_PROBLEMS]
    if more:
        listed.append(
            Problem("manifest", f"{more} more problems not listed", "fix the problems above, then check again")
        )
    raise ManifestError(path, listed)


# --------------------------------------------------------------------------- locations and lines


_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def location(loc: tuple[Any, ...]) -> str:
    """``("checks", 2, "timeoutMs")`` -> ``checks[2].timeoutMs``."""
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out or "frontmatter"


def _path_of(where: str) -> tuple[str | int, ...]:
    """``bindings.local.checks[1]`` -> ``("bindings", "local", "checks", 1)`` for the line lookup."""
    head = where.split(" ", 1)[0]
    return tuple(int(m.group(2)) if m.group(2) else m.group(1) for m in _SEGMENT.finditer(head))


def _with_lines(problems: list[Problem], lines: dict[tuple[str | int, ...], int]) -> list[Problem]:
    out = []
    for problem in problems:
        if problem.line is None:
            key = _path_of(problem.location)
            while key and key not in lines:
                key = key[:-1]
            problem = problem._replace(line=lines.get(key))
        out.append(problem)
    return sorted(out, key=lambda p: p.line or 0)


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    out = []
    for problem in problems:
        if (problem.location, problem.message) not in seen:
            seen.add((problem.location, problem.message))
            out.append(problem)
    return out


def _at(data: Any, loc: tuple[Any, ...]) -> Any:
    for seg in loc:
        in_list = isinstance(data, list) and isinstance(seg, int) and seg < len(data)
        if in_list or (isinstance(data, dict) and seg in data):
            data = data[seg]
        else:
            return None
    return data


def _raw_kind(data: Any, loc: tuple[Any, ...]) -> Any:
    raw = _at(data, loc)
    return raw.get("kind") if isinstance(raw, dict) else None


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop the dict-key marker: ``("bindings", "Bad", "[key]")`` is located at the key itself."""
    return tuple(seg for seg in loc if seg != "[key]")


# --------------------------------------------------------------------------- wording


def _model_at(loc: tuple[Any, ...], schema: Schema) -> Any:
    """The model class that validates the mapping at ``loc`` (for listing its allowed keys)."""
    from agentreview.model import manifest as m

    is_pack = schema.is_pack
    if loc == ():
        return m.ReviewPack if is_pack else m.ReviewManifest
    if len(loc) == 2 and loc[0] == "checks":
        kind = _raw_kind(schema.data, loc)
        if is_pack:
            return {"command": m.PackCommandCheck, "agent": m.PackAgentCheck}.get(kind)
        builtin = {"command": m.CommandCheck, "agent": m.AgentCheck}
        return builtin.get(kind) or (schema.check_models.get(kind) if isinstance(kind, str) else None)
    if is_pack:
        return None
    if len(loc) == 2 and loc[0] == "bindings":
        return m.Binding
    if len(loc) == 2 and loc[0] == "uses":
        return m.UsesEntry
    if len(loc) == 4 and loc[0] == "uses" and loc[2] == "overrides":
        return m.Override
    return {("target",): m.Target, ("verdict",): m.VerdictConfig}.get(loc)


def _allowed_keys(model: Any) -> str:
    """The keys a record (a manifest dataclass) or a plugin's check model accepts, in declaration order."""
    from agentreview.model.reader import key_of

    if dataclasses.is_dataclass(model):
        return ", ".join(key_of(f) for f in dataclasses.fields(model))
    return ", ".join(f.alias or name for name, f in model.model_fields.items())


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean " + ("true" if value else "false")
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value) if isinstance(value, str) else str(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{'string' if isinstance(value, str) else type(value).__name__} {text}"


# A plugin's model (pydantic) and the reader name some mistakes differently; each group is worded once.
_MISSING = ("missing",)
_UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")
_NOT_A_MAPPING = ("dict_type", "model_type", "model_attributes_type", "dataclass_type")

_PATTERN_TEXT = {
    "ID": ("is not a valid id", "use lowercase letters, digits and '-', starting with a letter (at most 64)"),
    "REF": ("is not a valid check ref", "write a check id, or '<as>/<id>' for a pack check"),
    "SEMVER": ("is not a semver version", "write a version like 1.0.0"),
}


def _unknown_kind(where: str, tag: str, schema: Schema) -> Problem:
    """A check ``kind`` that is neither built in nor provided (usably) by a loaded plugin."""
    if tag in schema.broken_kinds and not schema.is_pack:
        return Problem(where, *schema.broken_kinds[tag])
    if schema.is_pack:
        return Problem(
            where,
            f"kind {tag!r} is not a check kind a review pack may declare",
            "use kind: command or kind: agent; a check kind a plugin provides belongs in the consumer's REVIEW.md",
        )
    failed = f"; {len(schema.plugin_warnings)} plugin(s) failed to load" if schema.plugin_warnings else ""
    return Problem(
        where,
        f"check kind {tag!r} is not provided by any installed plugin — install the plugin that provides it "
        f"(agentreview plugins lists what is installed{failed})",
        "install that plugin, or use kind: command or kind: agent",
    )


def _effects_not_false(where: str, value: Any, *, in_agent: bool) -> Problem:
    """``effects`` on a check that may only leave it false (an agent check, any pack check).

    ``true`` is the mistake worth naming; anything else (``0``, ``"false"``, null) is not the
    boolean ``false`` either, and says so.
    """
    if in_agent:
        told, fix = "'effects: true' is only supported on command checks", "remove 'effects' from the agent check"
        fix += " — a reviewer is read-only"
    else:
        told, fix = "a pack check may not set 'effects: true'", "remove 'effects' from the pack check"
    if value is not True:
        told = f"must be false or left out, got {_shown(value)}"
    return Problem(where, told, fix)


def _translate(err: Any, schema: Schema) -> Problem:
    from agentreview.model import manifest as m

    data, is_pack = schema.data, schema.is_pack
    loc = _clean_loc(tuple(err["loc"]))
    where = location(loc)
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    last = loc[-1] if loc else None
    parent = _at(data, loc[:-1]) if loc else None
    in_agent = isinstance(parent, dict) and parent.get("kind") == "agent" and len(loc) == 3 and loc[0] == "checks"

    if kind in _MISSING:
        return Problem(where, "is required but missing", f"add '{last}'")
    if kind in _UNKNOWN_KEY:
        model = _model_at(loc[:-1], schema)
        allowed = f" (allowed here: {_allowed_keys(model)})" if model else ""
        if is_pack and loc[:-1] == () and last in ("target", "bindings", "prepare", "uses", "name", "verdict"):
            return Problem(
                where,
                f"a review pack has no '{last}'",
                "remove it; targets, bindings and uses belong in the consumer's REVIEW.md",
            )
        if last == "fallbackPresets" and isinstance(parent, dict) and parent.get("kind") == "command":
            return Problem(where, "unknown key on a command check", "fallbackPresets applies to agent checks only")
        return Problem(where, f"unknown key '{last}'", f"remove it or fix its spelling{allowed}")
    if last == "effects" and (in_agent or (is_pack and len(loc) == 3 and loc[0] == "checks")):
        return _effects_not_false(where, value, in_agent=in_agent)
    if loc == ("target",) and kind in _NOT_A_MAPPING:
        return Problem(where, f"must be 'git-range' or a mapping, got {_shown(value)}", "write target: git-range")
    if len(loc) == 3 and loc[0] == "uses" and last == "pack" and isinstance(value, str) and value.startswith("git+"):
        try:
            parse_git_pack_ref(value)
        except GitPackRefError as ref_exc:
            return Problem(where, str(ref_exc), "pin the pack as git+https://<host>/<repo>#<40-hex commit sha>")
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern")
        key = {m.ID_PATTERN: "ID", m.REF_PATTERN: "REF", m.SEMVER_PATTERN: "SEMVER"}.get(str(pattern), "")
        text, fix = _PATTERN_TEXT.get(key, ("does not match " + str(pattern), ""))
        noun = "key" if err["loc"] and err["loc"][-1] == "[key]" else "value"
        return Problem(where, f"{noun} {value!r} {text}", fix)
    if kind == "string_type":
        return Problem(where, f"must be a string, got {_shown(value)}", "quote the value")
    if kind == "bool_type":
        fix = "write true or false"
        if isinstance(value, str) and value.lower() in ("yes", "no", "on", "off", "y", "n"):
            fix += " (YAML 1.2: yes/no/on/off are strings, not booleans)"
        return Problem(where, f"must be true or false, got {_shown(value)}", fix)
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return Problem(where, f"must be a whole number, got {_shown(value)}", "write digits only, without quotes")
    if kind in ("list_type", "tuple_type"):
        return Problem(where, f"must be a list, got {_shown(value)}", "write [a, b] or one '- item' per line")
    if kind in _NOT_A_MAPPING:
        return Problem(where, f"must be a mapping, got {_shown(value)}", "write 'key: value' entries")
    if kind == "string_too_short":
        return Problem(where, "must not be empty", "give it a value or remove the key")
    if kind == "string_too_long":
        return Problem(where, f"is longer than {ctx.get('max_length')} characters", "shorten it")
    if kind == "too_short":
        return Problem(where, "must list at least one item", "add an entry")
    if kind == "greater_than":
        return Problem(where, f"must be greater than {ctx.get('gt')}, got {_shown(value)}", "use a positive number")
    if kind == "less_than_equal":
        fix = "timeoutMs is milliseconds; one day is the most a lane may run" if last == "timeoutMs" else ""
        return Problem(where, f"must be at most {ctx.get('le')}, got {_shown(value)}", fix)
    if kind == "literal_error":
        return Problem(where, f"must be {ctx.get('expected')}, got {_shown(value)}", f"write {ctx.get('expected')}")
    if kind == "union_tag_invalid":
        raw_kind = _raw_kind(data, loc)
        if not isinstance(raw_kind, str):
            fix = "write kind: command or kind: agent"
            return Problem(where, f"kind must be a string, got {_shown(raw_kind)}", fix)
        return _unknown_kind(where, raw_kind, schema)
    if kind == "union_tag_not_found":
        return Problem(where, "the check has no 'kind'", "add kind: command or kind: agent")
    if kind == "value_error":
        fix = "write an npm name, ./path, /abs/path or git+https://<url>#<sha>" if last == "pack" else ""
        return Problem(where, str(err["msg"]).removeprefix("Value error, "), fix)
    return Problem(where, str(err["msg"]), "")
