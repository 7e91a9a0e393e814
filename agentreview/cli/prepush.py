"""``agentreview run --pre-push``: review exactly what a ``git push`` sends, one range per pushed ref.

Each pushed commit is reviewed as ``run --head <sha>`` would; a ref that blocks or cannot be reviewed stops the
push. docs/cli.md (``--pre-push``) gives every case.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from agentreview.model.errors import EXIT_BLOCK, EXIT_ERROR, EXIT_INCOMPLETE, EXIT_USAGE, UsageError
from agentreview.model.record import record

__all__ = ["PushedRef", "pushed_refs", "review_pushed", "skip_reason", "worst_exit"]

_OID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
_ZERO = re.compile(r"^0+\Z")
MAX_LINES = 10_000  # a push updates a few refs; a hook's stdin this long is not git's
# Which exit wins when refs end differently: a block first, then could-not-run, then incomplete.
_PRECEDENCE = (EXIT_BLOCK, EXIT_ERROR, EXIT_INCOMPLETE, EXIT_USAGE)


@record
class PushedRef:
    """One ref a push updates, as git names it to the pre-push hook."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str

    @property
    def shown(self) -> str:
        local = self.local_ref if self.local_ref not in ("", "HEAD") else self.local_sha[:12]
        return f"{local} -> {self.remote_ref}" if self.remote_ref else local


def _parse_lines(text: str) -> list[PushedRef]:
    pushed: list[PushedRef] = []
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        raise UsageError(f"--pre-push: {len(lines)} lines on stdin; git names at most one line per pushed ref")
    for line in lines:
        # a local ref may hold spaces ("HEAD:topic" is named "HEAD"; a refspec's source expression may not)
        parts = line.rsplit(maxsplit=3)
        if len(parts) != 4 or not all(_OID.match(sha) for sha in (parts[1], parts[3])):
            raise UsageError(
                f"--pre-push: stdin line {line[:120]!r} is not '<local ref> <local sha> <remote ref> <remote sha>' "
                "(run it from a pre-push hook, which git gives those lines)"
            )
        pushed.append(PushedRef(*parts))
    return pushed


def _from_pre_commit(environ: Mapping[str, str], resolve: Callable[[str], str | None]) -> list[PushedRef]:
    """The ref pre-commit hands its pre-push hooks (it reads git's lines itself, and passes the first
    ref that pushes commits). When the push holds a root commit, pre-commit names no ``TO_REF``: the
    local branch names the pushed commit then."""
    local_ref = environ.get("PRE_COMMIT_LOCAL_BRANCH", "")
    remote_ref = environ.get("PRE_COMMIT_REMOTE_BRANCH", "")
    to_ref = environ.get("PRE_COMMIT_TO_REF") or (resolve(local_ref) if local_ref else None)
    if not to_ref or not _OID.match(to_ref):
        raise UsageError(
            "--pre-push under pre-commit: PRE_COMMIT_TO_REF is not a commit id and PRE_COMMIT_LOCAL_BRANCH "
            f"({local_ref or 'unset'}) names none — run it from pre-commit's pre-push stage"
        )
    from_ref = environ.get("PRE_COMMIT_FROM_REF", "")
    remote_sha = from_ref if _OID.match(from_ref) else "0" * len(to_ref)
    return [PushedRef(local_ref or to_ref, to_ref, remote_ref, remote_sha)]


def pushed_refs(stdin_text: str, environ: Mapping[str, str], resolve: Callable[[str], str | None]) -> list[PushedRef]:
    """The refs a push updates: pre-commit's variables when pre-commit runs the hook (it has read
    git's lines), else git's lines on stdin."""
    if environ.get("PRE_COMMIT_REMOTE_BRANCH") is not None or environ.get("PRE_COMMIT_TO_REF") is not None:
        return _from_pre_commit(environ, resolve)
    return _parse_lines(stdin_text)


def skip_reason(ref: PushedRef, object_type: Callable[[str], str | None]) -> str | None:
    """Why a pushed ref is not reviewed, or None when its commits are."""
    if _ZERO.match(ref.local_sha):
        return "a deletion: nothing to review"
    for name in (ref.remote_ref, ref.local_ref):
        if name.startswith("refs/tags/"):
            return "a tag: tags are not reviewed (the commits they name are reviewed when their branch is pushed)"
        if name.startswith("refs/notes/"):
            return "git notes: not a change to review"
    kind = object_type(ref.local_sha)
    if kind != "commit":
        return f"a {kind or 'missing'} object, not a commit: nothing to review"
    return None


def worst_exit(codes: list[int]) -> int:
    """One exit for the whole push: 0 only when every ref passed (or was skipped)."""
    failing = [code for code in codes if code != 0]
    if not failing:
        return 0
    return next((code for code in _PRECEDENCE if code in failing), failing[0])


def review_pushed(
    cwd: Path,
    review: Callable[[PushedRef, str | None], int],
    *,
    stdin_text: str,
    environ: Mapping[str, str],
    write: Callable[[str], object] = sys.stdout.write,
) -> int:
    """Review each pushed ref with ``review(ref, over)`` (which prints its own summary and returns its
    exit; ``over`` is the remote's commit when the push only adds to it); one header line per ref, a
    closing line when several refs were pushed."""
    from agentreview.host import git

    root = git.repo_root(cwd)

    def resolve(name: str) -> str | None:
        args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"]
        proc = git.git(args, root, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def object_type(sha: str) -> str | None:
        proc = git.git(["cat-file", "-t", sha], root, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def over(ref: PushedRef) -> str | None:
        """The remote's commit of the ref when this repository has it and the push only adds to it."""
        if _ZERO.match(ref.remote_sha) or ref.remote_sha == ref.local_sha:
            return None
        args = ["merge-base", "--is-ancestor", "--end-of-options", ref.remote_sha, ref.local_sha]
        return ref.remote_sha if git.git(args, root, check=False).returncode == 0 else None

    refs = pushed_refs(stdin_text, environ, resolve)
    if not refs:
        write("agentreview pre-push: git named no ref to push; nothing to review\n")
        return 0
    codes: list[int] = []
    for ref in refs:
        reason = skip_reason(ref, object_type)
        if reason is not None:
            write(f"push {ref.shown}: not reviewed, {reason}\n")
            continue
        write(f"push {ref.shown} ({ref.local_sha[:10]}):\n")
        codes.append(review(ref, over(ref)))
    code = worst_exit(codes)
    if len(refs) > 1:
        outcome = "every reviewed ref passed" if code == 0 else f"the push stops (exit {code})"
        write(f"pre-push: {len(codes)} of {len(refs)} ref(s) reviewed; {outcome}\n")
    return code
