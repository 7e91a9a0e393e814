"""``verify --policy-from REF``: the review policy, read from a commit the change cannot edit.

Without it, the gate's expectation comes from the checkout's REVIEW.md, which the change
under review controls: it could move ``target.base`` to its own parent (so earlier commits are
never looked at), drop checks, add a trivial binding, or delete ``verdict.exportDir``. With
it, the manifest at the same repository path is read from commit REF as a git object (bounded,
never from the working tree) and everything the gate expects comes from it: ``target.base``,
the bindings and their checks, ``verdict.exportDir`` and the packs step 6 resolves.

The checkout's manifest must be byte-identical to REF's: a change that edits the review policy
fails (exit 1), because a policy change is approved outside the gate, not by the review it
would steer. The attestation's ``manifestSha`` is then expected to be REF's digest; with
identical bytes it is the checkout's too, and when they differ the ``manifestSha`` line fails
as well, so every problem is reported.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.errors import EXIT_ERROR, EXIT_USAGE
from agentreview.verify.result import CheckLine, VerifyStop, short
from agentreview.verify.trust import PolicyCommit

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.plugins.registry import Registry

DEFAULT_MANIFEST = "REVIEW.md"


@dataclass(frozen=True)
class Policy:
    """REF's manifest: the commit, its repository path, and the manifest parsed (its ``path`` is
    where it sits in the checkout, so that path packs resolve as they do for a run)."""

    commit: PolicyCommit
    rel: str
    parsed: ParsedReview

    @property
    def shown(self) -> str:
        return f"{self.commit.ref}:{self.rel}"


def manifest_rel(root: Path, cwd: Path, manifest: Path | None, ref: str) -> str:
    """The manifest's repository path (by its name, no link followed): ``--manifest`` relative to
    ``cwd``, else ``REVIEW.md``. A manifest outside the repository is a usage error: it has no
    version in REF."""
    if manifest is None:
        return DEFAULT_MANIFEST
    named = Path(os.path.normpath(cwd / manifest))
    if named == root or root not in named.parents:
        raise VerifyStop(
            EXIT_USAGE,
            "usage",
            f"--manifest {named}: with --policy-from {ref} the manifest is read from that commit at the same "
            "repository path, so it must lie inside the repository",
        )
    return named.relative_to(root).as_posix()


def read_policy(root: Path, cwd: Path, ref: str, manifest: Path | None, registry: Registry | None) -> Policy:
    """Resolve ``ref`` exactly and parse its manifest. A ref that does not resolve or is ambiguous (a tag
    beside the remote branch of the same short name: refused, never guessed), a manifest absent there
    (or not a regular file, or too large) or invalid: :class:`VerifyStop` (exit 3)."""
    from agentreview.host.git import GitError, blob_at
    from agentreview.host.refs import resolve
    from agentreview.manifest.parse import MAX_MANIFEST_BYTES, ManifestError, parse_review
    from agentreview.model.errors import AgentreviewError

    rel = manifest_rel(root, cwd, manifest, ref)
    try:
        resolved = resolve(root, ref)
        source = blob_at(root, resolved.commit, rel, max_bytes=MAX_MANIFEST_BYTES)
    except GitError as exc:
        raise VerifyStop(EXIT_ERROR, "error", f"--policy-from {ref}: {exc}") from exc
    commit = PolicyCommit(replace(resolved, role="--policy-from"))
    if source is None:
        raise VerifyStop(
            EXIT_ERROR,
            "error",
            f"--policy-from {ref}: {commit.ref} at {commit.sha[:10]} has no {rel} (absent, not a regular file, or "
            f"larger than {MAX_MANIFEST_BYTES} bytes) — name the branch that holds the review policy",
        )
    shown = f"{commit.ref}:{rel}"
    try:
        parsed = parse_review(source, root / rel, registry=registry)
    except ManifestError as exc:
        raise VerifyStop(EXIT_ERROR, "error", str(ManifestError(Path(shown), exc.problems))) from exc
    except (AgentreviewError, ValueError) as exc:
        raise VerifyStop(EXIT_ERROR, "error", f"{shown}: {exc}") from exc
    return Policy(commit, rel, parsed)


def policy_checks(policy: Policy, root: Path) -> tuple[list[CheckLine], list[str]]:
    """The checkout's manifest against REF's: one check line, and the problem when they differ."""
    from agentreview.manifest.parse import read_manifest_bytes
    from agentreview.model.errors import AgentreviewError

    expected = f"{policy.rel} as at {policy.commit.ref} ({policy.commit.sha[:10]})"
    try:
        now: bytes | None = read_manifest_bytes(root / policy.rel)
        actual = "identical" if now == policy.parsed.source else "edited by the change"
    except (AgentreviewError, OSError) as exc:
        now, actual = None, f"unreadable ({exc})"
    if now == policy.parsed.source:
        return [CheckLine("review policy", True, expected, actual)], []
    problem = (
        f"the change edits the review policy: {policy.rel} in the checkout differs from {policy.shown} "
        f"({policy.commit.sha[:10]}); a policy change is approved outside the gate, not by the review it would "
        "steer — merge it on its own first"
    )
    return [CheckLine("review policy", False, expected, actual)], [problem]


def _repo_rel(base_dir: str, ref: str) -> str | None:
    """``ref`` (relative to the manifest's folder ``base_dir``) as a repository path, or ``None``
    when it is absolute or leaves the repository (neither REF nor the change holds it)."""
    if posixpath.isabs(ref):
        return None
    rel = posixpath.normpath(posixpath.join(base_dir, ref))
    return None if rel == ".." or rel.startswith("../") else rel


def _object_id(root: Path, sha: str, rel: str) -> str | None:
    from agentreview.host.git import git

    proc = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{sha}:{rel}"], root, check=False)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def policy_files_checks(
    policy: Policy, root: Path, head_sha: str, raw: dict[str, Any]
) -> tuple[list[CheckLine], list[str]]:
    """The files REF's manifest names inside the repository are policy too: the rubric of each of
    its own agent checks (the digest the attestation records against REF's blob) and each path
    pack (REF's tree against the attested head's). A difference is a policy edit."""
    from agentreview.host.files import DEFAULT_LIMIT
    from agentreview.host.git import blob_at
    from agentreview.model.digests import sha256_hex

    checks: list[CheckLine] = []
    problems: list[str] = []
    ref, sha = policy.commit.ref, policy.commit.sha
    base_dir = posixpath.dirname(policy.rel)
    entries = raw.get("rubrics")
    recorded = {
        r["check"]: r["sha256"]
        for r in (entries if isinstance(entries, list) else [])
        if isinstance(r, dict) and isinstance(r.get("check"), str) and isinstance(r.get("sha256"), str)
    }
    for check in policy.parsed.manifest.checks:
        rubric = getattr(check, "rubric", None)
        rel = _repo_rel(base_dir, rubric) if isinstance(rubric, str) else None
        if rel is None or check.id not in recorded:
            continue
        data = blob_at(root, sha, rel, max_bytes=DEFAULT_LIMIT)
        want = sha256_hex(data) if data is not None else f"(no {rel} at {ref})"
        ok = want == recorded[check.id]
        checks.append(CheckLine(f"rubric of '{check.id}'", ok, short(want), short(recorded[check.id])))
        if not ok:
            problems.append(
                f"the change edits the review policy: the rubric of check '{check.id}' the attestation records "
                f"is not {ref}'s {rel}; a policy change is approved outside the gate, not by the review it would "
                "steer — merge it on its own first"
            )
    for entry in policy.parsed.manifest.uses:
        rel = _repo_rel(base_dir, entry.pack) if entry.pack.startswith(("./", "../")) else None
        if rel is None:
            continue
        at_ref = _object_id(root, sha, rel)
        ok = at_ref is not None and at_ref == _object_id(root, head_sha, rel)
        label = f"pack {entry.pack}"
        checks.append(CheckLine(label, ok, f"{rel} as at {ref}", "identical" if ok else "edited by the change"))
        if not ok:
            problems.append(
                f"the change edits the review policy: the path pack {entry.pack} ({rel}) differs from {ref}'s; a "
                "policy change is approved outside the gate, not by the review it would steer — merge it on its "
                "own first"
            )
    return checks, problems
