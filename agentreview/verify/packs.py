"""AIP-62 verification step 6: the recorded pack digests against the packs this checkout resolves.

Resolving the change's ``uses[]`` may fetch, so this runs after the signature, and with ``fetch=False``
resolves nothing; a digest not compared is shown as unverified, never as passed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.verify.result import CheckLine, StepCheck, short

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.packs.resolve import ResolvedReview
    from agentreview.plugins.registry import Registry


def pack_digest_checks(
    raw: dict[str, Any],
    parsed: ParsedReview,
    root: Path,
    *,
    manifest_matches: bool,
    registry: Callable[[], Registry],
    home: Path | None,
    fetch: bool = True,
    withheld: str = "",
) -> StepCheck:
    """Step 6 for ``raw``; ``registry`` is called only when packs must be resolved. Without ``fetch`` no pack is
    resolved (no loader runs, so nothing is fetched) and ``withheld`` is the note saying why."""
    out = StepCheck()
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
    resolved: Any = None
    if fetch or not parsed.manifest.uses:  # a manifest without uses[] resolves without any loader
        from agentreview.host.home import home_dir
        from agentreview.model.contracts.packs import PackLoadContext
        from agentreview.packs.resolve import resolve_review

        ctx = PackLoadContext(
            repo_root=root, manifest_dir=parsed.path.parent if parsed.path else root, home=home or home_dir()
        )
        try:
            resolved = resolve_review(parsed, registry=registry(), ctx=ctx)
        except Exception as exc:  # handed to verify_pack_digests, which decides note or problem
            resolved = exc
    problems, notes = verify_pack_digests([p for p in recorded], resolved)
    if resolved is None:
        notes.append(withheld or "pack digests not verified: the packs were not resolved")
    refs = ", ".join(str(p.get("ref")) for p in recorded if isinstance(p, dict)) or "(none)"
    if not problems and (resolved is None or isinstance(resolved, BaseException)):
        # Nothing was compared: never shown as passed (the note says why).
        out.checks.append(CheckLine("pack digests", False, "resolved from this checkout", f"{refs} (not resolved here)",
                                    unverified=True))  # fmt: skip
    else:
        out.checks.append(CheckLine("pack digests", not problems, "resolved from this checkout", refs))
    out.problems.extend(problems)
    out.notes.extend(notes)
    return out


def verify_pack_digests(
    recorded: list[dict[str, Any]], resolved: ResolvedReview | BaseException | None
) -> tuple[list[str], list[str]]:
    """``(problems, notes)`` of the recorded pack digests against ``resolved`` (``None``: only each ``alg`` is
    checked), matched by ``ref`` in order. A pack that cannot be obtained here is a note, not a problem."""
    from agentreview.model.contracts.errors import PackUnavailableError
    from agentreview.model.digests import PACK_DIGEST_ALG

    problems: list[str] = []
    notes: list[str] = []
    valid: list[dict[str, Any]] = []
    for position, record in enumerate(recorded):
        if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("ref", "alg", "sha256")):
            problems.append(f"packs[{position}] is not a {{ref, id, version, alg, sha256}} record")
        elif record["alg"] != PACK_DIGEST_ALG:
            problems.append(
                f"pack '{record['ref']}': digest alg '{record['alg']}' is not recognized (this verifier knows "
                f"{PACK_DIGEST_ALG}) — refusing to compare"
            )
        else:
            valid.append(record)
    if resolved is None:
        return problems, notes
    if isinstance(resolved, BaseException):
        unavailable = isinstance(resolved, PackUnavailableError) or getattr(resolved, "unavailable", False)
        if unavailable:
            notes.append(f"pack digests not verified: the packs cannot be resolved here ({resolved})")
        else:
            problems.append(f"pack resolution failed: {resolved}")
        return problems, notes
    pending: dict[str, list[dict[str, Any]]] = {}
    for digest in resolved.pack_digests():
        pending.setdefault(digest["ref"], []).append(digest)
    for record in valid:
        ref = record["ref"]
        if not pending.get(ref):
            problems.append(f"pack '{ref}' is recorded in the attestation but the manifest does not use it")
            continue
        current = pending[ref].pop(0)
        if record["sha256"] != current["sha256"]:
            problems.append(
                f"pack '{ref}': digest changed (recorded {record['sha256']}, resolved here {current['sha256']})"
            )
        elif record.get("id") != current["id"] or record.get("version") != current["version"]:
            problems.append(
                f"pack '{ref}': recorded as {record.get('id')}@{record.get('version')}, resolved as "
                f"{current['id']}@{current['version']}"
            )
    for ref, left in pending.items():
        problems.extend(f"pack '{ref}' is used by the manifest but its digest is not recorded" for _ in left)
    return problems, notes
