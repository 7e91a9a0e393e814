"""AIP-62 verification step 6: the recorded pack digests against the packs this checkout resolves.

The packs are resolved with the loaders a run uses. Stricter than the reference: a
manifest that imports packs while the attestation records no pack digest is invalid
(a host that resolved packs always records them). Whether a digest mismatch is a
problem or a resolution failure only a note is :func:`verify_pack_digests`' decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.verify.result import CheckLine, short

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.plugins.registry import Registry


@dataclass
class PackCheck:
    """What step 6 found: at most one check line, its problems, and notes."""

    checks: list[CheckLine] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def pack_digest_checks(
    raw: dict[str, Any],
    parsed: ParsedReview,
    root: Path,
    *,
    manifest_matches: bool,
    registry: Callable[[], Registry],
    home: Path | None,
) -> PackCheck:
    """Step 6 for ``raw``. ``registry`` is called only when packs must be resolved; ``home``
    (default AGENTREVIEW_HOME) holds the git pack cache."""
    out = PackCheck()
    recorded = raw.get("packs")
    if recorded is None:
        if parsed.manifest.uses and manifest_matches:
            out.checks.append(CheckLine("pack digests", False, f"{len(parsed.manifest.uses)} pack(s)", "none recorded"))
            out.problems.append("attestation records no pack digests, but the manifest imports packs (uses[])")
        return out
    if not isinstance(recorded, list):
        out.checks.append(CheckLine("pack digests", False, "a list", short(recorded)))
        out.problems.append("packs is not a list")
        return out
    from agentreview.host.home import home_dir
    from agentreview.model.contracts import PackLoadContext
    from agentreview.packs.resolve import resolve_review, verify_pack_digests

    ctx = PackLoadContext(
        repo_root=root, manifest_dir=parsed.path.parent if parsed.path else root, home=home or home_dir()
    )
    resolved: Any
    try:
        resolved = resolve_review(parsed, registry=registry(), ctx=ctx)
    except Exception as exc:  # handed to verify_pack_digests, which decides note or problem
        resolved = exc
    problems, notes = verify_pack_digests([p for p in recorded], resolved)
    refs = ", ".join(str(p.get("ref")) for p in recorded if isinstance(p, dict))
    out.checks.append(CheckLine("pack digests", not problems, "resolved from this checkout", refs or "(none)"))
    out.problems.extend(problems)
    out.notes.extend(notes)
    return out
