"""Read and parse a REVIEW.md (``kind: review``) or a pack's REVIEW.md (``kind: review-pack``).

Parse loudly (AIP-62 design principle 6): every problem found is reported at
once — each schema error translated into a one-line message with its location
(``checks[2].timeoutMs``), the file line, and a fix, followed by every
cross-field violation (``agentreview.manifest.rules``). A manifest is accepted only when
there is no problem at all; nothing is defaulted around an error.

The input is hostile until proven otherwise: size-capped, strict UTF-8, and read
through :mod:`agentreview.manifest.yaml_safe` (YAML 1.2 scalars, no anchors, no
duplicate keys, bounded depth).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agentreview.model.packref import GitPackRefError, parse_git_pack_ref
from agentreview.model.problems import ManifestError, Problem

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import ValidationError

    from agentreview.model.manifest import Binding, ReviewManifest, ReviewPack

MAX_MANIFEST_BYTES = 1 << 20
MAX_PROBLEMS = 100
BOM = "\ufeff"


# --------------------------------------------------------------------------- reading


def read_manifest_bytes(path: Path) -> bytes:
    """The manifest's bytes exactly as on disk (they are what ``manifestSha`` hashes).

    Refuses a missing file, a directory, more than :data:`MAX_MANIFEST_BYTES`, and non-UTF-8.
    """
    path = Path(path)
    shown = path.absolute()
    if not path.exists():
        raise ManifestError(shown, [Problem("file", "does not exist", "create it, or pass the right --manifest path")])
    if path.is_dir():
        raise ManifestError(shown, [Problem("file", "is a directory", "pass the REVIEW.md file inside it")])
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise ManifestError(shown, [Problem("file", f"cannot be read ({exc.strerror or exc})", "")]) from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(
            shown,
            [Problem("file", f"is larger than {MAX_MANIFEST_BYTES} bytes", "keep the manifest small; move prose out")],
        )
    _decode(data, shown)
    return data


def _decode(source: bytes, path: Path | None) -> str:
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        raise ManifestError(
            path,
            [Problem("file", f"is not valid UTF-8 (byte {exc.start})", "save the file as UTF-8", line)],
        ) from None


@dataclass(frozen=True)
class Frontmatter:
    """The mapping between the ``---`` lines, the file line paths map to, and the markdown body."""

    data: dict[str, Any]
    lines: dict[tuple[str | int, ...], int]
    body: str


def load_frontmatter(source: bytes, path: Path | None = None) -> Frontmatter:
    """Split ``---`` / YAML / ``---`` and read the YAML strictly. A leading BOM is accepted and ignored."""
    from agentreview.manifest.yaml_safe import YamlError, load

    text = _decode(source, path)
    if text.startswith(BOM):
        text = text[1:]
    rows = text.split("\n")
    if rows[0].rstrip("\r \t") != "---":
        raise ManifestError(
            path,
            [Problem("frontmatter", "missing: the file must start with a '---' line", "begin with ---, YAML, ---", 1)],
        )
    close = next((i for i in range(1, len(rows)) if rows[i].rstrip("\r \t") == "---"), None)
    if close is None:
        raise ManifestError(
            path, [Problem("frontmatter", "is not closed: no '---' line after line 1", "end the YAML with ---", 1)]
        )
    yaml_text = "\n".join(row.removesuffix("\r") for row in rows[1:close]) + "\n"
    try:
        loaded = load(yaml_text, first_line=2)
    except YamlError as exc:
        raise ManifestError(path, [Problem("frontmatter", exc.reason, "", exc.line)]) from None
    if loaded.value is None or loaded.value == {}:
        raise ManifestError(
            path, [Problem("frontmatter", "missing or empty frontmatter", "write the manifest between --- lines", 1)]
        )
    if not isinstance(loaded.value, dict):
        kind = "list" if isinstance(loaded.value, list) else type(loaded.value).__name__
        raise ManifestError(
            path, [Problem("frontmatter", f"must be a mapping of keys, got a {kind}", "write key: value lines", 2)]
        )
    return Frontmatter(loaded.value, loaded.lines, "\n".join(rows[close + 1 :]))


# --------------------------------------------------------------------------- review


@dataclass(frozen=True)
class ParsedReview:
    """A valid ``kind: review`` manifest with its source bytes and the bindings that apply.

    ``bindings`` are final (including the implied ``default``) when there is no ``uses``;
    with ``uses`` they are the explicit bindings, re-validated after pack resolution.
    """

    manifest: ReviewManifest
    source: bytes
    path: Path | None
    body: str
    bindings: dict[str, Binding]

    @property
    def manifest_sha(self) -> str:
        from agentreview.model.digests import manifest_sha

        return manifest_sha(self.source)


def parse_review_file(path: Path) -> ParsedReview:
    """Read and parse a REVIEW.md from disk."""
    path = Path(path).absolute()
    return parse_review(read_manifest_bytes(path), path)


def parse_review(source: bytes, path: Path | None = None) -> ParsedReview:
    """Parse a ``kind: review`` REVIEW.md; raise :class:`ManifestError` listing every problem."""
    from pydantic import ValidationError

    from agentreview.model.manifest import ReviewManifest

    path = Path(path).absolute() if path is not None else None
    front = load_frontmatter(source, path)
    data = front.data
    if data.get("kind") == "review-pack":
        raise ManifestError(
            path,
            [
                Problem(
                    "kind",
                    "found kind 'review-pack': this is a review pack, which is not runnable on its own",
                    "import it from a consumer REVIEW.md with uses: [{pack: <path>, as: <name>}]; "
                    "'agentreview check --manifest <this file>' validates the pack itself",
                    front.lines.get(("kind",)),
                )
            ],
        )
    problems: list[Problem] = []
    manifest = None
    try:
        manifest = ReviewManifest.model_validate(data)
    except ValidationError as exc:
        problems += _schema_problems(exc, data, is_pack=False)
    cross, bindings = _review_rules(data)
    problems += cross
    if problems:
        _fail(path, problems, front.lines)
    assert manifest is not None
    return ParsedReview(manifest, source, path, front.body, bindings)


def _review_rules(data: dict[str, Any]) -> tuple[list[Problem], dict[str, Binding]]:
    """Every cross-field rule, over the parts of the manifest whose shape is valid.

    A check, binding or uses entry with a bad shape is left out (its schema error is
    reported already); a valid-shaped rest is still checked, so one typo never hides
    another error.
    """
    from agentreview.manifest import rules
    indexed, opaque = _valid_checks(data.get("checks"), is_pack=False)
    raw_checks = data.get("checks") if isinstance(data.get("checks"), list) else []
    problems = rules.duplicate_problems(_raw_ids(raw_checks, "id"), "checks", "id")
    for index, check in indexed:
        if check.kind == "agent":
            problems += rules.validate_reviewer_chain(
                f"checks[{index}].fallbackPresets", check.preset, check.fallbackPresets
            )
    problems += rules.run_placeholder_problems(indexed)
    raw_uses = data.get("uses") if isinstance(data.get("uses"), list) else []
    problems += rules.duplicate_problems(_raw_ids(raw_uses, "as"), "uses", "as")
    problems += _uses_chain_problems(raw_uses)
    namespaces = {entry["as"] for entry in raw_uses if isinstance(entry, dict) and isinstance(entry.get("as"), str)}
    bindings = _valid_bindings(data.get("bindings"))
    checks = [check for _, check in indexed]
    if data.get("uses") is not None and not isinstance(data.get("uses"), list):
        return problems, {}  # `uses` has a bad shape (reported): which refs are pack refs is unknowable
    if raw_uses and not data.get("bindings"):
        problems.append(
            Problem(
                "bindings",
                "uses[] requires at least one explicit binding — the implied 'default' binding only knows local "
                "checks, which would silently exclude every check a pack brings in",
                "declare bindings: that list the local and '<as>/<id>' checks to run",
            )
        )
        return problems, {}
    if bindings is None or not raw_checks:  # a bad shape (reported): refs could not be judged
        return problems, {}
    final, binding_problems = rules.binding_problems(
        checks,
        bindings,
        namespaces=namespaces if raw_uses else None,
        opaque_ids=opaque,
        compile_placeholders=False,  # rules.run_placeholder_problems covered every local check
    )
    return problems + binding_problems, final


def _uses_chain_problems(raw_uses: list[Any]) -> list[Problem]:
    """Reviewer chains that can already be judged at parse time (the pack's own preset is unknown)."""
    from agentreview.manifest import rules
    from agentreview.model.manifest import UsesEntry

    problems: list[Problem] = []
    for index, raw in enumerate(raw_uses):
        entry = _try(UsesEntry, raw)
        if entry is None:
            continue
        if entry.fallbackPresets is not None:
            problems += rules.validate_reviewer_chain(
                f"uses[{index}].fallbackPresets", entry.preset, entry.fallbackPresets
            )
        for check_id, override in entry.overrides.items():
            if override.fallbackPresets is not None or override.preset is not None:
                preset = override.preset or entry.preset
                fallbacks = override.fallbackPresets if override.fallbackPresets is not None else entry.fallbackPresets
                problems += rules.validate_reviewer_chain(
                    f"uses[{index}].overrides.{check_id}.fallbackPresets", preset, fallbacks or []
                )
    return problems


def _try(model: Any, raw: Any) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def _raw_ids(raw: list[Any], field: str) -> list[tuple[int, str]]:
    return [(i, x[field]) for i, x in enumerate(raw) if isinstance(x, dict) and isinstance(x.get(field), str)]


@functools.lru_cache(maxsize=2)
def _check_adapter(is_pack: bool) -> Any:
    """One validator per check union, built once: building it costs milliseconds per call."""
    from pydantic import TypeAdapter

    from agentreview.model.manifest import Check, PackCheck

    return TypeAdapter(PackCheck if is_pack else Check)


def _valid_checks(raw: Any, *, is_pack: bool) -> tuple[list[tuple[int, Any]], set[str]]:
    """Checks that validate on their own, by index, and the ids of those that do not."""
    from pydantic import ValidationError

    if not isinstance(raw, list):
        return [], set()
    adapter = _check_adapter(is_pack)
    valid: list[tuple[int, Any]] = []
    opaque: set[str] = set()
    for index, item in enumerate(raw):
        try:
            valid.append((index, adapter.validate_python(item)))
        except ValidationError:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                opaque.add(item["id"])
    return valid, opaque


def _valid_bindings(raw: Any) -> dict[str, Binding] | None:
    """The declared bindings whose shape is valid; ``{}`` when none are declared; None for a bad shape."""
    from agentreview.model.manifest import Binding

    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return None
    out: dict[str, Binding] = {}
    for name, value in raw.items():
        binding = _try(Binding, value)
        if binding is not None:
            out[name] = binding
    return out


# --------------------------------------------------------------------------- pack


def parse_pack(source: bytes, path: Path | None = None) -> ReviewPack:
    """Parse a pack's REVIEW.md (``kind: review-pack``); raise :class:`ManifestError` listing every problem."""
    from pydantic import ValidationError

    from agentreview.manifest import rules
    from agentreview.model.manifest import ReviewPack

    path = Path(path).absolute() if path is not None else None
    front = load_frontmatter(source, path)
    data = front.data
    if data.get("kind") == "review":
        raise ManifestError(
            path,
            [
                Problem(
                    "kind",
                    "found kind 'review': this is a runnable review manifest, not a review pack",
                    "run it with 'agentreview run' and validate it with 'agentreview check'; a pack declares "
                    "kind: review-pack",
                    front.lines.get(("kind",)),
                )
            ],
        )
    problems: list[Problem] = []
    pack = None
    try:
        pack = ReviewPack.model_validate(data)
    except ValidationError as exc:
        # The model's own duplicate-id check duplicates rule 1 below; keep the located one.
        problems += [p for p in _schema_problems(exc, data, is_pack=True) if "more than once" not in p.message]
    raw_checks = data.get("checks") if isinstance(data.get("checks"), list) else []
    problems += rules.duplicate_problems(_raw_ids(raw_checks, "id"), "checks", "id")
    indexed, _ = _valid_checks(raw_checks, is_pack=True)
    problems += rules.run_placeholder_problems(indexed)
    if problems:
        _fail(path, problems, front.lines)
    assert pack is not None
    return pack


# --------------------------------------------------------------------------- schema errors


_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out or "frontmatter"


def _path_of(location: str) -> tuple[str | int, ...]:
    """``bindings.local.checks[1]`` -> ``("bindings", "local", "checks", 1)`` for the line lookup."""
    head = location.split(" ", 1)[0]
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


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's discriminator tags (``checks.2.agent.effects``) and dict-key markers."""
    out: list[Any] = []
    for seg in loc:
        if seg in ("command", "agent") and out and isinstance(out[-1], int):
            continue
        if seg == "[key]":
            continue
        out.append(seg)
    return tuple(out)


def _at(data: Any, loc: tuple[Any, ...]) -> Any:
    for seg in loc:
        in_list = isinstance(data, list) and isinstance(seg, int) and seg < len(data)
        if in_list or (isinstance(data, dict) and seg in data):
            data = data[seg]
        else:
            return None
    return data


def _model_at(loc: tuple[Any, ...], data: Any, is_pack: bool) -> Any:
    """The model class that validates the mapping at ``loc`` (for listing its allowed keys)."""
    from agentreview.model import manifest as m

    if loc == ():
        return m.ReviewPack if is_pack else m.ReviewManifest
    if len(loc) == 2 and loc[0] == "checks":
        kind = (_at(data, loc) or {}).get("kind") if isinstance(_at(data, loc), dict) else None
        table = (
            {"command": m.PackCommandCheck, "agent": m.PackAgentCheck}
            if is_pack
            else {
                "command": m.CommandCheck,
                "agent": m.AgentCheck,
            }
        )
        return table.get(kind)
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
    return ", ".join(field.alias or name for name, field in model.model_fields.items())


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


_PATTERN_TEXT = {
    "ID": ("is not a valid id", "use lowercase letters, digits and '-', starting with a letter (at most 64)"),
    "REF": ("is not a valid check ref", "write a check id, or '<as>/<id>' for a pack check"),
    "SEMVER": ("is not a semver version", "write a version like 1.0.0"),
}


_UNLISTED = "(not listed)"


def _schema_problems(exc: ValidationError, data: dict[str, Any], *, is_pack: bool) -> list[Problem]:
    """Translated schema errors; past :data:`MAX_PROBLEMS` each is only counted (translation costs time)."""
    errors = exc.errors(include_url=False)
    unlisted = Problem("manifest", _UNLISTED)
    return [_translate(err, data, is_pack) if i < MAX_PROBLEMS else unlisted for i, err in enumerate(errors)]


def _fail(path: Path | None, problems: list[Problem], lines: dict[tuple[str | int, ...], int]) -> NoReturn:
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


def _translate(err: Any, data: dict[str, Any], is_pack: bool) -> Problem:
    from agentreview.model import manifest as m

    loc = _clean_loc(tuple(err["loc"]))
    where = _location(loc)
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    last = loc[-1] if loc else None
    parent = _at(data, loc[:-1]) if loc else None
    in_agent = isinstance(parent, dict) and parent.get("kind") == "agent" and len(loc) == 3 and loc[0] == "checks"

    if kind == "missing":
        return Problem(where, "is required but missing", f"add '{last}'")
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1], data, is_pack)
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
    if last == "effects" and in_agent:
        return Problem(
            where,
            "'effects: true' is only supported on command checks",
            "remove 'effects' from the agent check — a reviewer is read-only",
        )
    if last == "effects" and is_pack and kind == "literal_error":
        return Problem(where, "a pack check may not set 'effects: true'", "remove 'effects' from the pack check")
    if loc == ("target",) and kind in ("model_type", "dict_type", "model_attributes_type"):
        return Problem(where, f"must be 'git-range' or a mapping, got {_shown(value)}", "write target: git-range")
    if len(loc) == 3 and loc[0] == "uses" and last == "pack" and isinstance(value, str) and value.startswith("git+"):
        try:
            parse_git_pack_ref(value)
        except GitPackRefError as ref_exc:
            return Problem(where, str(ref_exc), "pin the pack as git+https://<host>/<repo>#<40-hex commit sha>")
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern")
        key = {m.ID_PATTERN: "ID", m.REF_PATTERN: "REF", m.SEMVER_PATTERN: "SEMVER"}.get(pattern, "")
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
    if kind in ("dict_type", "model_type", "model_attributes_type"):
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
        return Problem(
            where,
            f"must be at most {ctx.get('le')}, got {_shown(value)}",
            "timeoutMs is milliseconds; one day is the most a lane may run",
        )
    if kind == "literal_error":
        return Problem(where, f"must be {ctx.get('expected')}, got {_shown(value)}", f"write {ctx.get('expected')}")
    if kind == "union_tag_invalid":
        return Problem(where, f"kind {ctx.get('tag')!r} is not a check kind", "use kind: command or kind: agent")
    if kind == "union_tag_not_found":
        return Problem(where, "the check has no 'kind'", "add kind: command or kind: agent")
    if kind == "value_error":
        fix = "write an npm name, ./path, /abs/path or git+https://<url>#<sha>" if last == "pack" else ""
        return Problem(where, str(err["msg"]).removeprefix("Value error, "), fix)
    return Problem(where, str(err["msg"]), "")
