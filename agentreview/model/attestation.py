"""The attestation document, ``agentproto.review.attestation/v1``.

Two invariants are enforced by construction:

* ``verdict`` is always the fold of ``lanes`` and ``rangeSha`` always the digest of
  ``target``. :meth:`Attestation.build` computes both, and validating a document
  whose derived members disagree raises, unless the caller reads it for verification
  (``Attestation.read``), where the mismatch is reported as a problem instead. The
  paths that skip validation are closed too: ``model_copy(update=...)`` re-checks,
  and serializing (``to_json_dict``, ``signed_bytes``, ``model_dump``) a document
  that was not read for verification re-checks, so a verdict forged by copying,
  ``model_construct`` or mutating ``lanes`` can never be signed or exported.
* The signed bytes and the attestation digest are methods of the document, so no
  caller can hash a different serialization.

Reading tolerates members this version does not know (later v1 revisions add
optional members), and keeps them, so canonical bytes and digests of a document
written by a newer host are computed over what that host signed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from agentreview.model.digests import attestation_sha256_of, loads_strict, range_sha, signed_bytes_of
from agentreview.model.fold import fold_verdict
from agentreview.model.signature_alg import SIGNATURE_ALG_PATTERN

SCHEMA = "agentproto.review.attestation/v1"
PACK_DIGEST_ALG = "agentproto-pack-digest/v1"
SIGNATURE_ALG = "ssh-ed25519"

Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
DateTime = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
NonEmpty = Annotated[str, Field(min_length=1)]
Severity = Literal["high", "medium", "low"]
LaneStatus = Literal["pass", "fail", "skipped", "timeout"]
Verdict = Literal["pass", "block", "incomplete"]


_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}(?::?\d{2})?)$")


class AttestationInconsistentError(ValueError):
    """A derived member (``verdict``, ``rangeSha``) does not follow from the members it is derived from."""


def _iso(value: str) -> str:
    # ISO 8601 date-time with a time zone ("Z" or an offset), as the reference's schema requires;
    # fromisoformat alone would also take a bare date or a time without a zone.
    if not _ISO_DATETIME.match(value):
        raise ValueError(f"'{value}' is not an ISO 8601 date-time with a time zone (e.g. 2025-01-31T12:00:00.000Z)")
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


class Member(BaseModel):
    """Base of every attestation object: unknown members are kept, nothing is mutable."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class Finding(Member):
    severity: Severity
    title: str
    detail: str
    file: str | None = None
    line: Annotated[int, Field(ge=1)] | None = None


class ComposedFrom(Member):
    rangeSha: Hex64
    headSha: NonEmpty
    attestationSha256: Hex64


class Fallback(Member):
    preset: str
    error: str


class LaneResult(Member):
    id: str
    # The spec's kinds, or a check kind a plugin contributes (an id-shaped name).
    kind: Literal["command", "agent"] | Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$", max_length=64)]
    status: LaneStatus
    blocking: bool
    findings: list[Finding]
    # Two arms so the schema says "minimum 0" for both and an integer stays an integer.
    durationMs: Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0, allow_inf_nan=False)]
    error: str | None = None
    sessionId: str | None = None
    preset: str | None = None
    summary: str | None = None
    exitCode: int | None = None
    model: str | None = None
    fallbacks: list[Fallback] | None = None
    composedFrom: ComposedFrom | None = None


class Target(Member):
    repoRemote: NonEmpty
    baseSha: NonEmpty
    headSha: NonEmpty


class Signature(Member):
    # Any alg of a sane shape (model/signature_alg.py): which signer verifies it is the verifier's question.
    alg: Annotated[str, Field(pattern=SIGNATURE_ALG_PATTERN)]
    keyFingerprint: Annotated[str, Field(pattern=r"^SHA256:.+$")]
    principal: str
    signedAt: DateTime
    sig: str

    _signed_at = field_validator("signedAt")(classmethod(lambda cls, v: _iso(v)))


class Attestor(Member):
    daemon: str
    presets: Annotated[list[str], Field(json_schema_extra={"uniqueItems": True})]
    signature: Signature | None = None

    @field_validator("presets")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("attestor.presets must not repeat a preset")
        return value


class RubricDigest(Member):
    check: str
    path: str
    sha256: Hex64


class PackDigest(Member):
    ref: str
    id: str
    version: str
    # Kept as a plain string when reading: an unknown recipe is a verification
    # failure with its own message, not an unreadable document.
    alg: str
    sha256: Hex64


class GitAuthor(Member):
    name: str
    email: str


class Requester(Member):
    sessionId: str | None = None
    gitAuthor: GitAuthor | None = None


class PullRequest(Member):
    provider: Literal["github"]
    repo: Annotated[str, Field(pattern=r"^[^/]+/[^/]+$")]
    number: Annotated[int, Field(ge=1)]
    url: str


class Attestation(Member):
    schema_: Literal["agentproto.review.attestation/v1"] = Field(alias="schema")
    runId: Annotated[str, Field(pattern=r"^review-.+$")]
    reviewId: str
    manifestSha: Hex64
    binding: NonEmpty
    target: Target
    rangeSha: Hex64
    lanes: list[LaneResult]
    verdict: Verdict
    attestor: Attestor
    rubrics: list[RubricDigest]
    packs: Annotated[list[PackDigest], Field(min_length=1)] | None = None
    dirty: Literal[True] | None = None
    requester: Requester | None = None
    pr: PullRequest | None = None
    createdAt: DateTime

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    # True only for a document read for verification: its derived members are whatever the
    # file says, and the verifier reports a mismatch instead of refusing to read it.
    _read_for_verification: bool = PrivateAttr(default=False)

    _created_at = field_validator("createdAt")(classmethod(lambda cls, v: _iso(v)))

    @model_validator(mode="after")
    def _derived_members_follow(self, info: ValidationInfo) -> Attestation:
        if info.context and info.context.get("reading"):
            self._read_for_verification = True
            return self
        self._require_consistent()
        return self

    @model_serializer(mode="wrap")
    def _serialize_consistent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Every dump path (model_dump, model_dump_json, to_json_dict) passes here, including
        # those of a document made without validation (model_construct) or mutated after it.
        if not self._read_for_verification:
            self._require_consistent()
        return handler(self)

    def inconsistency(self) -> str | None:
        """Why ``verdict`` or ``rangeSha`` does not follow from the document, or None."""
        expected = self.refold()
        if self.verdict != expected:
            return f"verdict '{self.verdict}' does not follow from its lanes (expected '{expected}')"
        expected_range = range_sha(self.target.baseSha, self.target.headSha)
        if self.rangeSha != expected_range:
            return f"rangeSha '{self.rangeSha}' is not sha256('<baseSha>..<headSha>') of its target"
        return None

    def _require_consistent(self) -> None:
        problem = self.inconsistency()
        if problem is not None:
            raise AttestationInconsistentError(problem)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Attestation:
        """A copy; with ``update`` it is a new document, so its derived members must follow
        (pydantic's copy does not validate, which would let a caller set any verdict)."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied._read_for_verification = False
            copied._require_consistent()
        return copied

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
        lanes: Sequence[LaneResult | dict[str, Any]],
        daemon: str,
        rubrics: Sequence[RubricDigest | dict[str, Any]] = (),
        packs: Sequence[PackDigest | dict[str, Any]] = (),
        dirty: bool = False,
        requester: Requester | dict[str, Any] | None = None,
        pr: PullRequest | dict[str, Any] | None = None,
        created_at: str | None = None,
    ) -> Attestation:
        """Build an attestation; the verdict and rangeSha are computed, never accepted."""
        lane_models = [LaneResult.model_validate(lane) if isinstance(lane, dict) else lane for lane in lanes]
        presets: list[str] = []
        for lane in lane_models:
            if lane.preset and lane.preset not in presets:
                presets.append(lane.preset)
        for pack in packs:
            alg = pack["alg"] if isinstance(pack, dict) else pack.alg
            if alg != PACK_DIGEST_ALG:
                raise ValueError(f"pack digest alg must be '{PACK_DIGEST_ALG}', got '{alg}'")
        req = Requester.model_validate(requester) if isinstance(requester, dict) else requester
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
            "lanes": [lane.to_json_dict() for lane in lane_models],
            "verdict": fold_verdict((lane.blocking, lane.status) for lane in lane_models),
            "attestor": {"daemon": daemon, "presets": presets},
            "rubrics": [r if isinstance(r, dict) else r.to_json_dict() for r in rubrics],
            "createdAt": created_at or now_iso(),
        }
        if packs:
            data["packs"] = [p if isinstance(p, dict) else p.to_json_dict() for p in packs]
        if dirty:
            data["dirty"] = True
        if req is not None:
            data["requester"] = req.to_json_dict()
        if pr is not None:
            data["pr"] = pr if isinstance(pr, dict) else pr.to_json_dict()
        return cls.model_validate(data)

    @classmethod
    def read(cls, data: Any) -> Attestation:
        """Validate a document for verification: shapes are checked, the fold is not
        (a verifier reports a verdict that does not follow from the lanes as a problem)."""
        return cls.model_validate(data, context={"reading": True})

    @classmethod
    def read_json(cls, text: str | bytes) -> Attestation:
        """Parse and read; ``NaN``/``Infinity`` (which Python's json accepts) and duplicate keys are refused."""
        return cls.read(loads_strict(text))

    def with_signature(self, signature: Signature | dict[str, Any]) -> Attestation:
        sig = Signature.model_validate(signature) if isinstance(signature, dict) else signature
        attestor = self.attestor.model_copy(update={"signature": sig})
        return self.model_copy(update={"attestor": attestor})

    # ------------------------------------------------------------------ bytes and digests

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON members; raises :class:`AttestationInconsistentError` for a forged document.

        A document this host builds omits unset members (never ``"x": null``), so its bytes
        are what they always were. A document read from a file keeps exactly the members
        the file has, an explicit ``null`` included: canonical JSON keeps ``null``, so its
        signed bytes and digest (composedFrom, a re-export) are those its host signed.
        """
        if not self._read_for_verification:
            self._require_consistent()
            return self.model_dump(mode="json", exclude_none=True, by_alias=True)
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)

    def signed_bytes(self) -> bytes:
        """Canonical JSON of the attestation with ``attestor.signature`` removed (what is signed)."""
        return signed_bytes_of(self.to_json_dict())

    def attestation_sha256(self) -> str:
        """SHA-256 of the canonical JSON of the whole attestation, signature included."""
        return attestation_sha256_of(self.to_json_dict())

    def export_text(self) -> str:
        """The export form: two-space indent, trailing newline (key order as built)."""
        return json.dumps(self.to_json_dict(), indent=2, ensure_ascii=False) + "\n"

    def refold(self) -> Verdict:
        return fold_verdict((lane.blocking, lane.status) for lane in self.lanes)




def now_iso() -> str:
    """ISO 8601 UTC timestamp with milliseconds, as the reference host writes it."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
