"""``{name}`` placeholders in a command check's ``run`` line (AIP-62 §Placeholders).

One regex decides what is a placeholder for the checks and the substitution alike, so they never disagree. An
unbound placeholder is an error: a silently literal ``{base}`` in a shell command would run something nobody wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentreview.model.errors import AgentreviewError
from agentreview.model.problems import Problem

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.manifest import Binding

PATTERN = re.compile(r"\{\{([A-Za-z][A-Za-z0-9_-]*)\}\}|(?<!\$)\{([A-Za-z][A-Za-z0-9_-]*)\}")
HOST_VARS = ("base", "changed")
LANE_VARS = ("base", "head")


class PlaceholderError(AgentreviewError):
    """A ``run`` line names a placeholder that has no value."""


def placeholders_in(text: str) -> set[str]:
    """The names used as placeholders in ``text`` (escapes ``{{name}}`` are not uses)."""
    return {m.group(2) for m in PATTERN.finditer(text) if m.group(2) is not None}


def _bound_tail(names: Iterable[str]) -> str:
    shown = ", ".join("{" + n + "}" for n in sorted(names))
    return f" — bound placeholders: {shown}" if shown else ""


def substitute(text: str, values: Mapping[str, str], *, label: str) -> str:
    """Replace every placeholder in one pass (a value is never re-expanded) and unescape ``{{name}}``.

    Raises :class:`PlaceholderError` naming ``label`` when a placeholder has no value.
    """
    missing = sorted(placeholders_in(text) - set(values))
    if missing:
        raise PlaceholderError(f"{label}: placeholder '{{{missing[0]}}}' has no value{_bound_tail(values)}")

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return "{" + match.group(1) + "}"
        return values[match.group(2)]

    return PATTERN.sub(replace, text)


def host_values(base_sha: str) -> dict[str, str]:
    """The host variables bound in prepare steps and lanes: ``{base}`` and the shell-quoted ``{changed}``."""
    return {"base": base_sha, "changed": "'[" + base_sha + "]'"}


def compile_checks(
    binding: Binding,
    checks_by_id: Mapping[str, Any],
    host_vars: Iterable[str] = HOST_VARS,
    *,
    binding_name: str | None = None,
) -> list[Problem]:
    """The compile-time placeholder rules for one binding: prepare steps see only the host variables
    (the head is resolved after prepare), lanes ``base`` and ``head`` too. Refs missing from
    ``checks_by_id`` are skipped: a dangling ref is another rule's error."""
    prepare_bound = set(host_vars)
    lane_bound = prepare_bound | set(LANE_VARS)
    where = f"bindings.{binding_name}" if binding_name else "binding"
    problems: list[Problem] = []
    phases = (("prepare", binding.prepare, prepare_bound), ("checks", binding.checks, lane_bound))
    for phase, refs, bound in phases:
        for index, ref in enumerate(refs):
            check = checks_by_id.get(ref)
            check = getattr(check, "check", check)  # a ResolvedCheck wraps its check
            run = getattr(check, "run", None)
            if getattr(check, "kind", None) != "command" or not isinstance(run, str):
                continue
            location = f"{where}.{phase}[{index}]"
            for name in sorted(placeholders_in(run) - bound):
                problems.append(_unbound(ref, name, phase, bound, location))
    return problems


def _unbound(ref: str, name: str, phase: str, bound: set[str], location: str) -> Problem:
    if phase == "prepare" and name == "head":
        return Problem(
            location,
            f"prepare check '{ref}' uses {{head}}, which is not bound yet — prepare runs before the range is frozen",
            "use {base} or {changed} in a prepare step, or move the check to the binding's 'checks'",
        )
    shown = ", ".join("{" + n + "}" for n in sorted(bound))
    return Problem(
        location,
        f"check '{ref}' uses placeholder {{{name}}}, which is not bound — bound: {shown}",
        f"use one of {shown}, or write {{{{{name}}}}} for a literal '{{{name}}}'",
    )
