"""Parse a REVIEW.md (``kind: review``) or a pack's REVIEW.md (``kind: review-pack``).

Parse loudly (AIP-62 design principle 6): every schema error and cross-field violation is reported at once, with
location, line and fix, and nothing is defaulted around an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agentreview.manifest.read import BOM, MAX_MANIFEST_BYTES, Frontmatter, load_frontmatter, read_manifest_bytes
from agentreview.model.packref import GitPackRefError, parse_git_pack_ref
from agentreview.model.problems import MAX_PROBLEMS, ManifestError, Problem
from agentreview.model.record import record

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.translate import Schema
    from agentreview.model.manifest import Binding, ReviewManifest, ReviewPack
    from agentreview.plugins.registry import Registry

__all__ = [
    "BOM",
    "MAX_MANIFEST_BYTES",
    "MAX_PROBLEMS",
    "Frontmatter",
    "GitPackRefError",
    "ManifestError",
    "ParsedReview",
    "Problem",
    "load_frontmatter",
    "parse_git_pack_ref",
    "parse_pack",
    "parse_review",
    "parse_review_file",
    "read_manifest_bytes",
]


# --------------------------------------------------------------------------- review


@record
class ParsedReview:
    """A valid ``kind: review`` manifest with its source bytes and the bindings that apply.

    ``bindings`` are final (including the implied ``default``) when there is no ``uses``;
    with ``uses`` they are the explicit bindings, re-validated after pack resolution.
    ``registry`` is the plugin registry the parse loaded (or was given) to validate a check
    kind a plugin contributes, else None: a run reuses it instead of loading plugins twice.
    """

    manifest: ReviewManifest
    source: bytes
    path: Path | None
    body: str
    bindings: dict[str, Binding]
    registry: Registry | None = field(default=None, compare=False, repr=False)

    @property
    def manifest_sha(self) -> str:
        from agentreview.model.digests import manifest_sha

        return manifest_sha(self.source)


def parse_review_file(path: Path, *, registry: Registry | None = None, home: Path | None = None) -> ParsedReview:
    """Read and parse a REVIEW.md from disk (with ``home``, through the parse memo)."""
    path = Path(path).absolute()
    return parse_review(read_manifest_bytes(path), path, registry=registry, home=home)


def parse_review(
    source: bytes, path: Path | None = None, *, registry: Registry | None = None, home: Path | None = None
) -> ParsedReview:
    """Parse a ``kind: review`` REVIEW.md; raise :class:`ManifestError` listing every problem.

    ``registry`` serves a plugin's check kind (loaded only when one appears and it is None); with ``home``,
    the parse memo (:mod:`agentreview.manifest.memo`) answers for bytes parsed before, the same answer.
    """
    path = Path(path).absolute() if path is not None else None
    if home is None:
        return _parse_review(source, path, registry)[0]
    from agentreview.manifest import memo

    hit = memo.recall_review(home, source)
    if hit is not None:
        manifest, bindings, body = hit
        return ParsedReview(manifest, source, path, body, bindings, registry)
    parsed, memoizable = _parse_review(source, path, registry)
    if memoizable:
        memo.remember_review(home, source, parsed.manifest, parsed.bindings)
    return parsed


def _parse_review(source: bytes, path: Path | None, registry: Registry | None) -> tuple[ParsedReview, bool]:
    """The full parse, and whether its conclusion may be memoized (no check kind a plugin contributes)."""
    from agentreview.manifest.kinds import find_plugin_kinds, used_plugin_kinds
    from agentreview.manifest.translate import Schema, fail
    from agentreview.model.manifest import ReviewManifest

    front = load_frontmatter(source, path)
    data = front.data
    if data.get("kind") == "review-pack":
        _wrong_kind(
            path,
            front,
            "found kind 'review-pack': this is a review pack, which is not runnable on its own",
            "import it from a consumer REVIEW.md with uses: [{pack: <path>, as: <name>}]; "
            "'agentreview check --manifest <this file>' validates the pack itself",
        )
    kinds = find_plugin_kinds(data.get("checks"), registry)
    schema = Schema(data, False, kinds.models, kinds.broken, kinds.warnings)
    manifest, problems = _schema_validated(ReviewManifest, data, schema)
    cross, bindings = _review_rules(data, kinds.models, manifest)
    problems += cross
    if problems:
        fail(path, problems, front.lines)
    assert manifest is not None
    parsed = ParsedReview(manifest, source, path, front.body, bindings, kinds.registry)
    return parsed, not used_plugin_kinds(data.get("checks"))


def _wrong_kind(path: Path | None, front: Frontmatter, message: str, fix: str) -> NoReturn:
    raise ManifestError(path, [Problem("kind", message, fix, front.lines.get(("kind",)))])


def _schema_validated(record: type[Any], data: dict[str, Any], schema: Schema) -> tuple[Any, list[Problem]]:
    """The record read from ``data``, or None and every problem found."""
    from agentreview.manifest.translate import schema_problems
    from agentreview.model.reader import ReadError, read

    try:
        return read(record, data, extra=schema.check_models), []
    except ReadError as exc:
        return None, schema_problems(exc.errors, schema)


def _review_rules(
    data: dict[str, Any], models: Mapping[str, type[Any]], manifest: ReviewManifest | None = None
) -> tuple[list[Problem], dict[str, Binding]]:
    """Every cross-field rule, over the parts of the manifest whose shape is valid.

    A part with a bad shape is left out (its schema error is reported already), so one typo never hides
    another error; when the whole ``manifest`` validated, its parts are the record's.
    """
    from agentreview.manifest import rules

    if manifest is not None:
        indexed, opaque = list(enumerate(manifest.checks)), set[str]()
    else:
        indexed, opaque = _valid_checks(data.get("checks"), is_pack=False, models=models)
    raw_checks = _list(data.get("checks"))
    problems = rules.duplicate_problems(_raw_ids(raw_checks, "id"), "checks", "id")
    for index, check in indexed:
        if check.kind == "agent":
            problems += rules.validate_reviewer_chain(
                f"checks[{index}].fallbackPresets", check.preset, check.fallbackPresets
            )
    problems += rules.run_placeholder_problems(indexed)
    raw_uses = _list(data.get("uses"))
    problems += rules.duplicate_problems(_raw_ids(raw_uses, "as"), "uses", "as")
    problems += _uses_chain_problems(raw_uses, manifest)
    namespaces = {entry["as"] for entry in raw_uses if isinstance(entry, dict) and isinstance(entry.get("as"), str)}
    bindings = dict(manifest.bindings or {}) if manifest is not None else _valid_bindings(data.get("bindings"))
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


def _uses_chain_problems(raw_uses: list[Any], manifest: ReviewManifest | None = None) -> list[Problem]:
    """Reviewer chains that can already be judged at parse time (the pack's own preset is unknown)."""
    from agentreview.manifest import rules
    from agentreview.model.manifest import UsesEntry

    problems: list[Problem] = []
    entries = manifest.uses if manifest is not None else [_try(UsesEntry, raw) for raw in raw_uses]
    for index, entry in enumerate(entries):
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


def _try(record: Any, raw: Any, extra: Mapping[str, type[Any]] | None = None) -> Any:
    """``raw`` read as ``record`` (a record class or a spec), or None when it has a problem (reported elsewhere)."""
    from agentreview.model.reader import ReadError, read

    try:
        return read(record, raw, extra=extra)
    except ReadError:
        return None


def _list(value: Any) -> list[Any]:
    """``value`` when it is a list (a shape error elsewhere is reported by the schema), else ``[]``."""
    return value if isinstance(value, list) else []


def _raw_ids(raw: list[Any], key: str) -> list[tuple[int, str]]:
    return [(i, x[key]) for i, x in enumerate(raw) if isinstance(x, dict) and isinstance(x.get(key), str)]


def _valid_checks(
    raw: Any, *, is_pack: bool, models: Mapping[str, type[Any]] | None = None
) -> tuple[list[tuple[int, Any]], set[str]]:
    """Checks that validate on their own, by index, and the ids of those that do not."""
    from agentreview.model.manifest import CHECK, PACK_CHECK

    if not isinstance(raw, list):
        return [], set()
    valid: list[tuple[int, Any]] = []
    opaque: set[str] = set()
    for index, item in enumerate(raw):
        check = _try(PACK_CHECK if is_pack else CHECK, item, models)
        if check is not None:
            valid.append((index, check))
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
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


def parse_pack(source: bytes, path: Path | None = None, *, home: Path | None = None) -> ReviewPack:
    """Parse a pack's REVIEW.md (``kind: review-pack``); raise :class:`ManifestError` listing every problem.

    A pack declares only the spec's kinds (overrides, namespacing and trust are defined for those two);
    ``home`` as for :func:`parse_review`.
    """
    path = Path(path).absolute() if path is not None else None
    if home is None:
        return _parse_pack(source, path)
    from agentreview.manifest import memo

    hit = memo.recall_pack(home, source)
    if hit is not None:
        return hit
    pack = _parse_pack(source, path)
    memo.remember_pack(home, source, pack)
    return pack


def _parse_pack(source: bytes, path: Path | None) -> ReviewPack:
    from agentreview.manifest import rules
    from agentreview.manifest.translate import Schema, fail
    from agentreview.model.manifest import ReviewPack

    front = load_frontmatter(source, path)
    data = front.data
    if data.get("kind") == "review":
        _wrong_kind(
            path,
            front,
            "found kind 'review': this is a runnable review manifest, not a review pack",
            "run it with 'agentreview run' and validate it with 'agentreview check'; a pack declares kind: review-pack",
        )
    pack, translated = _schema_validated(ReviewPack, data, Schema(data, is_pack=True))
    # The record's own duplicate-id check duplicates rule 1 below; keep the located one.
    problems = [p for p in translated if "more than once" not in p.message]
    raw_checks = _list(data.get("checks"))
    problems += rules.duplicate_problems(_raw_ids(raw_checks, "id"), "checks", "id")
    # the checks of a valid pack are its record's (validating each again would give the same)
    indexed = list(enumerate(pack.checks)) if pack is not None else _valid_checks(raw_checks, is_pack=True)[0]
    problems += rules.run_placeholder_problems(indexed)
    if problems:
        fail(path, problems, front.lines)
    assert pack is not None
    return pack
