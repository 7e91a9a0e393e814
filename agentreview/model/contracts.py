"""The plain data that crosses the boundary between the core and its plugins.

A plugin receives everything it needs as arguments and returns plain results; it
never reaches into the core's internals, and the core never imports a plugin.
These dataclasses and protocols are that boundary. They are deliberately free of
pydantic so a plugin module can be imported cheaply.

Who decides what:

* A lane executor returns a :class:`LaneOutcome` (what happened). The core alone
  turns it into a ``LaneResult`` status (``agentreview.model.lanes.to_lane_result``),
  so no plugin can declare a lane ``pass``: an agent lane passes only when the
  core finds no finding at or above ``blockOn``.
* A pack loader returns the bytes and the trust decision for one reference form.
  The core computes the digest and confines rubrics.
* A reviewer-session provider runs one reviewer attempt and reports how it ended.
* A signer signs canonical bytes and verifies a signature against allowed_signers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.check_model import CheckModel
    from agentreview.model.manifest import AgentCheck, CommandCheck


# --------------------------------------------------------------------------- lanes

OutcomeKind = Literal["exited", "reported", "timeout", "skipped"]


@dataclass(frozen=True)
class ReportedFinding:
    """One finding as a reviewer reported it (already shape-checked)."""

    severity: Literal["high", "medium", "low"]
    title: str
    detail: str = ""
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class FallbackAttempt:
    """A reviewer preset that was tried before the one that ran, and why it was unavailable."""

    preset: str
    error: str


@dataclass(frozen=True)
class DeltaRange:
    """A composed agent lane reviews only ``prior_head..head``; the attestation still covers base..head."""

    prior_head_sha: str
    prior_range_sha: str
    prior_attestation_sha256: str


@dataclass(frozen=True)
class LaneOutcome:
    """What a lane executor observed. The core derives the lane status from it.

    Build one with the class methods; an executor never raises (the core also
    guards against that, turning any exception into a ``skipped`` lane).
    """

    kind: OutcomeKind
    exit_code: int | None = None
    output: str = ""
    findings: tuple[ReportedFinding, ...] = ()
    summary: str | None = None
    error: str | None = None
    session_id: str | None = None
    preset: str | None = None
    model: str | None = None
    fallbacks: tuple[FallbackAttempt, ...] = ()

    @classmethod
    def exited(cls, exit_code: int, output: str = "") -> LaneOutcome:
        return cls(kind="exited", exit_code=exit_code, output=output)

    @classmethod
    def reported(
        cls,
        findings: Sequence[ReportedFinding],
        *,
        summary: str | None = None,
        session_id: str | None = None,
        preset: str | None = None,
        model: str | None = None,
        fallbacks: Sequence[FallbackAttempt] = (),
    ) -> LaneOutcome:
        return cls(
            kind="reported",
            findings=tuple(findings),
            summary=summary,
            session_id=session_id,
            preset=preset,
            model=model,
            fallbacks=tuple(fallbacks),
        )

    @classmethod
    def timeout(cls, error: str, output: str = "", **session: Any) -> LaneOutcome:
        return cls(kind="timeout", error=error, output=output, **session)

    @classmethod
    def skipped(cls, error: str, **session: Any) -> LaneOutcome:
        return cls(kind="skipped", error=error, **session)


@dataclass(frozen=True)
class PresetSpec:
    """A host-local reviewer preset: which provider runs it, with which model and options."""

    name: str
    provider: str
    model: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    builtin: bool = False


@dataclass(frozen=True)
class LaneRequest:
    """Everything one lane needs. ``check`` is the resolved check (pack overrides applied,
    id namespaced as ``<as>/<id>`` for a pack check); for a check kind a plugin contributes, it
    is an instance of that executor's ``check_model``."""

    check: CommandCheck | AgentCheck | CheckModel
    review_id: str
    repo_root: Path
    base_sha: str
    head_sha: str
    placeholders: Mapping[str, str]
    run_dir: Path
    cancel: threading.Event
    # Command lanes and prepare steps: the ``run`` line with every placeholder already bound
    # by the core (unbound names are compile errors before anything runs).
    command: str | None = None
    # Absolute rubric path for an agent check (None for a command check or an unreadable rubric).
    rubric_path: Path | None = None
    # Composition: set when the core found a prior passing attestation for this agent lane.
    delta: DeltaRange | None = None
    # Presets and providers the host knows (agent lanes only).
    presets: Mapping[str, PresetSpec] = field(default_factory=dict)
    providers: Mapping[str, ReviewerProvider] = field(default_factory=dict)
    requester_session_id: str | None = None
    home: Path | None = None


@runtime_checkable
class LaneExecutor(Protocol):
    """Runs every lane of one check ``kind`` (``command``, ``agent``, or a kind the plugin adds).

    An executor for a new kind also has a ``check_model`` attribute: a subclass of
    ``agentreview.api.CheckModel`` whose ``kind`` is ``Literal["<kind>"]``, which the parser uses
    to validate such checks in a REVIEW.md. (It is not a protocol member, so the executors of the
    built-in kinds, whose models are the spec's, satisfy the protocol without it.) The core folds
    a plugin kind's outcome like this: ``exited`` 0 is ``pass`` and any other code ``fail``;
    ``reported`` findings fail the lane when one reaches the check's ``blockOn`` if the model
    declares one, else when there is any finding at all.
    """

    kind: str

    def run_lane(self, request: LaneRequest) -> LaneOutcome:
        """Run one lane to completion, honouring ``request.cancel`` and ``check.timeoutMs``.

        Must not raise and must not leave a process behind.
        """
        ...


# --------------------------------------------------------------------------- packs


class PackLoadError(Exception):
    """A pack reference could not be loaded; the message names the reference and the fix."""


class PackUnavailableError(PackLoadError):
    """The pack cannot be obtained here (not installed, offline). Verify reports this as a note."""


@dataclass(frozen=True)
class PackLoadContext:
    repo_root: Path
    manifest_dir: Path
    home: Path
    timeout_s: float = 120.0
    offline: bool = False


@dataclass(frozen=True)
class LoadedPack:
    """A pack's root (real path), its REVIEW.md bytes as read, and whether its commands may run unasked."""

    root: Path
    source: bytes
    trusted: bool
    origin: str = ""


@runtime_checkable
class PackLoader(Protocol):
    """Loads one reference form: ``path``, ``npm`` or ``git+https``."""

    form: str

    def load(self, ref: str, ctx: PackLoadContext) -> LoadedPack:
        """Return the loaded pack or raise :class:`PackLoadError` (never run pack code)."""
        ...


# --------------------------------------------------------------------------- reviewers

ReviewerEnd = Literal[
    "verdict",  # the provider produced a verdict file (the executor reads and validates it)
    "unavailable",  # spawn/auth/quota/transport/empty turn/capability missing: fallback allowed
    "timeout",  # the deadline passed and the reviewer was killed: no fallback
    "boundary_violation",  # the reviewer tried to step outside read-only: terminal, no fallback
    "malformed",  # an answer that looks like a finding but cannot be parsed: terminal
    "cancelled",
]


@dataclass(frozen=True)
class ReviewerRequest:
    """One reviewer attempt."""

    preset: PresetSpec
    prompt: str
    check_id: str
    repo_root: Path
    base_sha: str
    head_sha: str
    rubric_path: Path
    verdict_path: Path
    work_dir: Path
    deadline: float  # time.monotonic() value shared by retries and fallbacks
    cancel: threading.Event
    home: Path | None = None
    # The same prompt for a reviewer with no write tool: it asks for the verdict JSON as the
    # final answer, which the provider then writes to ``verdict_path`` (``prompt`` asks the
    # reviewer to write the file itself, as an ``exec`` reviewer does).
    answer_prompt: str = ""
    review_id: str = ""
    timeout_ms: int = 0
    attempt: int = 1  # 1-based, counted across the whole preset chain


@dataclass(frozen=True)
class ReviewerResult:
    end: ReviewerEnd
    error: str | None = None
    retryable: bool = False
    session_id: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class ProviderStatus:
    """Whether a provider's CLI is installed and usable here (for ``agentreview presets``)."""

    installed: bool
    usable: bool
    version: str | None = None
    detail: str = ""


@runtime_checkable
class ReviewerProvider(Protocol):
    """Runs a reviewer CLI read-only and isolated (see docs/providers.md).

    Optional member (not part of the protocol check, so a provider without it still
    qualifies): ``validate_options(options: Mapping[str, Any]) -> Sequence[str]``. The
    core calls it with the options of every user preset in ``presets.toml`` that names
    this provider (every key but ``provider`` and ``model``) when the file is read, and
    refuses the file with ``<file>: [presets.<name>]: <first problem>``; so each problem
    is one sentence starting with the option's name, e.g. ``"binary must be a non-empty
    string"``. Options it does not mention pass through to ``PresetSpec.options``.
    ``agentreview.api.ReviewerBase`` implements it from a ``preset_options`` declaration.
    """

    name: str

    def status(self) -> ProviderStatus: ...

    def review(self, request: ReviewerRequest) -> ReviewerResult: ...


# --------------------------------------------------------------------------- signers


class SigningError(Exception):
    """Signing was not possible; a review is still recorded, unsigned."""


class SignatureInvalidError(Exception):
    """A signature does not verify against the allowed_signers file."""


@dataclass(frozen=True)
class SignerContext:
    home: Path
    repo_root: Path | None = None
    principal: str | None = None
    timeout_s: float = 30.0


@dataclass(frozen=True)
class KeyInfo:
    fingerprint: str
    principal: str
    public_key_path: Path
    allowed_signers_line: str


@runtime_checkable
class Signer(Protocol):
    """Signs the canonical attestation bytes; verifies a recorded signature.

    ``name`` is what ``[signing].signer`` in config.toml selects for signing. ``algorithms``
    are the ``attestor.signature.alg`` values this signer writes and verifies, the first being
    the one :meth:`sign` writes (the built-in ``ssh`` signer: ``("ssh-ed25519",)``). A verifier
    hands a signature to the installed signer that declares its alg, whichever signer the host
    signs with; two installed signers declaring one alg is a conflict.
    """

    name: str
    algorithms: tuple[str, ...]

    def sign(self, payload: bytes, ctx: SignerContext) -> dict[str, str]:
        """Return the ``attestor.signature`` member (its ``alg`` is ``algorithms[0]``), or raise
        :class:`SigningError`."""
        ...

    def verify(self, payload: bytes, signature: Mapping[str, Any], allowed_signers: Path) -> str:
        """Return the verified principal, or raise :class:`SignatureInvalidError`.

        Called only for a signature whose ``alg`` is one of :attr:`algorithms`; the format of
        the ``allowed_signers`` file is the signer's own."""
        ...

    def key_info(self, ctx: SignerContext) -> KeyInfo:
        """Describe (creating on first use) the host key."""
        ...
