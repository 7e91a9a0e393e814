"""``agentreview verify``: the CI gate's decision whether a range is attested.

The algorithm is AIP-62 §Verification, in order, collecting every problem instead of
stopping at the first: (1) read and strictly parse the manifest, (2) resolve the
expectation (head, base, repoRemote), (3) locate the attestation, (4) check its
content against the expectation, (5) resolve ``composedFrom`` priors, (6) check pack
digests, (7) check the signature. No lane is re-run.

Where the reference is lax and being strict cannot reject an honest export, this
verifier is strict:

* export files are read as strict JSON (no duplicate keys, no NaN), bounded in size,
  and only when they are regular files (a FIFO in the export dir cannot hang a gate);
* the ``HEAD^`` retry ("commit the export") applies only when HEAD touches nothing but
  ``*.json`` files directly inside an export dir that is a proper sub-directory of the
  repository, so an ``exportDir: .`` cannot wave an unreviewed commit through;
* ``composedFrom`` is followed to the end of the chain (open question 4), each prior
  pinned by its ``attestationSha256`` and required to share manifest, base, remote and
  binding, with a passing lane and the same rubric digest for the composed check;
* a signed export is checked whenever an allowed_signers file is known, and an
  allowed_signers file inside the checkout that the reviewed range itself changed, or
  that is reached through a symbolic link, cannot satisfy ``--require-signed`` (a change
  must not vouch for its own signer); the bytes checked are the ones verified against;
* a manifest that imports packs while the attestation records no pack digest is invalid.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from agentreview.model.digests import attestation_sha256_of, loads_strict, manifest_sha, range_sha
from agentreview.model.errors import (
    EXIT_ERROR,
    EXIT_INVALID,
    EXIT_NOT_EXPORTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_SIGNATURE,
    EXIT_USAGE,
)
from agentreview.model.fold import fold_verdict

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.plugins.registry import Registry

SCHEMA = "agentproto.review.attestation/v1"
VERDICT_CHOICES = ("pass", "block", "incomplete", "any")
ALLOWED_SIGNERS_IN_REPO = Path(".agentproto") / "allowed_signers"
# An export is a few KiB; anything this large is not one, and reading it must stay bounded.
MAX_ATTESTATION_BYTES = 8 * 1024 * 1024
MAX_CHAIN_DEPTH = 64
# An attestation nests about six levels deep; far deeper input only serves to exhaust the
# recursion of whatever walks it next (shape check, canonical JSON).
MAX_JSON_DEPTH = 64
MAX_SHAPE_PROBLEMS = 8


# --------------------------------------------------------------------------- options and result


@dataclass(frozen=True)
class VerifyOptions:
    """What the caller asked for. Relative paths are resolved against ``cwd``."""

    cwd: Path = field(default_factory=Path.cwd)
    path: Path | None = None  # an attestation .json file or a directory of exports
    manifest: Path | None = None  # default: <repo root>/REVIEW.md
    base: str | None = None
    head: str | None = None
    binding: str | None = None
    verdict: str = "pass"  # pass | block | incomplete | any
    if_exported: bool = False
    allowed_signers: Path | None = None
    require_signed: bool = False
    registry: Registry | None = None  # default: the installed plugins
    home: Path | None = None  # default: AGENTREVIEW_HOME (the git pack cache lives there)


@dataclass(frozen=True)
class CheckLine:
    """One check performed, with what was expected and what the attestation says."""

    name: str
    ok: bool
    expected: str
    actual: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "expected": self.expected, "actual": self.actual}


@dataclass
class VerifyResult:
    """The outcome. ``exit_code`` is the CLI's: 0 verified, 1 invalid, 3 could not run,
    4 not found, 5 not exported, 6 signature, 64 usage."""

    exit_code: int
    reason: str  # verified | invalid | signature | not_found | not_exported | error | usage
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: list[CheckLine] = field(default_factory=list)
    path: Path | None = None
    attestation: dict[str, Any] | None = None
    principal: str | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    error: str | None = None  # the one-line message for exit 3 and 64

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def verdict(self) -> str | None:
        value = (self.attestation or {}).get("verdict")
        return value if isinstance(value, str) else None

    def to_json(self) -> dict[str, Any]:
        att = self.attestation or {}
        payload: dict[str, Any] = {
            "ok": self.ok,
            "reason": self.reason,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "path": str(self.path) if self.path else None,
            "verdict": self.verdict,
            "principal": self.principal,
            "exitCode": self.exit_code,
            "baseSha": self.base_sha,
            "headSha": self.head_sha,
            "runId": att.get("runId") if isinstance(att.get("runId"), str) else None,
            "reviewId": att.get("reviewId") if isinstance(att.get("reviewId"), str) else None,
            "binding": att.get("binding") if isinstance(att.get("binding"), str) else None,
            "checks": [c.as_dict() for c in self.checks],
        }
        if self.error:
            payload["error"] = self.error
        return payload


class _Stop(Exception):
    """Ends verification early with a distinct outcome (could not run, usage, not found)."""

    def __init__(self, exit_code: int, reason: str, message: str):
        super().__init__(message)
        self.exit_code = exit_code
        self.reason = reason


@dataclass(frozen=True)
class Expectation:
    """What the attestation must say about this checkout (AIP-62 verification step 2)."""

    manifest_sha: str
    base_sha: str
    head_sha: str
    repo_remote: str
    binding: str | None = None
    verdict: str = "pass"


# --------------------------------------------------------------------------- reading export files


class UnreadableExport(Exception):
    """An export file that is not a readable, strict JSON object."""


def read_export(path: Path) -> dict[str, Any]:
    """Read one export as a strict JSON object; raise :class:`UnreadableExport` saying why.

    Only regular files are opened (a FIFO or device would block or never end), the
    size is bounded, duplicate keys and NaN/Infinity are refused: two parsers must
    never disagree about what a signed document says.
    """
    from agentreview.host.files import UnreadableFileError, read_regular_file

    try:
        # One non-blocking open, then fstat: no window for a FIFO swapped in between a check and the read.
        data = read_regular_file(path, limit=MAX_ATTESTATION_BYTES)
    except UnreadableFileError as exc:
        raise UnreadableExport(f"{exc}, not an attestation") from exc
    try:
        value = loads_strict(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableExport("not UTF-8 text") from exc
    except (ValueError, RecursionError) as exc:
        raise UnreadableExport(f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise UnreadableExport("not a JSON object")
    if _nesting_depth(value) > MAX_JSON_DEPTH:
        raise UnreadableExport(f"nested deeper than {MAX_JSON_DEPTH} levels, not an attestation")
    return value


def _nesting_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (iterative: no recursion to exhaust)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


@dataclass(frozen=True)
class ExportDoc:
    path: Path
    raw: dict[str, Any]


def scan_export_dir(directory: Path) -> tuple[list[ExportDoc], list[str]]:
    """Every ``*.json`` directly inside ``directory`` (not recursive), and a note per file skipped."""
    docs: list[ExportDoc] = []
    notes: list[str] = []
    try:
        names = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".json"))
    except OSError as exc:
        raise _Stop(EXIT_NOT_FOUND, "not_found", f"cannot list export directory {directory}: {exc.strerror}") from exc
    for name in names:
        path = directory / name
        if path.is_dir():
            continue
        try:
            docs.append(ExportDoc(path, read_export(path)))
        except UnreadableExport as exc:
            notes.append(f"skipped {path}: {exc}")
    return docs, notes


def _target(raw: dict[str, Any]) -> dict[str, Any]:
    target = raw.get("target")
    return target if isinstance(target, dict) else {}


def created_at_key(raw: dict[str, Any]) -> float:
    """Sort key for "newest first": the createdAt instant; unparsable dates sort oldest."""
    value = raw.get("createdAt")
    if not isinstance(value, str):
        return float("-inf")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return float("-inf")
    if moment.tzinfo is None:
        return float("-inf")
    return moment.timestamp()


def find_for_range(docs: Sequence[ExportDoc], base_sha: str, head_sha: str, binding: str | None) -> ExportDoc | None:
    """The newest export whose target is exactly ``base_sha..head_sha`` (and ``binding`` when given)."""
    matches = [
        doc
        for doc in docs
        if _target(doc.raw).get("baseSha") == base_sha
        and _target(doc.raw).get("headSha") == head_sha
        and (binding is None or doc.raw.get("binding") == binding)
    ]
    if not matches:
        return None
    # Newest createdAt first; the file name breaks ties so the choice never depends on the file system.
    matches.sort(key=lambda d: (created_at_key(d.raw), d.path.name), reverse=True)
    return matches[0]


# --------------------------------------------------------------------------- content checks (step 4)


def _short(value: Any, width: int = 16) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[:width] + "…"


def shape_problems(raw: dict[str, Any]) -> list[str]:
    """Shape errors of an attestation of the known schema, one readable line each."""
    from pydantic import ValidationError

    from agentreview.model.attestation import Attestation

    try:
        Attestation.read(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(document)"
            lines.append(f"attestation member {loc}: {err['msg']}")
        if len(lines) > MAX_SHAPE_PROBLEMS:
            extra = len(lines) - MAX_SHAPE_PROBLEMS
            lines = [*lines[:MAX_SHAPE_PROBLEMS], f"attestation shape: and {extra} more problem(s)"]
        return lines
    return []


def _refold(raw: dict[str, Any]) -> str:
    lanes = raw.get("lanes")
    pairs = (
        (lane.get("blocking") is True, lane.get("status"))
        for lane in (lanes if isinstance(lanes, list) else [])
        if isinstance(lane, dict)
    )
    return fold_verdict(pairs)


def repo_free_checks(raw: dict[str, Any]) -> tuple[list[CheckLine], list[str]]:
    """The checks that need no repository: schema (and shape), rangeSha, the re-fold, dirty.

    These are also all a ``composedFrom`` prior must pass (besides its verdict).
    Problem strings are reference-notes 2.11's.
    """
    checks: list[CheckLine] = []
    problems: list[str] = []
    schema = raw.get("schema")
    ok = schema == SCHEMA
    checks.append(CheckLine("schema", ok, SCHEMA, str(schema)))
    if not ok:
        problems.append(f"unknown schema '{schema}'")
    else:
        # Only a document of the known schema has a known shape.
        problems.extend(shape_problems(raw))

    target = _target(raw)
    base, head = target.get("baseSha"), target.get("headSha")
    expected_range = range_sha(base, head) if isinstance(base, str) and isinstance(head, str) else "(no target)"
    actual_range = raw.get("rangeSha")
    ok = actual_range == expected_range
    checks.append(CheckLine("rangeSha", ok, _short(expected_range), _short(actual_range)))
    if not ok:
        problems.append("rangeSha does not match target.baseSha..target.headSha")

    refold = _refold(raw)
    verdict = raw.get("verdict")
    ok = verdict == refold
    checks.append(CheckLine("verdict follows from lanes", ok, refold, str(verdict)))
    if not ok:
        problems.append(f"verdict '{verdict}' does not follow from its lanes (expected '{refold}')")
    return checks, problems


def _dirty_check(raw: dict[str, Any]) -> tuple[CheckLine, list[str]]:
    dirty = raw.get("dirty")
    line = CheckLine("clean working tree", not dirty, "not dirty", "dirty" if dirty else "not dirty")
    return line, (["attestation was produced from a dirty working tree"] if dirty else [])


def content_checks(raw: dict[str, Any], expect: Expectation) -> tuple[list[CheckLine], list[str]]:
    """AIP-62 verification step 4 / reference-notes 2.11, problems in the reference's order."""
    checks, problems = repo_free_checks(raw)

    actual_manifest = raw.get("manifestSha")
    ok = actual_manifest == expect.manifest_sha
    checks.append(CheckLine("manifestSha", ok, _short(expect.manifest_sha), _short(actual_manifest)))
    if not ok:
        problems.append("manifestSha mismatch")

    target = _target(raw)
    for key, want, label in (
        ("baseSha", expect.base_sha, "target.baseSha"),
        ("headSha", expect.head_sha, "target.headSha"),
        ("repoRemote", expect.repo_remote, "target.repoRemote"),
    ):
        got = target.get(key)
        ok = got == want
        checks.append(CheckLine(label, ok, want, str(got)))
        if not ok:
            problems.append(f"{key} mismatch")

    if expect.binding is not None:
        got = raw.get("binding")
        ok = got == expect.binding
        checks.append(CheckLine("binding", ok, expect.binding, str(got)))
        if not ok:
            problems.append("binding mismatch")

    verdict = raw.get("verdict")
    if expect.verdict != "any":
        ok = verdict == expect.verdict
        checks.append(CheckLine("verdict", ok, expect.verdict, str(verdict)))
        if not ok:
            problems.append(f"verdict is '{verdict}', expected '{expect.verdict}'")

    line, dirty_problems = _dirty_check(raw)
    checks.append(line)
    problems.extend(dirty_problems)
    return checks, problems


def lanes_match_binding(raw: dict[str, Any], parsed: ParsedReview) -> tuple[CheckLine | None, list[str]]:
    """One lane per check of the attested binding: a conformant host never drops or adds one.

    Only meaningful once manifestSha matched (the parsed manifest is the one attested).
    """
    binding = raw.get("binding")
    lanes = raw.get("lanes")
    if not isinstance(binding, str) or not isinstance(lanes, list):
        return None, []
    declared = parsed.bindings.get(binding)
    if declared is None:
        names = ", ".join(sorted(parsed.bindings)) or "(none)"
        line = CheckLine("binding declared", False, names, binding)
        return line, [f"binding '{binding}' is not declared in the manifest (declared: {names})"]
    want = sorted(declared.checks)
    got = sorted(str(lane.get("id")) for lane in lanes if isinstance(lane, dict))
    ok = want == got
    line = CheckLine(f"lanes of binding '{binding}'", ok, ", ".join(want), ", ".join(got))
    if ok:
        return line, []
    return line, [f"lanes [{', '.join(got)}] do not match the checks of binding '{binding}' [{', '.join(want)}]"]


# --------------------------------------------------------------------------- composedFrom (step 5)


def _lane_rubric(raw: dict[str, Any], check: str) -> str | None:
    rubrics = raw.get("rubrics")
    for entry in rubrics if isinstance(rubrics, list) else []:
        if isinstance(entry, dict) and entry.get("check") == check:
            value = entry.get("sha256")
            return value if isinstance(value, str) else None
    return None


def _prior_problems(raw: dict[str, Any], lane_id: str, prior: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Why ``prior`` cannot be the base ``raw``'s lane ``lane_id`` was composed from."""
    label = f"lane '{lane_id}': composedFrom prior"
    problems: list[str] = []
    _, free = repo_free_checks(prior)
    problems.extend(f"{label}: {p}" for p in free)
    if prior.get("verdict") != "pass":
        problems.append(f"{label}: verdict is '{prior.get('verdict')}', expected 'pass'")
    _, dirty = _dirty_check(prior)
    problems.extend(f"{label}: {p}" for p in dirty)
    prior_target = _target(prior)
    if ref.get("headSha") != prior_target.get("headSha"):
        problems.append(f"{label}: composedFrom.headSha does not match the prior's target.headSha")
    this_target = _target(raw)
    for key in ("baseSha", "repoRemote"):
        if prior_target.get(key) != this_target.get(key):
            problems.append(f"{label}: target.{key} differs from the composed attestation's")
    if prior.get("manifestSha") != raw.get("manifestSha"):
        problems.append(f"{label}: manifestSha differs (composition needs the same manifest)")
    prior_lanes = prior.get("lanes")
    passed = any(
        isinstance(lane, dict) and lane.get("id") == lane_id and lane.get("status") == "pass"
        for lane in (prior_lanes if isinstance(prior_lanes, list) else [])
    )
    if not passed:
        problems.append(f"{label}: has no passing lane '{lane_id}'")
    if _lane_rubric(prior, lane_id) != _lane_rubric(raw, lane_id):
        problems.append(f"{label}: rubric digest for '{lane_id}' differs")
    return problems


def composed_from_checks(raw: dict[str, Any], docs: Sequence[ExportDoc]) -> tuple[list[CheckLine], list[str]]:
    """Resolve every ``composedFrom`` in the export docs, following each prior's own chain.

    A prior is the export with the referenced rangeSha and the same binding whose
    attestationSha256 (over its raw canonical JSON, unknown members included) equals
    the pinned one. Cycles and chains deeper than :data:`MAX_CHAIN_DEPTH` are problems.
    """
    checks: list[CheckLine] = []
    problems: list[str] = []
    digests: dict[Path, str | None] = {}

    def digest_of(doc: ExportDoc) -> str | None:
        if doc.path not in digests:
            try:
                digests[doc.path] = attestation_sha256_of(doc.raw)
            except ValueError:
                digests[doc.path] = None
        return digests[doc.path]

    def walk(att: dict[str, Any], depth: int, seen: frozenset[str], where: str) -> None:
        lanes = att.get("lanes")
        for lane in lanes if isinstance(lanes, list) else []:
            ref = lane.get("composedFrom") if isinstance(lane, dict) else None
            if ref is None:
                continue
            lane_id = str(lane.get("id"))
            label = f"{where}lane '{lane_id}' composedFrom"
            if not isinstance(ref, dict):
                problems.append(f"{label}: not an object")
                checks.append(CheckLine(label, False, "an object", _short(ref)))
                continue
            if lane.get("kind") != "agent":
                problems.append(f"{label}: only agent lanes compose; a '{lane.get('kind')}' lane always runs in full")
                checks.append(CheckLine(label, False, "an agent lane", f"a {lane.get('kind')} lane"))
                continue
            pinned, range_ref = ref.get("attestationSha256"), ref.get("rangeSha")
            if depth >= MAX_CHAIN_DEPTH:
                problems.append(f"{label}: composition chain deeper than {MAX_CHAIN_DEPTH} attestations")
                continue
            if isinstance(pinned, str) and pinned in seen:
                problems.append(f"{label}: composition chain loops back to attestation {_short(pinned)}")
                continue
            candidates = [
                d for d in docs if d.raw.get("rangeSha") == range_ref and d.raw.get("binding") == att.get("binding")
            ]
            prior = next((d for d in candidates if digest_of(d) == pinned), None)
            if prior is None:
                if candidates:
                    msg = (
                        f"{label}: prior for rangeSha {_short(range_ref)} is exported but its attestationSha256 "
                        f"does not match the pinned {_short(pinned)} (altered after composition?)"
                    )
                else:
                    msg = f"{label}: prior attestation (rangeSha {_short(range_ref)}) is not in the export directory"
                problems.append(msg)
                checks.append(CheckLine(label, False, _short(pinned), "not found"))
                continue
            prior_problems = _prior_problems(att, lane_id, prior.raw, ref)
            problems.extend(f"{where}{p}" for p in prior_problems)
            checks.append(CheckLine(label, not prior_problems, _short(pinned), f"{prior.path.name}"))
            walk(prior.raw, depth + 1, seen | {pinned}, f"{where}prior {prior.path.name}: ")

    own = None
    with contextlib.suppress(ValueError):
        own = attestation_sha256_of(raw)
    walk(raw, 0, frozenset({own} if own else set()), "")
    return checks, problems


# --------------------------------------------------------------------------- git facts (step 2, 3)


def _resolve_expectation_shas(root: Path, manifest_base: str, base: str | None, head_ref: str) -> tuple[str, str]:
    from agentreview.host.git import merge_base, rev_parse_commit

    head_sha = rev_parse_commit(root, head_ref)
    base_sha = rev_parse_commit(root, base) if base else merge_base(root, manifest_base, head_sha)
    return base_sha, head_sha


def head_only_touches_exports(root: Path, directory: Path, head_sha: str) -> bool:
    """True when ``head_sha`` changes nothing but ``*.json`` files directly inside ``directory``,
    a proper sub-directory of the repository (the "commit the export" convention)."""
    from agentreview.host.git import files_changed_by

    try:
        rel = directory.resolve().relative_to(root)
    except ValueError:
        return False
    if rel == Path("."):
        return False
    rel_posix = PurePosixPath(rel.as_posix())
    changed = files_changed_by(root, head_sha)
    return bool(changed) and all(PurePosixPath(p).parent == rel_posix and p.endswith(".json") for p in changed)


MAX_ALLOWED_SIGNERS_BYTES = 1024 * 1024


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


# --------------------------------------------------------------------------- the algorithm


class _Verifier:
    """One verification; its methods are the spec's steps, sharing what earlier steps found."""

    def __init__(self, options: VerifyOptions):
        self.o = options
        self.cwd = options.cwd.resolve()
        self.result = VerifyResult(exit_code=EXIT_OK, reason="verified")
        self.signature_problems: list[str] = []
        self._registry: Registry | None = options.registry
        self.root: Path = self.cwd  # the repository root, once step 1 found it

    # ------------------------------------------------------------- helpers

    def registry(self) -> Registry:
        if self._registry is None:
            from agentreview.plugins.registry import load_registry

            self._registry = load_registry()
        return self._registry

    def _abs(self, path: Path) -> Path:
        return (path if path.is_absolute() else self.cwd / path).resolve()

    def check(self, line: CheckLine, problems: list[str]) -> None:
        self.result.checks.append(line)
        self.result.problems.extend(problems)

    # ------------------------------------------------------------- steps

    def run(self) -> VerifyResult:
        from agentreview.host.git import GitError
        from agentreview.model.errors import AgentreviewError

        try:
            self._run()
        except (GitError, AgentreviewError) as exc:
            # git failing mid-way (timeout, missing), or a plugin registry that cannot load.
            self.result.exit_code = getattr(exc, "exit_code", EXIT_ERROR)
            self.result.reason = "error"
            self.result.error = str(exc)
        except _Stop as stop:
            self.result.exit_code = stop.exit_code
            self.result.reason = stop.reason
            if stop.reason == "invalid":
                self.result.problems.append(str(stop))
            else:
                self.result.error = str(stop)
        return self.result

    def _run(self) -> None:
        from agentreview.host.git import GitError, repo_remote, repo_root

        if self.o.verdict not in VERDICT_CHOICES:
            choices = ", ".join(VERDICT_CHOICES)
            raise _Stop(EXIT_USAGE, "usage", f"--verdict must be one of {choices}, not '{self.o.verdict}'")
        try:
            root = repo_root(self.cwd)
        except GitError as exc:
            raise _Stop(EXIT_ERROR, "error", str(exc)) from exc
        self.root = root
        parsed = self._read_manifest(root)
        try:
            base_sha, head_sha = _resolve_expectation_shas(
                root, parsed.manifest.target.base, self.o.base, self.o.head or "HEAD"
            )
            remote = repo_remote(root)
        except GitError as exc:
            raise _Stop(EXIT_ERROR, "error", str(exc)) from exc
        self.result.base_sha, self.result.head_sha = base_sha, head_sha

        doc, docs, base_sha, head_sha = self._locate(parsed, base_sha, head_sha)
        self.result.base_sha, self.result.head_sha = base_sha, head_sha
        self.result.path = doc.path
        self.result.attestation = doc.raw
        raw = doc.raw

        msha = manifest_sha(parsed.source)
        expect = Expectation(msha, base_sha, head_sha, remote, self.o.binding, self.o.verdict)
        checks, problems = content_checks(raw, expect)
        self.result.checks.extend(checks)
        self.result.problems.extend(problems)
        if raw.get("manifestSha") == msha:
            line, lane_problems = lanes_match_binding(raw, parsed)
            if line is not None:
                self.check(line, lane_problems)

        comp_checks, comp_problems = composed_from_checks(raw, docs)
        self.result.checks.extend(comp_checks)
        self.result.problems.extend(comp_problems)

        self._packs(raw, parsed, root, manifest_matches=raw.get("manifestSha") == msha)
        self._signature(raw, root, base_sha)

        if self.result.problems:
            self.result.exit_code, self.result.reason = EXIT_INVALID, "invalid"
        elif self.signature_problems:
            self.result.exit_code, self.result.reason = EXIT_SIGNATURE, "signature"
        self.result.problems.extend(self.signature_problems)

    def _read_manifest(self, root: Path) -> ParsedReview:
        from agentreview.manifest.parse import parse_review, read_manifest_bytes
        from agentreview.model.errors import AgentreviewError

        path = self._abs(self.o.manifest) if self.o.manifest else root / "REVIEW.md"
        try:
            return parse_review(read_manifest_bytes(path), path)
        except (AgentreviewError, ValueError, OSError) as exc:
            raise _Stop(EXIT_ERROR, "error", str(exc)) from exc

    def _locate(
        self, parsed: ParsedReview, base_sha: str, head_sha: str
    ) -> tuple[ExportDoc, list[ExportDoc], str, str]:
        """Step 3: the attestation to verify, the export docs priors are looked up in, and the
        (possibly HEAD^-retried) expected range."""
        if self.o.path is not None:
            given = self._abs(self.o.path)
            if not given.is_dir():
                if not given.exists():
                    raise _Stop(EXIT_NOT_FOUND, "not_found", f"no attestation at {given}")
                try:
                    raw = read_export(given)
                except UnreadableExport as exc:
                    # A file the caller named is not skipped: it is the claim, and it is invalid.
                    self.result.path = given
                    raise _Stop(EXIT_INVALID, "invalid", f"{given}: {exc}") from exc
                docs, notes = self._scan_quietly(given.parent)
                self.result.notes.extend(notes)
                return ExportDoc(given, raw), docs, base_sha, head_sha
            directory = given
        else:
            export_dir = parsed.manifest.verdict.exportDir
            if export_dir is None:
                if self.o.if_exported:
                    raise _Stop(
                        EXIT_NOT_EXPORTED,
                        "not_exported",
                        "the manifest declares no verdict.exportDir; nothing exported",
                    )
                raise _Stop(
                    EXIT_USAGE,
                    "usage",
                    "no attestation path given and the manifest declares no verdict.exportDir — pass the export "
                    "file or directory, or add --if-exported to make 'not exported' its own outcome (exit 5)",
                )
            directory = self.root / export_dir
        if not directory.is_dir():
            raise _Stop(EXIT_NOT_FOUND, "not_found", f"export directory {directory} does not exist")
        docs, notes = scan_export_dir(directory)
        self.result.notes.extend(notes)
        found = find_for_range(docs, base_sha, head_sha, self.o.binding)
        if found is None and self.o.head is None and head_only_touches_exports(self.root, directory, head_sha):
            from agentreview.host.git import GitError

            try:
                base_retry, head_retry = _resolve_expectation_shas(
                    self.root, parsed.manifest.target.base, self.o.base, f"{head_sha}^"
                )
            except GitError as exc:
                raise _Stop(EXIT_ERROR, "error", str(exc)) from exc
            found = find_for_range(docs, base_retry, head_retry, self.o.binding)
            if found is not None:
                self.result.notes.append(
                    f"HEAD {head_sha[:10]} only adds exports under {directory}; verified its parent "
                    f"{head_retry[:10]} as the attested head"
                )
                base_sha, head_sha = base_retry, head_retry
        if found is None:
            binding = f" (binding '{self.o.binding}')" if self.o.binding else ""
            raise _Stop(
                EXIT_NOT_FOUND,
                "not_found",
                f"no attestation for {base_sha[:10]}..{head_sha[:10]}{binding} in {directory}",
            )
        return found, docs, base_sha, head_sha

    def _scan_quietly(self, directory: Path) -> tuple[list[ExportDoc], list[str]]:
        try:
            return scan_export_dir(directory)
        except _Stop:
            return [], []

    def _packs(self, raw: dict[str, Any], parsed: ParsedReview, root: Path, *, manifest_matches: bool) -> None:
        """Step 6: recorded pack digests against the packs resolved from this checkout."""
        recorded = raw.get("packs")
        if recorded is None:
            if parsed.manifest.uses and manifest_matches:
                self.check(
                    CheckLine("pack digests", False, f"{len(parsed.manifest.uses)} pack(s)", "none recorded"),
                    ["attestation records no pack digests, but the manifest imports packs (uses[])"],
                )
            return
        if not isinstance(recorded, list):
            self.check(CheckLine("pack digests", False, "a list", _short(recorded)), ["packs is not a list"])
            return
        from agentreview.host.home import home_dir
        from agentreview.model.contracts import PackLoadContext
        from agentreview.packs.resolve import resolve_review, verify_pack_digests

        ctx = PackLoadContext(
            repo_root=root, manifest_dir=parsed.path.parent if parsed.path else root, home=self.o.home or home_dir()
        )
        resolved: Any
        try:
            resolved = resolve_review(parsed, registry=self.registry(), ctx=ctx)
        except Exception as exc:  # handed to verify_pack_digests, which decides note or problem
            resolved = exc
        problems, notes = verify_pack_digests([p for p in recorded], resolved)
        refs = ", ".join(str(p.get("ref")) for p in recorded if isinstance(p, dict))
        self.check(CheckLine("pack digests", not problems, "resolved from this checkout", refs or "(none)"), problems)
        self.result.notes.extend(notes)

    def _signature(self, raw: dict[str, Any], root: Path, base_sha: str) -> None:
        """Step 7, stricter than the reference: a signed export is checked whenever an
        allowed_signers file is known, with or without --require-signed."""
        attestor = raw.get("attestor")
        signature = attestor.get("signature") if isinstance(attestor, dict) else None
        in_repo_default = False
        if self.o.allowed_signers is not None:
            signers: Path | None = self._abs(self.o.allowed_signers)
            if not signers.is_file():
                raise _Stop(EXIT_USAGE, "usage", f"--allowed-signers {signers}: no such file")
        else:
            candidate = root / ALLOWED_SIGNERS_IN_REPO
            signers = candidate if candidate.is_file() or candidate.is_symlink() else None
            in_repo_default = signers is not None

        fail = self.signature_problems.append
        if signature is None:
            if self.o.require_signed:
                fail("attestation is not signed")
                self.result.checks.append(CheckLine("signature", False, "signed", "not signed"))
            else:
                self.result.notes.append("attestation is not signed (pass --require-signed to refuse that)")
            return
        if not isinstance(signature, dict):
            fail("attestor.signature is not an object")
            self.result.checks.append(CheckLine("signature", False, "an object", _short(signature)))
            return
        claimed = signature.get("principal")
        if signers is None:
            if self.o.require_signed:
                fail("no --allowed-signers file to verify the signature against")
                self.result.checks.append(CheckLine("signature", False, "verified", "no allowed_signers file"))
            else:
                self.result.notes.append(
                    f"attestation is signed (claimed principal '{claimed}') but no allowed_signers file is known, "
                    "so the signature was not checked"
                )
            return
        trusted: bytes | None = None
        if in_repo_default and self.o.require_signed and self.o.base is None:
            # Without --base the base comes from the checkout's own REVIEW.md (target.base), which
            # the change controls: it could name its own commit as the base, where its key is trusted.
            fail(
                "the checkout's allowed_signers is trusted only as of a base the caller names — pass "
                "--base <the target branch's commit>, or --allowed-signers from a trusted location"
            )
            self.result.checks.append(CheckLine("signature", False, "a trusted base", "base chosen by the checkout"))
            return
        if in_repo_default:
            trusted, why = in_repo_signers_at_base(root, signers, base_sha)
            if why is not None:
                message = (
                    f"{why}: the reviewed change cannot vouch for its own signer — pass --allowed-signers "
                    "from a trusted location"
                )
                if self.o.require_signed:
                    fail(message)
                else:
                    self.result.notes.append(message)
        if trusted is not None:
            # Verify against a private copy of the bytes just checked, never the path again.
            import tempfile

            with tempfile.TemporaryDirectory(prefix="agentreview-signers-") as tmp:
                copy = Path(tmp) / "allowed_signers"
                copy.write_bytes(trusted)
                principal = self._verify_signature(raw, copy, shown=signers)
        else:
            principal = self._verify_signature(raw, signers, shown=signers)
        if principal is not None:
            self.result.principal = principal
            self.result.checks.append(CheckLine("signature", True, f"a key in {signers}", f"signed by {principal}"))
        if in_repo_default:
            self.result.notes.append(
                f"allowed_signers taken from the checkout ({signers}); a merge gate should pass --allowed-signers "
                "from a location the change cannot edit"
            )

    def _verify_signature(self, raw: dict[str, Any], signers: Path, *, shown: Path) -> str | None:
        from agentreview.model.contracts import SignatureInvalidError
        from agentreview.signing.signers import verify_signature

        try:
            return verify_signature(raw, signers, self.registry())
        except SignatureInvalidError as exc:
            self.signature_problems.append(str(exc).replace(str(signers), str(shown)))
            self.result.checks.append(CheckLine("signature", False, f"a key in {shown}", "does not verify"))
            return None


def verify(options: VerifyOptions) -> VerifyResult:
    """Run AIP-62 verification; never raises for bad input (the result carries the exit code)."""
    return _Verifier(options).run()
