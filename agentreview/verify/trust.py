"""Which allowed_signers file a signature is checked against, and whether it can be trusted.

``--allowed-signers`` names a file the caller trusts. Without it, the checkout's own
``.agentproto/allowed_signers`` is used, and a file inside the change under review is
the change's to edit: it is trusted only when it is a plain regular file (no symbolic
link, which could point anywhere, e.g. at a pack cache the change filled) whose bytes are
exactly those at the same path in the range base, and only as of a base the caller
named (``--base``): without it the base comes from the checkout's own ``target.base``,
which the change controls. A change must not vouch for its own signer. The bytes
verified against are the ones checked, never the path read again.

The format of the file is the signer's business (OpenSSH allowed_signers for
``ssh-ed25519``; a signer plugin defines its own); this module only decides trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentreview.model.errors import EXIT_USAGE
from agentreview.verify.result import VerifyStop

ALLOWED_SIGNERS_IN_REPO = Path(".agentproto") / "allowed_signers"
MAX_ALLOWED_SIGNERS_BYTES = 1024 * 1024
UNNAMED_BASE = (
    "the checkout's allowed_signers is trusted only as of a base the caller names — pass "
    "--base <the target branch's commit>, or --allowed-signers from a trusted location"
)


@dataclass(frozen=True)
class SignersFile:
    """The allowed_signers file to use: ``in_repo`` when it is the checkout's own default."""

    path: Path
    in_repo: bool


def find_allowed_signers(given: Path | None, root: Path) -> SignersFile | None:
    """``given`` (absolute, from ``--allowed-signers``; a missing file is a usage error), else
    the checkout's ``.agentproto/allowed_signers`` when present (even as a symbolic link, so
    that it is refused by name rather than silently ignored), else ``None``."""
    if given is not None:
        if not given.is_file():
            raise VerifyStop(EXIT_USAGE, "usage", f"--allowed-signers {given}: no such file")
        return SignersFile(given, in_repo=False)
    candidate = root / ALLOWED_SIGNERS_IN_REPO
    if candidate.is_file() or candidate.is_symlink():
        return SignersFile(candidate, in_repo=True)
    return None


def _read_plain_file(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes reached without
    following a symbolic link (neither the file nor its directory); ``None`` otherwise."""
    from agentreview.host.files import UnreadableFileError, read_regular_file

    try:
        return read_regular_file(path, limit=limit, follow_symlinks=False, plain_dir=True)
    except UnreadableFileError:
        return None


def in_repo_signers_at_base(root: Path, signers: Path, base_sha: str) -> tuple[bytes | None, str | None]:
    """The checkout's allowed_signers as the range base has it, or why it cannot be trusted.

    Trusted only when the file in the checkout is a plain regular file (no symbolic link,
    which could point anywhere, e.g. at a pack cache the change itself filled) whose bytes
    are exactly those of the regular file at the same path in ``base_sha``. The returned
    bytes are the base's, so what is verified against cannot change after this check.
    """
    from agentreview.host.git import GitError, blob_at

    rel = ALLOWED_SIGNERS_IN_REPO.as_posix()
    now = _read_plain_file(signers, MAX_ALLOWED_SIGNERS_BYTES)
    if now is None:
        return None, f"{signers} is not a plain regular file (a symbolic link, or too large)"
    try:
        at_base = blob_at(root, base_sha, rel, max_bytes=MAX_ALLOWED_SIGNERS_BYTES)
    except GitError as exc:  # cannot establish it: fail safe
        return None, f"{signers}: cannot read its version at the range base ({exc})"
    if at_base is None or at_base != now:
        return None, f"{signers} differs from its version at the range base {base_sha[:10]}"
    return at_base, None


def untrusted_message(why: str) -> str:
    """The problem (or note) for an in-checkout allowed_signers that the change could have edited."""
    return (
        f"{why}: the reviewed change cannot vouch for its own signer — pass --allowed-signers "
        "from a trusted location"
    )


def in_repo_note(signers: Path) -> str:
    """The note every use of the in-checkout default carries."""
    return (
        f"allowed_signers taken from the checkout ({signers}); a merge gate should pass --allowed-signers "
        "from a location the change cannot edit"
    )
