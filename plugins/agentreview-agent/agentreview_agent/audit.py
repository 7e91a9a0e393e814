"""What a reviewer's event stream proves, in the wrapper contract's two buckets.

Every provider audits its CLI's output the same way. A few things are judged by *value*,
because each one alone widens what the reviewer may do: the exact tools allow-list, an
empty ``mcp_servers``, Claude's ``permissionMode``, any tool or command event, a known field
carrying an unsafe value. Such a finding is a breached boundary and goes to
``unsafe_values``: the lane stops, no other reviewer replaces it. Everything else is
judged by *shape*, never by a field's name: an unknown scalar or an empty container is
tolerated (it cannot hold a new surface); an unknown non-empty container (in an init, or
in an event of a type the audit does not know), an unknown item type (an item is the
model's action), or a stray line that might be an event is drift and goes to
``unknown_fields``: this reviewer's answer is not used, but its isolation was not shown
broken, so the lane may fall back (``capability_missing``). Drift never lets an answer
through; it only decides whether another reviewer may try.

The functions here and each provider's ``audit_*`` functions are pure: an event (or a
stream's text) in, an :class:`AuditOutcome` out, so ``agentreview presets --probe`` and the
fixture tests can call them on recorded output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from agentreview.api import ReviewerEnd, ReviewerResult
from agentreview_agent.excerpt import redact

MAX_NOTE_CHARS = 160


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

    @property
    def clean(self) -> bool:
        return not self.unsafe_values and not self.unknown_fields

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


def note(text: str, limit: int = MAX_NOTE_CHARS) -> str:
    """A value quoted as evidence: one line, redacted, bounded."""
    text = redact(" ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
