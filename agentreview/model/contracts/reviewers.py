"""Reviewer-session providers: one reviewer attempt in, how it ended out."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from agentreview.model.record import record


@record
class PresetSpec:
    """A host-local reviewer preset: which provider runs it, with which model and options."""

    name: str
    provider: str
    model: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    builtin: bool = False


ReviewerEnd = Literal[
    "verdict",  # the provider produced a verdict file (the executor reads and validates it)
    "unavailable",  # spawn/auth/quota/transport/empty turn/capability missing: fallback allowed
    "timeout",  # the deadline passed and the reviewer was killed: no fallback
    "boundary_violation",  # the reviewer tried to step outside read-only: terminal, no fallback
    "malformed",  # an answer that looks like a finding but cannot be parsed: terminal
    "cancelled",
]


@record
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
    # The answer form for a reviewer with read tools only (no shell): it names no command and points
    # at the range's diff and log, which the provider writes and names at its end.
    read_prompt: str = ""
    review_id: str = ""
    timeout_ms: int = 0
    attempt: int = 1  # 1-based, counted across the whole preset chain
    # The host's own variables (LaneRequest.withheld_env): no grant of the provider hands them on; only a
    # preset's explicit ``env`` list can.
    withheld_env: frozenset[str] = frozenset()


# The reasons a provider may ask the host to run the same preset once more before falling back
# (reviewer-clis.md §1.3): an auth path the CLI could not use, a host path it could not start on.
HostRetry = Literal["auth_path_unavailable", "host_path_unavailable"]


@record
class ReviewerResult:
    """How one attempt ended. A provider that audits its reviewer's output names what the audit
    found in two buckets (the wrapper contract's): ``unknown_fields``, a shape it could not verify
    (drift: the attempt is ``unavailable`` and another reviewer may try), and ``unsafe_values``, a
    breached boundary (a tool use outside the allow-list, a known field carrying an unsafe value:
    terminal). Both are short, redacted descriptions; both are recorded with the lane.
    ``notes`` are lines the lane records beside its outcome (a retry of the preset, a refreshed
    credential that could not be saved); ``host_retry`` asks the host for one more run of the
    same preset before an ``unavailable`` end falls back; ``family`` is the model family that
    actually answered when only the run could tell (OpenCode runs any provider's model)."""

    end: ReviewerEnd
    error: str | None = None
    retryable: bool = False
    session_id: str | None = None
    model: str | None = None
    unknown_fields: tuple[str, ...] = ()
    unsafe_values: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    host_retry: HostRetry | None = None
    family: str | None = None


@record
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
