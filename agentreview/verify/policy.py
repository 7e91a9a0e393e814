"""``verify --policy-from REF``: the review policy, read as git objects from a commit the change cannot edit.

Without it the change controls the expectation (its REVIEW.md could move ``target.base`` or drop checks);
with it, a policy change passes only when reviewed under REF's policy, never the one it would steer.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.manifest.policy_tree import manifest_rel, repo_rel
from agentreview.model.errors import EXIT_ERROR, EXIT_USAGE, AgentreviewError, UsageError
from agentreview.model.record import record
from agentreview.verify.result import CheckLine, VerifyStop, short
from agentreview.verify.trust import ALLOWED_SIGNERS_IN_REPO, PolicyCommit

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.plugins.registry import Registry


@record
class Policy:
    """REF's manifest: the commit, its repository path, and the manifest parsed (its ``path`` is
    where it sits in the checkout, so that path packs resolve as they do for a run)."""

    commit: PolicyCommit
    rel: str
    parsed: ParsedReview

    @property
    def shown(self) -> str:
        return f"{self.commit.ref}:{self.rel}"


def read_policy(root: Path, cwd: Path, ref: str, manifest: Path | None, registry: Registry | None) -> Policy:
    """Resolve ``ref`` exactly and parse its manifest. A ref that does not resolve or is ambiguous (a tag
    beside the remote branch of the same short name: refused, never guessed), a manifest absent there
    (or not a regular file, or too large) or invalid: :class:`VerifyStop` (exit 3)."""
    from agentreview.host.git import GitError, blob_at
    from agentreview.host.refs import resolve
    from agentreview.manifest.parse import MAX_MANIFEST_BYTES, ManifestError, parse_review

    try:
        rel = manifest_rel(root, cwd, manifest, ref)
    except UsageError as exc:
        raise VerifyStop(EXIT_USAGE, "usage", str(exc)) from exc
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


def rerun_hint(ref: str) -> str:
    """How a policy change gets an attestation the gate accepts."""
    return f"review it under the policy it would replace: agentreview run --policy-from {ref}"


def manifest_edit(policy: Policy, root: Path) -> str | None:
    """How the checkout's manifest differs from REF's (``None`` when identical). Read as a bounded
    regular file: a link or a FIFO in its place is an edit, never followed."""
    from agentreview.manifest.parse import read_manifest_bytes

    try:
        now = read_manifest_bytes(root / policy.rel)
    except (AgentreviewError, OSError) as exc:
        return f"unreadable ({exc})"
    return None if now == policy.parsed.source else "edited by the change"


def signers_edited(policy: Policy, root: Path, head_sha: str) -> bool:
    """Whether the head's ``.agentproto/allowed_signers`` differs from REF's (an added teammate's key)."""
    rel = ALLOWED_SIGNERS_IN_REPO.as_posix()
    return _object_id(root, policy.commit.sha, rel) != _object_id(root, head_sha, rel)


def policy_line(policy: Policy, edit: str | None, raw: dict[str, Any], msha: str) -> tuple[list[CheckLine], list[str]]:
    """The checkout's manifest against REF's: it passes when identical or attested under REF's manifest; else
    the problem says how to review the change under REF's policy."""
    expected = f"{policy.rel} as at {policy.commit.ref} ({policy.commit.sha[:10]})"
    if edit is None:
        return [CheckLine("review policy", True, expected, "identical")], []
    if msha and raw.get("manifestSha") == msha:
        return [CheckLine("review policy", True, expected, f"{edit}; reviewed under {policy.commit.ref}'s policy")], []
    return [CheckLine("review policy", False, expected, edit)], [edited_problem(policy, edit)]


def edited_problem(policy: Policy, edit: str) -> str:
    """The problem for a change whose manifest differs from REF's without an attestation made under REF's."""
    return (
        f"the change edits the review policy ({policy.rel} {edit}, differs from {policy.shown} at "
        f"{policy.commit.sha[:10]}) and the attestation was not made under {policy.commit.ref}'s policy — "
        + rerun_hint(policy.commit.ref)
    )


def policy_change_line(policy: Policy) -> str:
    """What the gate says of a verified change that edits the review policy."""
    return f"policy change reviewed under {policy.commit.ref}'s policy"


def _object_id(root: Path, sha: str, rel: str) -> str | None:
    from agentreview.host.git import git

    proc = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{sha}:{rel}"], root, check=False)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


@dataclass
class PolicyFiles:
    """What :func:`policy_files_checks` found: check lines, problems, and which policy files the change edits."""

    checks: list[CheckLine]
    problems: list[str]
    edits: list[str]  # repository paths of the rubrics and path packs the head has otherwise than REF
    edited_packs: list[str]  # uses[].pack as written, for each path pack the head edits


def policy_files_checks(policy: Policy, root: Path, head_sha: str, raw: dict[str, Any]) -> PolicyFiles:
    """The files REF's manifest names are policy too: each agent check's rubric (the recorded digest must be
    REF's blob's, else the attestation was made under another policy) and each path pack (head's against REF's)."""
    from agentreview.host.files import DEFAULT_LIMIT
    from agentreview.host.git import blob_at
    from agentreview.model.digests import sha256_hex

    checks: list[CheckLine] = []
    problems: list[str] = []
    edits: list[str] = []
    edited_packs: list[str] = []
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
        rel = repo_rel(base_dir, rubric) if isinstance(rubric, str) else None
        if rel is None or check.id not in recorded:
            continue
        data = blob_at(root, sha, rel, max_bytes=DEFAULT_LIMIT)
        want = sha256_hex(data) if data is not None else f"(no {rel} at {ref})"
        ok = want == recorded[check.id]
        checks.append(CheckLine(f"rubric of '{check.id}'", ok, short(want), short(recorded[check.id])))
        if _object_id(root, sha, rel) != _object_id(root, head_sha, rel):
            edits.append(rel)
        if not ok:
            problems.append(
                f"the change edits the review policy: the rubric of check '{check.id}' the attestation records "
                f"is not {ref}'s {rel}, so it was not reviewed under {ref}'s policy — " + rerun_hint(ref)
            )
    for entry in policy.parsed.manifest.uses:
        rel = repo_rel(base_dir, entry.pack) if entry.pack.startswith(("./", "../")) else None
        if rel is None:
            continue
        at_ref = _object_id(root, sha, rel)
        if at_ref is None or at_ref != _object_id(root, head_sha, rel):
            edits.append(rel)
            edited_packs.append(entry.pack)
    return PolicyFiles(checks, problems, edits, edited_packs)


def pack_edit_problems(policy: Policy, edited_packs: list[str], pack_problems: list[str]) -> list[str]:
    """For each path pack the change edits whose recorded digest is not REF's: the attestation was
    made under the change's pack, not REF's."""
    ref = policy.commit.ref
    return [
        f"the change edits the review policy: the path pack {pack} differs from {ref}'s and the attestation's "
        f"digest of it is not {ref}'s, so it was not reviewed under {ref}'s policy — " + rerun_hint(ref)
        for pack in edited_packs
        if any(f"pack '{pack}'" in p for p in pack_problems)
    ]
