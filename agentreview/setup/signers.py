"""``.agentproto/allowed_signers``: this host's key, trusted for reviews only (``namespaces="agentproto-review"``).

``--force`` appends the line and keeps every key already there: dropping another signer's key would lose trust.
"""

from __future__ import annotations

from pathlib import Path

from agentreview.host.files import UnreadableFileError, read_regular_file
from agentreview.setup.writer import Outcome, place, shown

__all__ = ["ALLOWED_SIGNERS", "UNTRUSTED", "write_allowed_signers"]

ALLOWED_SIGNERS = ".agentproto/allowed_signers"
# the file exists without this host's key: the next steps say how to add it (``--force`` would append it, but also
# overwrite every other file init writes that differs, a teammate's REVIEW.md among them)
UNTRUSTED = "exists without this host's key: see the next steps"
_LIMIT = 1 << 20


def write_allowed_signers(root: Path, line: str, *, force: bool) -> Outcome:
    """Write or extend ``<root>/.agentproto/allowed_signers`` with ``line``."""
    path = root / ALLOWED_SIGNERS
    try:
        current = read_regular_file(path, limit=_LIMIT, follow_symlinks=False).decode("utf-8", "replace")
    except UnreadableFileError:
        current = None
    if current is None:
        return place(path, (line + "\n").encode(), root=root, force=force)
    if line in (raw.strip() for raw in current.splitlines()):
        return Outcome(shown(path, root), "unchanged", "already trusts this host's key")
    if not force:
        return Outcome(shown(path, root), "skipped", UNTRUSTED)
    joined = current if current.endswith("\n") or not current else current + "\n"
    result = place(path, (joined + line + "\n").encode(), root=root, force=True)
    return Outcome(
        result.path, result.status, "this host's key appended" if result.status == "written" else result.reason
    )
