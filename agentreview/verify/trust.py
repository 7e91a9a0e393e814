"""Which allowed_signers file a signature is checked against, and whether it can be trusted.

A change must not vouch for its own signer: a file inside the repository is trusted only as REF's object
(``--policy-from``) or as a link-free regular file equal to the named base's; one outside is the caller's.
The bytes checked are the bytes read, never the path read again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.model.errors import EXIT_ERROR, EXIT_USAGE
from agentreview.model.record import record
from agentreview.verify.result import VerifyStop

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.host.refs import ResolvedRef

ALLOWED_SIGNERS_IN_REPO = Path(".agentproto") / "allowed_signers"
MAX_ALLOWED_SIGNERS_BYTES = 1024 * 1024
MAX_LINK_HOPS = 40
UNNAMED_BASE = (
    "the checkout's allowed_signers is trusted only as of a base the caller names — pass "
    "--base <the target branch's commit> or --policy-from <the target branch>, or --allowed-signers "
    "from a location outside the repository"
)


@record
class PolicyCommit:
    """``--policy-from``: the name as resolved (to exactly one full ref or commit) and the commit."""

    resolved: ResolvedRef

    @property
    def ref(self) -> str:
        """The full ref (or the commit id) the name resolved to: what messages show."""
        return self.resolved.exact

    @property
    def sha(self) -> str:
        return self.resolved.commit


@record
class SignersFile:
    """The allowed_signers file to use: ``path`` as named; when ``in_repo``, ``rel`` is its repository path
    (``None`` when unknown) and ``linked`` says reaching it follows a link inside the repository."""

    path: Path
    in_repo: bool
    rel: str | None = None
    linked: bool = False


@record
class TrustDecision:
    """Whether ``signers`` can be believed: ``why`` (the whole message) is None when it can. ``data`` is the bytes to
    verify against when they were fixed by the check (an in-repository file), else None (a file
    outside the repository, read by the signer at its path; or untrusted)."""

    why: str | None
    data: bytes | None = None
    source: str = ""

    @property
    def trusted(self) -> bool:
        return self.why is None


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _place(path: Path, root: Path) -> tuple[bool, str | None, bool]:
    """Where the absolute, normalized ``path`` lies: ``(in the repository, repository path, linked)``. A link
    outside the repository is the caller's and followed; one inside is the change's and stops the walk."""
    named_rel = path.relative_to(root).as_posix() if _within(path, root) else None
    pending = list(path.parts[1:])
    current = Path(path.anchor)
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        if not candidate.is_symlink():
            current = candidate
            continue
        hops += 1
        if _within(current, root) or hops > MAX_LINK_HOPS:
            return True, named_rel, True
        target = Path(os.readlink(candidate))
        if target.is_absolute():
            current = Path(target.anchor)
        pending[:0] = list(target.parts[1:] if target.is_absolute() else target.parts)
    if named_rel is not None:
        return True, named_rel, False
    if _within(current, root):
        return True, current.relative_to(root).as_posix(), False
    return False, None, False


def find_allowed_signers(
    given: Path | None, root: Path, *, cwd: Path | None = None, policy: PolicyCommit | None = None
) -> SignersFile | None:
    """The allowed_signers file to use, or ``None``: ``given`` (relative to ``cwd``; missing is a usage error),
    else REF's ``.agentproto/allowed_signers`` with ``policy``, else the checkout's, a link included (so it is
    refused by name, never silently ignored)."""
    if given is not None:
        named = Path(os.path.normpath((cwd or root) / given))
        if not named.is_file():
            raise VerifyStop(EXIT_USAGE, "usage", f"--allowed-signers {named}: no such file")
        in_repo, rel, linked = _place(named, root)
        return SignersFile(named, in_repo, rel, linked)
    rel = ALLOWED_SIGNERS_IN_REPO.as_posix()
    candidate = root / ALLOWED_SIGNERS_IN_REPO
    if policy is not None:
        return SignersFile(candidate, True, rel) if _blob(root, policy, rel) is not None else None
    if candidate.is_file() or candidate.is_symlink():
        return SignersFile(candidate, True, rel, _place(candidate, root)[2])
    return None


def _blob(root: Path, policy: PolicyCommit, rel: str) -> bytes | None:
    from agentreview.host.git import GitError, blob_at

    try:
        return blob_at(root, policy.sha, rel, max_bytes=MAX_ALLOWED_SIGNERS_BYTES)
    except GitError as exc:
        raise VerifyStop(EXIT_ERROR, "error", f"--policy-from {policy.ref}: cannot read {rel} ({exc})") from exc


def decide_trust(
    signers: SignersFile, *, root: Path, base_sha: str, base_named: bool, policy: PolicyCommit | None
) -> TrustDecision:
    """Whether ``signers`` can be believed, and the bytes to verify against when it can."""
    if not signers.in_repo:
        return TrustDecision(None, source=str(signers.path))
    if policy is not None and signers.rel is not None:
        source = f"{policy.ref}:{signers.rel}"
        data = _blob(root, policy, signers.rel)
        if data is None:
            why = f"{source} is not a regular file of at most {MAX_ALLOWED_SIGNERS_BYTES} bytes"
            return TrustDecision(untrusted_message(why), None, source)
        return TrustDecision(None, data, source)
    shown = str(signers.path)
    if signers.linked or signers.rel is None:
        why = f"{shown} is reached through a symbolic link inside the repository"
        return TrustDecision(untrusted_message(why), None, shown)
    if not base_named:
        return TrustDecision(UNNAMED_BASE, None, shown)
    at_base, differs = in_repo_signers_at_base(root, signers.path, base_sha, signers.rel)
    return TrustDecision(untrusted_message(differs) if differs else None, at_base, shown)


def _read_plain_file(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes reached without
    following a symbolic link (neither the file nor its directory); ``None`` otherwise."""
    from agentreview.host.files import UnreadableFileError, read_regular_file

    try:
        return read_regular_file(path, limit=limit, follow_symlinks=False, plain_dir=True)
    except UnreadableFileError:
        return None


def read_untrusted(signers: SignersFile) -> bytes | None:
    """The bytes of an untrusted in-repository file, read safely (no link followed, bounded), only
    to tell an invalid signature apart; ``None`` when it cannot be read that way."""
    if signers.linked:
        return None
    return _read_plain_file(signers.path, MAX_ALLOWED_SIGNERS_BYTES)


def in_repo_signers_at_base(
    root: Path, signers: Path, base_sha: str, rel: str | None = None
) -> tuple[bytes | None, str | None]:
    """The checkout's allowed_signers as ``base_sha`` has it at ``rel``, or why it cannot be trusted: only a plain
    regular file (a link could point at a pack cache the change filled) equal to the base's. The base's bytes are
    returned, so what is verified against cannot change after this check."""
    from agentreview.host.git import GitError, blob_at

    now = _read_plain_file(signers, MAX_ALLOWED_SIGNERS_BYTES)
    if now is None:
        return None, f"{signers} is not a plain regular file (a symbolic link, or too large)"
    try:
        path_at_base = rel or ALLOWED_SIGNERS_IN_REPO.as_posix()
        at_base = blob_at(root, base_sha, path_at_base, max_bytes=MAX_ALLOWED_SIGNERS_BYTES)
    except GitError as exc:  # cannot establish it: fail safe
        return None, f"{signers}: cannot read its version at the range base ({exc})"
    if at_base is None or at_base != now:
        return None, f"{signers} differs from its version at the range base {base_sha[:10]}"
    return at_base, None


def untrusted_message(why: str) -> str:
    """The problem (or note) for an in-repository allowed_signers that the change could have edited."""
    return (
        f"{why}: the reviewed change cannot vouch for its own signer — pass --policy-from <the target branch>, "
        "or --allowed-signers from a location outside the repository"
    )


def in_repo_note(shown: str) -> str:
    """The note every use of an in-repository allowed_signers carries."""
    return (
        f"allowed_signers taken from the repository ({shown}); a merge gate should pass --policy-from <the target "
        "branch>, or --allowed-signers from a location the change cannot edit"
    )
