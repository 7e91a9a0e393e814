"""The cross-field rules of AIP-62 (§Cross-field rules 1–11) that field shapes cannot express.

Each rule returns problems rather than raising, so a parse reports every violation at once.
:func:`finalize_bindings` is the one that raises: pack resolution applies it again to the merged check list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.manifest.placeholders import HOST_VARS, LANE_VARS, compile_checks, placeholders_in
from agentreview.model.errors import AgentreviewError
from agentreview.model.problems import ManifestError, Problem
from agentreview.model.suggest import closest

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.check_model import CheckModel
    from agentreview.model.manifest import AgentCheck, Binding, CommandCheck

    AnyCheck = CommandCheck | AgentCheck | CheckModel

IMPLIED_BINDING = "default"


def duplicate_problems(items: Iterable[tuple[int, str]], list_name: str, field: str) -> list[Problem]:
    """Rule 1: ``checks[].id`` / ``uses[].as`` values are unique. Reports each repeat where it repeats."""
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    for index, value in items:
        if value in seen:
            problems.append(
                Problem(
                    f"{list_name}[{index}].{field}",
                    f"{list_name}[] lists '{value}' more than once (first at {list_name}[{seen[value]}])",
                    f"give each entry of {list_name}[] its own {field}",
                )
            )
        else:
            seen[value] = index
    return problems


def validate_reviewer_chain(label: str, preset: str | None, fallbacks: Sequence[str]) -> list[Problem]:
    """A reviewer chain ``[preset, *fallbacks]`` names each preset once; ``label`` is the location reported.

    ``preset`` is None when the primary is not known yet (a pack check's); then only the fallbacks are compared.
    """
    problems: list[Problem] = []
    seen: set[str] = set()
    for fallback in fallbacks:
        if preset is not None and fallback == preset:
            problems.append(
                Problem(
                    label,
                    f"fallbackPresets lists '{fallback}', which is already the primary preset",
                    f"remove '{fallback}' from fallbackPresets",
                )
            )
        elif fallback in seen:
            problems.append(
                Problem(
                    label,
                    f"fallbackPresets lists '{fallback}' more than once",
                    f"keep one '{fallback}' in fallbackPresets",
                )
            )
        seen.add(fallback)
    return problems


def run_placeholder_problems(indexed_checks: Iterable[tuple[int, Any]], list_name: str = "checks") -> list[Problem]:
    """Rule 11 for every command check of one document, whether or not a binding selects it.

    An ``effects: true`` check runs only in ``prepare`` (rules 4 and 5), any other only as a lane, so this
    per-check test is exactly the compile-time rule.
    """
    problems: list[Problem] = []
    for index, check in indexed_checks:
        if getattr(check, "kind", None) != "command":
            continue
        effects = bool(getattr(check, "effects", False))
        bound = set(HOST_VARS) | (set() if effects else set(LANE_VARS))
        shown = ", ".join("{" + n + "}" for n in sorted(bound))
        for name in sorted(placeholders_in(check.run) - bound):
            if effects and name == "head":
                message = (
                    f"check '{check.id}' is an 'effects: true' (prepare) check and uses {{head}}, which is not bound "
                    "yet — prepare runs before the range is frozen"
                )
                fix = "use {base} or {changed} in a prepare step"
            else:
                message = f"check '{check.id}' uses placeholder {{{name}}}, which is not bound — bound: {shown}"
                fix = f"use one of {shown}, or write {{{{{name}}}}} for a literal '{{{name}}}'"
            problems.append(Problem(f"{list_name}[{index}].run", message, fix))
    return problems


def binding_problems(
    checks: Sequence[AnyCheck],
    bindings: Mapping[str, Binding] | None,
    *,
    namespaces: Iterable[str] | None = None,
    opaque_ids: Iterable[str] = (),
    compile_placeholders: bool = True,
) -> tuple[dict[str, Binding], list[Problem]]:
    """Rules 2–7 (and 9 when ``namespaces`` is given), plus rule 11 per binding when asked.

    With ``namespaces`` (a manifest with ``uses``, packs not resolved yet) a namespaced ref must name a
    declared ``as`` and is not looked up. ``opaque_ids`` are checks whose shape was invalid (already
    reported): a ref to one is not "unknown". Returns the finalized bindings and the problems.
    """
    from agentreview.model.manifest import Binding

    by_id = {c.id: c for c in checks}
    opaque = set(opaque_ids)
    declared = set(namespaces) if namespaces is not None else None
    problems: list[Problem] = []
    if not bindings:
        if declared is not None:
            return {}, problems  # the parser reports rule 8 itself
        lanes = [c.id for c in checks if not _effects(c)]
        if not lanes:
            if not opaque:
                problems.append(
                    Problem(
                        "bindings",
                        f"no bindings declared and no non-effects check to imply a '{IMPLIED_BINDING}' binding from",
                        "add a check without 'effects: true', or declare a binding",
                    )
                )
            return {}, problems
        bindings = {IMPLIED_BINDING: Binding(checks=lanes)}
        implied = True
    else:
        implied = False
    for name, binding in bindings.items():
        where = f"bindings.{name}" if not implied else f"bindings ('{IMPLIED_BINDING}' implied)"
        problems += _one_binding(name, where, binding, by_id, opaque, declared)
        if compile_placeholders:
            problems += compile_checks(binding, by_id, binding_name=name)
    return dict(bindings), problems


def _one_binding(
    name: str,
    where: str,
    binding: Binding,
    by_id: Mapping[str, AnyCheck],
    opaque: set[str],
    declared: set[str] | None,
) -> list[Problem]:
    problems: list[Problem] = []
    undecided = False  # a ref whose check is not known yet (opaque, or from a pack at parse time)
    for phase in ("prepare", "checks"):
        refs = getattr(binding, phase)
        seen: set[str] = set()
        for index, ref in enumerate(refs):
            location = f"{where}.{phase}[{index}]"
            if ref in seen:
                problems.append(
                    Problem(location, f"binding '{name}' {phase} lists '{ref}' more than once", "list it once")
                )
                continue
            seen.add(ref)
            if declared is not None and "/" in ref:
                undecided = True
                namespace = ref.split("/", 1)[0]
                if namespace not in declared:
                    problems.append(
                        Problem(
                            location,
                            f"binding '{name}' references '{ref}', but no uses[] entry declares namespace "
                            f"'{namespace}'",
                            f"add a uses[] entry with as: {namespace}, or fix the ref",
                        )
                    )
                continue
            if ref in opaque:
                undecided = True
                continue
            check = by_id.get(ref)
            if check is None:
                near = closest(ref, by_id)
                problems.append(
                    Problem(
                        location,
                        f"binding '{name}' {phase} references unknown check '{ref}'"
                        + (f" — did you mean '{near}'?" if near else ""),
                        f"write '{near}'"
                        if near
                        else "declare the check under checks[] or fix the ref (pack checks are '<as>/<id>')",
                    )
                )
                continue
            problems += _placement(name, phase, ref, check, location)
    if not undecided and not _selects_blocking(binding, by_id):
        problems.append(
            Problem(
                f"{where}.checks",
                f"binding '{name}' selects no blocking check — its verdict could never block, so it would attest "
                "nothing",
                "select at least one check without 'blocking: false'",
            )
        )
    return problems


def _placement(name: str, phase: str, ref: str, check: AnyCheck, location: str) -> list[Problem]:
    """Rules 4 and 5: prepare holds only effects checks; checks holds none."""
    if phase == "prepare" and not _effects(check):
        return [
            Problem(
                location,
                f"binding '{name}' prepare lists '{ref}', which is not an 'effects: true' check — prepare is for "
                "mutation-capable steps",
                f"move '{ref}' under the binding's 'checks', or mark the command check 'effects: true'",
            )
        ]
    if phase == "checks" and _effects(check):
        return [
            Problem(
                location,
                f"binding '{name}' checks lists '{ref}', an 'effects: true' check — a mutation-capable check can "
                "only run in a binding's 'prepare' phase, never as an attesting lane",
                f"move '{ref}' to the binding's 'prepare', or drop 'effects: true' if it does not change the tree",
            )
        ]
    return []


def _selects_blocking(binding: Binding, by_id: Mapping[str, AnyCheck]) -> bool:
    return any((c := by_id.get(ref)) is not None and c.blocking and not _effects(c) for ref in binding.checks)


def _effects(check: Any) -> bool:
    """Whether a check may change the tree; a check kind a plugin contributes never may."""
    return bool(getattr(check, "effects", False))


def finalize_bindings(
    checks: Sequence[AnyCheck],
    bindings: dict[str, Binding] | None,
    *,
    path: Path | None = None,
) -> dict[str, Binding]:
    """Rules 2–7 and 11 over the complete check list (local plus pack checks): the bindings that run,
    or :class:`ManifestError` listing every violation."""
    final, problems = binding_problems(checks, bindings)
    if problems:
        raise ManifestError(path, problems)
    return final


def resolve_binding(review_id: str, bindings: Mapping[str, Binding], name: str | None) -> tuple[str, Binding]:
    """The binding to run: the one named; else the only one; else ``default``.

    An unknown or ambiguous one is a fact about the manifest, so could-not-run (exit 3), as in the
    reference (reference-notes 5.1)."""
    available = ", ".join(bindings) or "(none)"
    if name is not None:
        if name in bindings:
            return name, bindings[name]
        near = closest(name, bindings)
        hint = f"did you mean '{near}'? available: {available}" if near else f"available: {available}"
        raise AgentreviewError(f"review '{review_id}' has no binding '{name}' — {hint}")
    if len(bindings) == 1:
        only = next(iter(bindings))
        return only, bindings[only]
    if IMPLIED_BINDING in bindings:
        return IMPLIED_BINDING, bindings[IMPLIED_BINDING]
    raise AgentreviewError(
        f"review '{review_id}' declares several bindings ({available}) — name one with --binding "
        f"(e.g. --binding {next(iter(bindings))}), or name the one to run by default 'default' in REVIEW.md"
    )
