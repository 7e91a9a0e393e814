"""The verdict cache rule (AIP-62 §Cache rule): an entry of the same key is served instead of a run only when not
``incomplete``, not dirty, and its rubric and pack digests equal the current ones as multisets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentreview.model.digests import multiset_key

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation

RUBRIC_FIELDS = ("check", "path", "sha256")
PACK_FIELDS = ("ref", "id", "version", "alg", "sha256")


def multiset(items: Sequence[Mapping[str, Any] | Any], fields: tuple[str, ...]) -> str | None:
    """The cache rule's multiset key; None when a value is not a string or holds NUL or a
    newline (the separators), so a crafted value can never make two different sets equal."""
    tuples: list[list[str]] = []
    for item in items:
        values = [item.get(f) if isinstance(item, Mapping) else getattr(item, f, None) for f in fields]
        strings = [v for v in values if isinstance(v, str) and "\0" not in v and "\n" not in v]
        if len(strings) != len(values):
            return None
        tuples.append(strings)
    return multiset_key(tuples)


def servable(
    att: Attestation,
    rubrics: Sequence[Mapping[str, Any] | Any],
    packs: Sequence[Mapping[str, Any] | Any] | None,
) -> bool:
    """Whether ``att`` (recorded under the current key) may stand in for a run with these inputs."""
    if att.verdict == "incomplete" or att.dirty:
        return False
    recorded_rubrics = multiset(att.rubrics, RUBRIC_FIELDS)
    if recorded_rubrics is None or recorded_rubrics != multiset(rubrics, RUBRIC_FIELDS):
        return False
    recorded_packs = multiset(att.packs or [], PACK_FIELDS)
    return recorded_packs is not None and recorded_packs == multiset(packs or [], PACK_FIELDS)
