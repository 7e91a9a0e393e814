"""Lane executors: what the core hands a lane (:class:`LaneRequest`) and what comes back (:class:`LaneOutcome`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agentreview.model.record import record

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.check_model import CheckModel
    from agentreview.model.contracts.reviewers import PresetSpec, ReviewerProvider
    from agentreview.model.manifest import AgentCheck, CommandCheck


OutcomeKind = Literal["exited", "reported", "timeout", "skipped"]


@record
class ReportedFinding:
    """One finding as a reviewer reported it (already shape-checked)."""

    severity: Literal["high", "medium", "low"]
    title: str
    detail: str = ""
    file: str | None = None
    line: int | None = None


@record
class FallbackAttempt:
    """A reviewer preset that was tried before the one that ran, and why it was unavailable."""

    preset: str
    error: str
    # The audit's buckets for this attempt (see ``ReviewerResult``): drift that made it unavailable.
    unknown_fields: tuple[str, ...] = ()
    unsafe_values: tuple[str, ...] = ()


@record
class DeltaRange:
    """A composed agent lane reviews only ``prior_head..head``; the attestation still covers base..head."""

    prior_head_sha: str
    prior_range_sha: str
    prior_attestation_sha256: str


@record
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
    # The audit's buckets for the reviewer that ended the lane (see ``ReviewerResult``).
    unknown_fields: tuple[str, ...] = ()
    unsafe_values: tuple[str, ...] = ()

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


@record
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
    # Model families that wrote the change, as the run was told (``agentreview run --authored-by``);
    # agent lanes add what the range's commits say and never review with such a family.
    authored_by: frozenset[str] = frozenset()
    # The host's own variables no lane process may inherit (agentreview.host.secrets): a command lane
    # runs with the host's environment minus these, a reviewer never gets them from its provider's
    # grants. None: the executor asks ``agentreview.api.lane_env`` (this host's configuration).
    withheld_env: frozenset[str] | None = None


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
