"""From a parsed REVIEW.md to the review that actually runs: packs merged, bindings final.

``resolve_review`` is called on every run (cached ones included), by ``check``
and by ``verify`` (step 6). Without ``uses`` it only wraps the parsed manifest.
Pack resolution (loaders through the pack-loader hook, trust, rubric
confinement, digests) is implemented in this module as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.contracts import LoadedPack, PackLoadContext
    from agentreview.documents.manifest import AgentCheck, Binding, CommandCheck, ReviewPack, UsesEntry
    from agentreview.parse import ParsedReview
    from agentreview.plugins import Registry


@dataclass(frozen=True)
class ResolvedCheck:
    """A check as it runs: for a pack check the id is ``<as>/<id>``, overrides are applied,
    and an agent check carries its final preset."""

    check: CommandCheck | AgentCheck
    rubric_base: Path  # the pack root for a pack agent check, else the manifest's folder
    namespace: str | None = None  # uses[].as for a pack check

    @property
    def id(self) -> str:
        return self.check.id

    def rubric_path(self) -> Path | None:
        rubric = getattr(self.check, "rubric", None)
        return (self.rubric_base / rubric) if rubric else None


@dataclass(frozen=True)
class ResolvedPack:
    entry: UsesEntry
    loaded: LoadedPack
    pack: ReviewPack
    digest: dict[str, Any]  # {ref, id, version, alg, sha256}
    form: str  # which loader form: path, npm, git+https


@dataclass(frozen=True)
class ResolvedReview:
    parsed: ParsedReview
    manifest_dir: Path
    checks: dict[str, ResolvedCheck]  # local checks first, then pack checks, in order
    bindings: dict[str, Binding]
    packs: list[ResolvedPack] = field(default_factory=list)

    @property
    def review_id(self) -> str:
        return self.parsed.manifest.id

    def pack_digests(self) -> list[dict[str, Any]]:
        return [p.digest for p in self.packs]


def resolve_review(
    parsed: ParsedReview,
    *,
    registry: Registry | None = None,
    ctx: PackLoadContext | None = None,
) -> ResolvedReview:
    """Resolve ``uses[]`` (when present) and finalize the bindings against the full check set."""
    from agentreview.rules import finalize_bindings

    manifest = parsed.manifest
    manifest_dir = parsed.path.parent if parsed.path else Path.cwd()
    checks = {c.id: ResolvedCheck(check=c, rubric_base=manifest_dir) for c in manifest.checks}
    if not manifest.uses:
        return ResolvedReview(parsed, manifest_dir, checks, dict(parsed.bindings))
    if registry is None or ctx is None:
        raise ValueError("resolve_review: a manifest with uses[] needs a plugin registry and a load context")
    return _resolve_packs(parsed, manifest_dir, checks, registry, ctx, finalize_bindings)


def _resolve_packs(parsed, manifest_dir, checks, registry, ctx, finalize_bindings):  # pragma: no cover
    raise NotImplementedError("pack resolution is implemented by issue 4")
