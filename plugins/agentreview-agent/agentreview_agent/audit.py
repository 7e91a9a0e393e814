"""What a reviewer's event stream proves, in the wrapper contract's two buckets (docs/providers.md).

What widens the reviewer's reach is judged by *value* (``unsafe_values``: the lane stops); the rest by
*shape*, never by a field's name (``unknown_fields``: the answer is not used, the lane may fall back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from agentreview.api import ReviewerEnd, ReviewerResult


@dataclass
class AuditOutcome:
    """``unsafe_values``: breaches (terminal); ``unknown_fields``: drift (fallback-eligible)."""

    unsafe_values: list[str] = field(default_factory=list)
    unknown_fields: list[str] = field(default_factory=list)

    def breach(self, note: str) -> None:
        self.unsafe_values.append(note)

    def drift(self, note: str) -> None:
        self.unknown_fields.append(note)

    def add(self, other: AuditOutcome) -> None:
        self.unsafe_values += other.unsafe_values
        self.unknown_fields += other.unknown_fields

    def result(self, end: ReviewerEnd, error: str, **ids: Any) -> ReviewerResult:
        """A ``ReviewerResult`` carrying both buckets, each note once, in order."""
        return ReviewerResult(
            end,
            error,
            unknown_fields=tuple(dict.fromkeys(self.unknown_fields)),
            unsafe_values=tuple(dict.fromkeys(self.unsafe_values)),
            **ids,
        )


def name_of(value: Any, limit: int = 60) -> str:
    """A field, tool or type name as it may be quoted in a reason: printable, bounded."""
    return re.sub(r"[^A-Za-z0-9_.:/@-]", "?", str(value))[:limit]


def is_container(value: Any) -> bool:
    return isinstance(value, (list, dict))


def unknown_member(where: str, name: str, value: Any) -> str | None:
    """The drift note for an unknown member ``name`` of ``where``, or ``None`` when its shape is
    tolerated (a scalar or an empty container). Never looks at the name."""
    if is_container(value) and value:
        return f"{where} has an unknown non-empty {type(value).__name__} '{name_of(name)}'"
    return None


def unknown_event(label: str, event: dict[str, Any]) -> AuditOutcome:
    """Judge an event of a type this audit does not know (``label`` names it) by its shape alone:
    tolerated while every member is a scalar or an empty container, drift once one holds something."""
    out = AuditOutcome()
    for name, value in event.items():
        if is_container(value) and value:
            out.drift(f"{label} carries a non-empty {type(value).__name__} '{name_of(name)}'")
            break
    return out


def list_of_strings(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
