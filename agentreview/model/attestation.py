"""The attestation document, ``agentproto.review.attestation/v1``: its JSON members seen through read-only views.

Every way to make or serialize a document re-checks that ``verdict`` is the fold of ``lanes`` and ``rangeSha``
the digest of ``target``, so a forged verdict is never signed or exported. Members read from another host,
unknown ones and explicit nulls included, are kept, since they are signed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Literal, Self, TypeVar, get_args, overload

from agentreview.model.attestation_read import (
    DATETIME,
    DURATION,
    HEX64,
    KIND,
    NON_EMPTY,
    OWNER_NAME,
    PRESETS,
    SIGNATURE_ALG,
    STRING,
    STRINGS,
    TRUE,
    copy_json,
    prefixed,
    read_object,
)
from agentreview.model.attestation_read import SCHEMA as SCHEMA
from agentreview.model.attestation_read import AttestationShapeError as AttestationShapeError
from agentreview.model.digests import attestation_sha256_of, json_text, loads_strict, range_sha, signed_bytes_of
from agentreview.model.fold import fold_verdict
from agentreview.model.reader import Bool, Int, ListOf, Lit, Obj, Spec

PACK_DIGEST_ALG = "agentproto-pack-digest/v1"

Severity = Literal["high", "medium", "low"]
LaneStatus = Literal["pass", "fail", "skipped", "timeout"]
Verdict = Literal["pass", "block", "incomplete"]

T = TypeVar("T")
V = TypeVar("V", bound="Member")


class AttestationInconsistentError(ValueError):
    """A derived member (``verdict``, ``rangeSha``) does not follow from the members it is derived from."""


# --------------------------------------------------------------------------- views


class _Value(Generic[T]):
    """A JSON member seen as its value (None when absent), with what the reader takes for it."""

    __slots__ = ("key", "required", "spec")

    def __init__(self, spec: Spec, *, optional: bool = False, key: str = "") -> None:
        self.spec, self.required, self.key = spec, not optional, key

    def __set_name__(self, owner: type, name: str) -> None:
        if not self.key:
            self.key = name

    @overload
    def __get__(self, obj: None, owner: type) -> _Value[T]: ...
    @overload
    def __get__(self, obj: Member, owner: type) -> T: ...
    def __get__(self, obj: Member | None, owner: type) -> _Value[T] | T:
        if obj is None:
            return self
        # Absent (None) only when the member is optional, and then None is a T.
        return obj._data.get(self.key)  # type: ignore[return-value]


class _Views(_Value[T]):
    """A JSON member seen as typed views (an object's view, a tuple of them), made once per document."""

    __slots__ = ("make",)

    def __init__(self, spec: Spec, make: Callable[[Any], T], *, optional: bool = False) -> None:
        super().__init__(spec, optional=optional)
        self.make = make

    @overload
    def __get__(self, obj: None, owner: type) -> _Views[T]: ...
    @overload
    def __get__(self, obj: Member, owner: type) -> T: ...
    def __get__(self, obj: Member | None, owner: type) -> _Views[T] | T:
        if obj is None:
            return self
        views = obj._views
        try:
            return views[self.key]
        except KeyError:
            made = views[self.key] = self.make(obj._data.get(self.key))
            return made


def _one(cls: type[V]) -> _Views[V]:
    return _Views(cls._obj, cls._of)


def _maybe_one(cls: type[V]) -> _Views[V | None]:
    return _Views(cls._obj, lambda data: None if data is None else cls._of(data), optional=True)


def _many(cls: type[V]) -> _Views[tuple[V, ...]]:
    return _Views(ListOf(cls._obj), lambda data: tuple(cls._of(item) for item in data))


def _maybe_many(cls: type[V], min_length: int | None = None) -> _Views[tuple[V, ...] | None]:
    return _Views(
        ListOf(cls._obj, min_length=min_length),
        lambda data: None if data is None else tuple(cls._of(item) for item in data),
        optional=True,
    )


def _maybe_strings() -> _Views[tuple[str, ...] | None]:
    return _Views(STRINGS, lambda data: None if data is None else tuple(data), optional=True)


def _json_of(value: Any) -> Any:
    """A member value as JSON: a view becomes its members, a tuple a list."""
    if isinstance(value, Member):
        return value._data
    if isinstance(value, list | tuple):
        return [_json_of(item) for item in value]
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return dict(value)
    return value


def _members(data: Mapping[str, Any] | Member) -> dict[str, Any]:
    if isinstance(data, Member):
        return data._data
    if not isinstance(data, Mapping):
        return data  # the reader says what it is instead
    return {key: _json_of(value) for key, value in data.items()}


def _restore(cls: type[Member], data: dict[str, Any], read: bool) -> Member:
    # Unpickling goes through the same checks as any other way to make a document.
    if read and issubclass(cls, Attestation):
        return cls.read(data)
    return cls.from_json(data)


class Member:
    """A read-only view of one object of an attestation; unknown members are kept.

    Made by :meth:`from_json` (or the constructor, with the members as keywords), both
    shape-checked; changed only into a new object by :meth:`replace`.
    """

    __slots__ = ("_data", "_views")
    _obj: ClassVar[Obj]  # what the reader takes for the object: the schema's definition, from its members
    _data: dict[str, Any]
    _views: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        members = [m for m in vars(cls).values() if isinstance(m, _Value)]
        cls._obj = Obj(cls.__name__, *((m.key, m.required, m.spec) for m in members))

    def __init__(self, **members: Any) -> None:
        data = read_object(self._obj, _members(members), drop_nulls=True)
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_views", {})

    @classmethod
    def _of(cls, data: dict[str, Any]) -> Self:
        # ``data`` was checked by the reader, as this object or as part of its document.
        obj = object.__new__(cls)
        object.__setattr__(obj, "_data", data)
        object.__setattr__(obj, "_views", {})
        return obj

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | Member) -> Self:
        """The object of these JSON members (views and tuples allowed), shape-checked; null members are unset."""
        return cls._of(read_object(cls._obj, _members(data), drop_nulls=True))

    def replace(self, **changes: Any) -> Self:
        """A new object with ``changes`` applied (None unsets a member), checked as a new object is."""
        return type(self).from_json({**self._data, **changes})

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON members, a fresh copy; unset members (null) left out."""
        return read_object(self._obj, self._data, drop_nulls=True)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: make a changed copy with replace()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: make a changed copy with replace()")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), copy_json(self._data), getattr(self, "_read", False)))


class Finding(Member):
    __slots__ = ()
    severity: _Value[Severity] = _Value(Lit(*get_args(Severity)))
    title: _Value[str] = _Value(STRING)
    detail: _Value[str] = _Value(STRING)
    file: _Value[str | None] = _Value(STRING, optional=True)
    line: _Value[int | None] = _Value(Int(gt=0, exact=True), optional=True)


class ComposedFrom(Member):
    __slots__ = ()
    rangeSha: _Value[str] = _Value(HEX64)
    headSha: _Value[str] = _Value(NON_EMPTY)
    attestationSha256: _Value[str] = _Value(HEX64)


class Fallback(Member):
    __slots__ = ()
    preset: _Value[str] = _Value(STRING)
    error: _Value[str] = _Value(STRING)
    unknownFields = _maybe_strings()
    unsafeValues = _maybe_strings()


class LaneResult(Member):
    __slots__ = ()
    id: _Value[str] = _Value(STRING)
    # The spec's kinds ("command", "agent"), or a check kind a plugin contributes (an id-shaped name).
    kind: _Value[str] = _Value(KIND)
    status: _Value[LaneStatus] = _Value(Lit(*get_args(LaneStatus)))
    blocking: _Value[bool] = _Value(Bool())
    findings = _many(Finding)
    durationMs: _Value[int | float] = _Value(DURATION)
    error: _Value[str | None] = _Value(STRING, optional=True)
    sessionId: _Value[str | None] = _Value(STRING, optional=True)
    preset: _Value[str | None] = _Value(STRING, optional=True)
    summary: _Value[str | None] = _Value(STRING, optional=True)
    exitCode: _Value[int | None] = _Value(Int(exact=True), optional=True)
    model: _Value[str | None] = _Value(STRING, optional=True)
    fallbacks = _maybe_many(Fallback)
    # The reviewer audit's two buckets: shapes it could not verify, and breached boundaries.
    unknownFields = _maybe_strings()
    unsafeValues = _maybe_strings()
    composedFrom = _maybe_one(ComposedFrom)


class Target(Member):
    __slots__ = ()
    repoRemote: _Value[str] = _Value(NON_EMPTY)
    baseSha: _Value[str] = _Value(NON_EMPTY)
    headSha: _Value[str] = _Value(NON_EMPTY)


class Signature(Member):
    __slots__ = ()
    # Any alg of a sane shape (model/signature_alg.py): which signer verifies it is the verifier's question.
    alg: _Value[str] = _Value(SIGNATURE_ALG)
    keyFingerprint: _Value[str] = _Value(prefixed("SHA256:"))
    principal: _Value[str] = _Value(STRING)
    signedAt: _Value[str] = _Value(DATETIME)
    sig: _Value[str] = _Value(STRING)


class Attestor(Member):
    __slots__ = ()
    daemon: _Value[str] = _Value(STRING)
    presets: _Views[tuple[str, ...]] = _Views(PRESETS, tuple)
    signature = _maybe_one(Signature)


class RubricDigest(Member):
    __slots__ = ()
    check: _Value[str] = _Value(STRING)
    path: _Value[str] = _Value(STRING)
    sha256: _Value[str] = _Value(HEX64)


class PackDigest(Member):
    __slots__ = ()
    ref: _Value[str] = _Value(STRING)
    id: _Value[str] = _Value(STRING)
    version: _Value[str] = _Value(STRING)
    # Any string: an unknown recipe is a verification failure with its own message, not an unreadable document.
    alg: _Value[str] = _Value(STRING)
    sha256: _Value[str] = _Value(HEX64)


class GitAuthor(Member):
    __slots__ = ()
    name: _Value[str] = _Value(STRING)
    email: _Value[str] = _Value(STRING)


class Requester(Member):
    __slots__ = ()
    sessionId: _Value[str | None] = _Value(STRING, optional=True)
    gitAuthor = _maybe_one(GitAuthor)


class PullRequest(Member):
    __slots__ = ()
    provider: _Value[Literal["github"]] = _Value(Lit("github"))
    repo: _Value[str] = _Value(OWNER_NAME)
    number: _Value[int] = _Value(Int(gt=0, exact=True))
    url: _Value[str] = _Value(STRING)


class Attestation(Member):
    """The whole document. Made by :meth:`build`, :meth:`read` (for verification) or :meth:`from_json`."""

    __slots__ = ("_read",)
    # True only for a document read for verification: its derived members are whatever the
    # file says, and the verifier reports a mismatch instead of refusing to read it.
    _read: bool

    schema_: _Value[Literal["agentproto.review.attestation/v1"]] = _Value(Lit(SCHEMA), key="schema")
    runId: _Value[str] = _Value(prefixed("review-"))
    reviewId: _Value[str] = _Value(STRING)
    manifestSha: _Value[str] = _Value(HEX64)
    binding: _Value[str] = _Value(NON_EMPTY)
    target = _one(Target)
    rangeSha: _Value[str] = _Value(HEX64)
    lanes = _many(LaneResult)
    verdict: _Value[Verdict] = _Value(Lit(*get_args(Verdict)))
    attestor = _one(Attestor)
    rubrics = _many(RubricDigest)
    packs = _maybe_many(PackDigest, min_length=1)
    dirty: _Value[Literal[True] | None] = _Value(TRUE, optional=True)
    requester = _maybe_one(Requester)
    pr = _maybe_one(PullRequest)
    createdAt: _Value[str] = _Value(DATETIME)

    def __init__(self, **members: Any) -> None:
        """A new document from its members; its verdict and rangeSha must follow from them."""
        super().__init__(**members)
        object.__setattr__(self, "_read", False)
        self._require_consistent()

    @classmethod
    def _of(cls, data: dict[str, Any], read: bool = False) -> Self:
        obj = super()._of(data)
        object.__setattr__(obj, "_read", read)
        return obj

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | Member) -> Self:
        """A new document from its JSON members: shapes checked, null members unset, and its
        verdict and rangeSha must follow (:class:`AttestationInconsistentError` otherwise)."""
        att = super().from_json(data)
        att._require_consistent()
        return att

    @classmethod
    def read(cls, data: Any) -> Self:
        """Read a document for verification: shapes are checked, the fold is not (a verifier
        reports a verdict that does not follow from the lanes as a problem); every member is
        kept as the file has it, unknown ones and explicit nulls included."""
        return cls._of(read_object(cls._obj, data, drop_nulls=False), read=True)

    @classmethod
    def read_json(cls, text: str | bytes) -> Self:
        """Parse and read; ``NaN``/``Infinity`` (which Python's json accepts) and duplicate keys are refused."""
        return cls.read(loads_strict(text))

    # ------------------------------------------------------------------ consistency

    def inconsistency(self) -> str | None:
        """Why ``verdict`` or ``rangeSha`` does not follow from the document, or None."""
        expected = self.refold()
        if self.verdict != expected:
            return f"verdict '{self.verdict}' does not follow from its lanes (expected '{expected}')"
        target = self._data["target"]
        if self.rangeSha != range_sha(target["baseSha"], target["headSha"]):
            return f"rangeSha '{self.rangeSha}' is not sha256('<baseSha>..<headSha>') of its target"
        return None

    def _require_consistent(self) -> None:
        problem = self.inconsistency()
        if problem is not None:
            raise AttestationInconsistentError(problem)

    def refold(self) -> Verdict:
        """The verdict its lanes fold to (read from the members themselves, never from a cache)."""
        return fold_verdict((lane["blocking"], lane["status"]) for lane in self._data["lanes"])

    # ------------------------------------------------------------------ building

    @classmethod
    def build(
        cls,
        *,
        run_id: str,
        review_id: str,
        manifest_sha: str,
        binding: str,
        repo_remote: str,
        base_sha: str,
        head_sha: str,
        lanes: Sequence[LaneResult | Mapping[str, Any]],
        daemon: str,
        rubrics: Sequence[RubricDigest | Mapping[str, Any]] = (),
        packs: Sequence[PackDigest | Mapping[str, Any]] = (),
        dirty: bool = False,
        requester: Requester | Mapping[str, Any] | None = None,
        pr: PullRequest | Mapping[str, Any] | None = None,
        created_at: str | None = None,
    ) -> Self:
        """Build an attestation; the verdict and rangeSha are computed, never accepted."""
        lane_data = [
            lane._data
            if isinstance(lane, LaneResult)
            else read_object(LaneResult._obj, lane, drop_nulls=True, at=("lanes", i))
            for i, lane in enumerate(lanes)
        ]
        presets: list[str] = []
        for lane in lane_data:
            preset = lane.get("preset")
            if preset and preset not in presets:
                presets.append(preset)
        for pack in packs:
            alg = pack.get("alg") if isinstance(pack, Mapping) else pack.alg
            if alg != PACK_DIGEST_ALG:
                raise ValueError(f"pack digest alg must be '{PACK_DIGEST_ALG}', got '{alg}'")
        req = Requester.from_json(requester) if isinstance(requester, Mapping) else requester
        if req is not None and req.sessionId is None and req.gitAuthor is None:
            req = None
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "runId": run_id,
            "reviewId": review_id,
            "manifestSha": manifest_sha,
            "binding": binding,
            "target": {"repoRemote": repo_remote, "baseSha": base_sha, "headSha": head_sha},
            "rangeSha": range_sha(base_sha, head_sha),
            "lanes": lane_data,
            "verdict": fold_verdict((lane["blocking"], lane["status"]) for lane in lane_data),
            "attestor": {"daemon": daemon, "presets": presets},
            "rubrics": list(rubrics),
            "createdAt": created_at or now_iso(),
        }
        if packs:
            data["packs"] = list(packs)
        if dirty:
            data["dirty"] = True
        if req is not None:
            data["requester"] = req
        if pr is not None:
            data["pr"] = pr
        return cls.from_json(data)

    def replace(self, **changes: Any) -> Self:
        """A new document with ``changes`` applied (None unsets a member): checked as a new
        document is, so a verdict or rangeSha that does not follow raises, and the result is
        never one read for verification, whatever this one was."""
        return type(self).from_json({**self._data, **changes})

    def with_signature(self, signature: Signature | Mapping[str, Any]) -> Self:
        """This document with ``attestor.signature`` set (re-checked: a forged verdict cannot be signed)."""
        sig = _json_of(signature) if isinstance(signature, Signature) else dict(signature)
        return self.replace(attestor={**self._data["attestor"], "signature": sig})

    # ------------------------------------------------------------------ bytes and digests

    def _document(self) -> dict[str, Any]:
        # The members to serialize, checked again unless read for verification: whatever a
        # caller did to a document it built, an inconsistent one is never written.
        if not self._read:
            self._require_consistent()
        return self._data

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON members, a fresh copy; raises :class:`AttestationInconsistentError` for a forged document.

        A document read from a file keeps exactly its members, an explicit ``null`` included, so its signed
        bytes and digest are those its host signed; one this host builds omits unset members.
        """
        return copy_json(self._document())

    def signed_bytes(self) -> bytes:
        """Canonical JSON of the attestation with ``attestor.signature`` removed (what is signed)."""
        return signed_bytes_of(self._document())

    def attestation_sha256(self) -> str:
        """SHA-256 of the canonical JSON of the whole attestation, signature included."""
        return attestation_sha256_of(self._document())

    def export_text(self) -> str:
        """The export form: two-space indent, trailing newline (the schema's member order)."""
        return json_text(self._document()) + "\n"


def now_iso() -> str:
    """ISO 8601 UTC timestamp with milliseconds, as the reference host writes it."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
