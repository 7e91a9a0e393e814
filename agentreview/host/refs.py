"""Exact ref resolution: a name given for a security decision is one full ref or one object, never a guess.

Git takes the first of several candidates and only warns, so a tag pushed as ``origin/main`` could choose the
policy's commit. :func:`resolve` accepts ``HEAD``, full ids and refs, and a short name or abbreviated id only
when exactly one candidate matches (plus ``~N`` / ``^N``); anything ambiguous is refused naming both.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from agentreview.host.gitrun import GIT_TIMEOUT_S, GitError, run_hardened
from agentreview.model.record import record

__all__ = ["RangeRefs", "RefError", "ResolvedRef", "candidates", "head_ref", "resolve", "resolve_range"]

# A name, then ~N / ^N steps. The name has no character git's revision syntax gives a meaning
# (whitespace, control characters, ~ ^ : ? * [ \) and never starts with '-'.
_REVISION = re.compile(r"^([^\s\x00-\x1f~^:?*\[\\]+)((?:[~^]\d*)*)\Z")
_FULL_OID = re.compile(r"^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})\Z")
_SHORT_OID = re.compile(r"^[0-9a-fA-F]{4,63}\Z")
# What git prints for `rev-parse --verify <x>^{commit}`.
_OID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")


class RefError(GitError):
    """A name that does not resolve to exactly one commit; the message is one line. ``missing``:
    it names nothing (as opposed to several things, or a form that is refused)."""

    def __init__(self, message: str, *, missing: bool = False):
        super().__init__(message)
        self.missing = missing


@record
class ResolvedRef:
    """What a name resolved to: ``ref`` is the full ref (``HEAD``, ``refs/...``), ``None`` for an
    object id; ``suffix`` the ``~N``/``^N`` steps applied; ``commit`` the full commit id; ``role``
    what the name was given as (``--policy-from``, ``target.base``, ``head``), for reports."""

    name: str
    ref: str | None
    suffix: str
    commit: str
    role: str = ""

    @property
    def exact(self) -> str:
        """A revision naming the same commit without any lookup: the full ref and the steps, or the commit."""
        return f"{self.ref}{self.suffix}" if self.ref is not None else self.commit

    @property
    def shown(self) -> str:
        """``refs/remotes/origin/main at <commit>``, or the commit alone for an object id."""
        return f"{self.exact} at {self.commit}" if self.ref is not None else self.commit

    @property
    def line(self) -> str:
        """One report line: ``target.base origin/main → refs/remotes/origin/main at <commit>``."""
        role = self.role or "ref"
        if self.name in (self.exact, self.commit):
            return f"{role} {self.shown}"
        return f"{role} {self.name} → {self.shown}"

    def as_dict(self) -> dict[str, str | None]:
        """The ``--json`` shape: ``{role, name, ref, commit}`` (``ref`` null for an object id)."""
        return {"role": self.role, "name": self.name, "ref": self.exact if self.ref else None, "commit": self.commit}


def candidates(name: str) -> list[str]:
    """The full refs git's lookup tries for ``name``, in git's order (a full ref is only itself)."""
    if name.startswith("refs/"):
        return [name]
    return [
        f"refs/{name}",
        f"refs/tags/{name}",
        f"refs/heads/{name}",
        f"refs/remotes/{name}",
        f"refs/remotes/{name}/HEAD",
    ]


def _git(args: list[str], root: Path) -> tuple[int, str]:
    proc = run_hardened(args, root, timeout=GIT_TIMEOUT_S, text=True)
    return proc.returncode, proc.stdout


def _matching_refs(root: Path, names: list[str]) -> list[tuple[str, str, str]]:
    """``(refname, oid, peeled commit or "")`` of each ref in ``names`` that exists, in ``names``' order."""
    fmt = "%(refname)%00%(objectname)%00%(objecttype)%00%(*objectname)%00%(*objecttype)"
    code, out = _git(["for-each-ref", f"--format={fmt}", *names], root)
    if code != 0:
        raise GitError(f"git for-each-ref failed in {root}")
    found: dict[str, tuple[str, str, str]] = {}
    for line in out.splitlines():
        fields = line.split("\0")
        if len(fields) != 5 or fields[0] not in names:  # for-each-ref also matches refs below a name
            continue
        refname, oid, kind, peeled, peeled_kind = fields
        commit = oid if kind == "commit" else peeled if peeled_kind == "commit" else ""
        found[refname] = (refname, oid, commit)
    return [found[n] for n in names if n in found]


def _objects_with_prefix(root: Path, prefix: str) -> list[str]:
    code, out = _git(["rev-parse", f"--disambiguate={prefix.lower()}"], root)
    return out.split() if code == 0 else []


def _commit(root: Path, revision: str, name: str) -> str:
    """The commit ``revision`` (an object id or a full ref, then steps) names; never a lookup by short name."""
    code, out = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"], root)
    sha = out.strip()
    if code != 0 or not _OID.match(sha):
        raise RefError(f"cannot resolve '{name}' to a commit in {root}", missing=True)
    return sha


def _both(refs: list[str]) -> str:
    return ", ".join(refs[:-1]) + f" and {refs[-1]}"


def resolve(root: Path, name: str, *, role: str = "") -> ResolvedRef:
    """``name`` resolved exactly (see the module docstring), or :class:`RefError` in one line
    (starting with ``role:`` when a role is given)."""
    try:
        found = _resolve(root, name)
    except RefError as exc:
        raise RefError(f"{role}: {exc}" if role else str(exc), missing=exc.missing) from None
    return replace(found, role=role) if role else found


def _resolve(root: Path, name: str) -> ResolvedRef:
    match = _REVISION.match(name) if name and not name.startswith("-") else None
    if match is None:
        raise RefError(f"'{name}' is not a valid git revision")
    base, suffix = match.groups()
    if "@{" in base or base == "@":
        raise RefError(
            f"'{name}': reflog and upstream selectors (@{{...}}, @) are not accepted — name a full ref (refs/...) "
            "or a commit id"
        )
    if base == "HEAD":
        return ResolvedRef(name, "HEAD", suffix, _commit(root, f"HEAD{suffix}", name))
    if _FULL_OID.match(base):
        oid = base.lower()
        return ResolvedRef(name, None, suffix, _commit(root, f"{oid}{suffix}", name))
    refs = _matching_refs(root, candidates(base))
    objects = _objects_with_prefix(root, base) if _SHORT_OID.match(base) else []
    if len(refs) + len(objects) > 1:
        named = [r[0] for r in refs] + [f"the object {o}" for o in objects]
        if not refs:
            raise RefError(f"'{name}' is ambiguous: the abbreviated id names {len(objects)} objects — give the full id")
        raise RefError(
            f"'{name}' is ambiguous: {_both(named)} {'both' if len(named) == 2 else 'all'} match — name the one "
            "you mean in full (refs/... or a full commit id)"
        )
    if objects:
        return ResolvedRef(name, None, suffix, _commit(root, f"{objects[0]}{suffix}", name))
    if not refs:
        if re.fullmatch(r"[A-Z_]+_HEAD", base):  # FETCH_HEAD, ORIG_HEAD, MERGE_HEAD, ...
            raise RefError(f"'{name}': only HEAD among the pseudo-refs is accepted — pass the commit id instead")
        raise RefError(f"cannot resolve '{name}' to a commit in {root}", missing=True)
    refname, oid, commit = refs[0]
    if commit and not suffix:
        return ResolvedRef(name, refname, "", commit)
    return ResolvedRef(name, refname, suffix, _commit(root, f"{oid}{suffix}", name))


@record
class RangeRefs:
    """A range's ends as resolved: ``base`` is the ref ``--base`` or ``target.base`` named, and
    ``base_sha`` the commit the range starts at (``base`` itself, or its merge-base with the head)."""

    base: ResolvedRef
    head: ResolvedRef
    base_sha: str

    @property
    def refs(self) -> tuple[ResolvedRef, ResolvedRef]:
        return self.base, self.head


def head_ref(root: Path, name: str, commit: str | None = None) -> ResolvedRef:
    """The head of a range (``--head``, default ``HEAD``), resolved exactly; ``commit`` is HEAD's
    commit when the caller has already read it (:func:`agentreview.host.git.root_and_commit`)."""
    if name == "HEAD" and commit is not None:
        return ResolvedRef(name, "HEAD", "", commit, role="head")
    return resolve(root, name, role="head" if name == "HEAD" else "--head")


def resolve_range(root: Path, head: ResolvedRef, base: str | None, target_base: str) -> RangeRefs:
    """The range's base: ``--base`` resolved exactly, else the merge-base of ``target.base``
    (resolved exactly: an ambiguous name is refused) and the head. Raises :class:`GitError`."""
    from agentreview.host import ci_hints

    if base:
        try:
            named = resolve(root, base, role="--base")
        except RefError as exc:
            if not exc.missing:
                raise
            raise RefError(ci_hints.missing_base(root, base, "--base"), missing=True) from exc
        return RangeRefs(named, head, named.commit)
    hint = f"cannot compute merge-base({target_base}, {head.name}) — pass --base explicitly or fetch the base ref"
    try:
        named = resolve(root, target_base, role="target.base")
    except RefError as exc:
        if not exc.missing:
            raise
        raise GitError(ci_hints.missing_base(root, target_base, "target.base")) from exc
    code, out = _git(["merge-base", "--end-of-options", named.commit, head.commit], root)
    if code != 0 or not _OID.match(out.strip()):
        why = "no common ancestor" if code == 1 else f"git merge-base exited with {code}"
        shallow = ci_hints.unmergeable(root, target_base, head.name, f"{why}: {named.shown} and {head.shown}")
        raise GitError(shallow or f"{hint} ({why}: {named.shown} and {head.shown})")
    return RangeRefs(named, head, out.strip())
