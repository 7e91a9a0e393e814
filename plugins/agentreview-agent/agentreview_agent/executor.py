"""The ``agent`` lane executor: a preset chain of reviewers sharing the check's ``timeoutMs``.

Only an *unavailable* reviewer moves the lane on; it never decides pass or fail (the core applies ``blockOn``).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.api import (
    FallbackAttempt,
    LaneOutcome,
    LaneRequest,
    PresetSpec,
    ReviewerProvider,
    ReviewerRequest,
    ReviewerResult,
    fresh_dir,
    remove_path,
)
from agentreview_agent.families import authoring_families, family_of, preset_family
from agentreview_agent.prompt import LanePrompt
from agentreview_agent.verdict import VerdictError, read_verdict

AFTER_HOST_RETRY = {
    "auth_path_unavailable": "auth_unavailable_after_host_retry",
    "host_path_unavailable": "host_path_unavailable_after_host_retry",
}
SAME_FAMILY = "same_family_as_implementer"
DEFAULT_RETRIES = 1
MAX_RETRIES = 5
RETRY_BACKOFF_S = 0.5


def verdict_path_for(run_dir: Path, check_id: str) -> Path:
    return run_dir / (check_id.replace("/", "__") + ".verdict.json")


def _retries(spec: PresetSpec) -> int:
    value = spec.options.get("retries", DEFAULT_RETRIES)
    return max(0, min(MAX_RETRIES, value)) if isinstance(value, int) and not isinstance(value, bool) else 1


@dataclass
class _Chain:
    """What the lane has learned so far: the reviewers that were unavailable (and notes), and the
    families that wrote the change (family -> evidence)."""

    fallbacks: list[FallbackAttempt] = field(default_factory=list)
    attempt: int = 0
    authors: dict[str, str] = field(default_factory=dict)

    def same_family(self, preset: str, provider: str, family: str | None, ran: bool = False) -> bool:
        """Record and return whether ``family`` wrote the change (then ``preset`` is no independent reviewer)."""
        if family is None or family not in self.authors:
            return False
        how = "answered, so its verdict is not used" if ran else "is not run"
        self.fallbacks.append(
            FallbackAttempt(
                preset,
                f"{SAME_FAMILY}: the change was written by the {family} family ({self.authors[family]}); "
                f"preset '{preset}' ({provider}, {family}) {how}",
            )
        )
        return True


class AgentLaneExecutor:
    kind = "agent"

    def run_lane(self, request: LaneRequest) -> LaneOutcome:
        try:
            return self._run(request)
        except Exception as exc:  # the contract: a lane never raises
            return LaneOutcome.skipped(f"internal error in the agent lane: {type(exc).__name__}: {exc}")

    def _run(self, request: LaneRequest) -> LaneOutcome:
        check: Any = request.check  # an AgentCheck: the core hands this executor its own kind only
        started = time.monotonic()
        deadline = started + check.timeoutMs / 1000
        rubric = request.rubric_path
        if rubric is None or not Path(rubric).is_file():
            return LaneOutcome.skipped(f"rubric not found: {rubric or check.rubric}")
        if request.cancel.is_set():
            return LaneOutcome.skipped("review cancelled before the reviewer spawned")
        verdict_path = verdict_path_for(request.run_dir, check.id)
        prompt = LanePrompt(
            check_id=check.id,
            review_id=request.review_id,
            base_sha=request.delta.prior_head_sha if request.delta else request.base_sha,
            head_sha=request.head_sha,
            rubric_path=Path(rubric),
            verdict_path=verdict_path,
            timeout_ms=check.timeoutMs,
            block_on=check.blockOn,
            prior_head_sha=request.delta.prior_head_sha if request.delta else None,
        )
        chain = _Chain()
        told = frozenset(filter(None, (family_of(f) or f for f in getattr(request, "authored_by", ()))))
        chain.authors, unread = authoring_families(told, request.repo_root, prompt.base_sha, prompt.head_sha)
        if unread:
            chain.fallbacks.append(FallbackAttempt(check.preset, unread))
        names = list(dict.fromkeys([check.preset, *check.fallbackPresets]))
        for name in names:
            spec = request.presets.get(name)
            provider = request.providers.get(spec.provider) if spec is not None else None
            if spec is None or provider is None:
                missing = (
                    f"preset '{name}' not found — neither a built-in preset nor a user preset in presets.toml"
                    if spec is None
                    else f"provider '{spec.provider}' of preset '{name}' is not installed (no plugin registers it)"
                )
                chain.fallbacks.append(FallbackAttempt(name, missing))
                continue
            if chain.same_family(name, spec.provider, preset_family(spec)):
                continue
            outcome = self._run_preset(request, spec, provider, prompt, deadline, chain)
            if outcome is not None:
                return outcome
        if chain.fallbacks and chain.fallbacks[-1].error.startswith(SAME_FAMILY):
            families = ", ".join(sorted(chain.authors))
            return LaneOutcome.skipped(
                f"no_independent_reviewer_available: every preset of this lane is of a family that wrote the change "
                f"({families}); add a fallback preset of another family",
                fallbacks=chain.fallbacks,
            )
        last = chain.fallbacks.pop()
        return LaneOutcome.skipped(
            last.error,
            preset=last.preset,
            fallbacks=chain.fallbacks,
            unknown_fields=last.unknown_fields,
            unsafe_values=last.unsafe_values,
        )

    def _run_preset(
        self,
        request: LaneRequest,
        spec: PresetSpec,
        provider: ReviewerProvider,
        prompt: LanePrompt,
        deadline: float,
        chain: _Chain,
    ) -> LaneOutcome | None:
        """Run one preset with its retries; ``None`` means it was unavailable (try the next)."""
        check = request.check
        retries = _retries(spec)
        session: dict = {"preset": spec.name, "model": spec.model}
        tries = 0
        host_retried: str | None = None  # the host-retry reason of the run that was repeated
        while True:
            if request.cancel.is_set():
                return LaneOutcome.skipped(
                    "review cancelled before the reviewer spawned", fallbacks=chain.fallbacks, **session
                )
            if time.monotonic() >= deadline:
                return LaneOutcome.timeout(
                    f"reviewer exceeded {check.timeoutMs}ms and was killed", fallbacks=chain.fallbacks, **session
                )
            tries += 1
            chain.attempt += 1
            remove_path(prompt.verdict_path)
            work_dir = request.run_dir / "reviewers" / f"{check.id.replace('/', '__')}.{chain.attempt}"
            fresh_dir(work_dir)
            try:
                result = self._attempt(request, spec, provider, prompt, deadline, work_dir, chain.attempt)
            finally:
                shutil.rmtree(work_dir, ignore_errors=True)
            session = {
                "preset": spec.name,
                "model": result.model or spec.model,
                "session_id": result.session_id,
            }
            chain.fallbacks += [FallbackAttempt(spec.name, note) for note in result.notes]
            if result.end == "unavailable":
                if result.host_retry and host_retried is None and time.monotonic() < deadline:
                    host_retried = result.host_retry
                    tries -= 1  # the host's remediation run is not one of the preset's transient retries
                    continue
                if result.retryable and tries <= retries and time.monotonic() < deadline:
                    request.cancel.wait(min(RETRY_BACKOFF_S * tries, max(0.0, deadline - time.monotonic())))
                    continue
                error = result.error or "reviewer unavailable"
                if result.host_retry and host_retried:
                    after = AFTER_HOST_RETRY[result.host_retry]
                    error += f" ({after}: it failed the same way after one rerun by the host)"
                elif tries > 1:
                    error += f" (after {tries} attempts)"
                chain.fallbacks.append(FallbackAttempt(spec.name, error, result.unknown_fields, result.unsafe_values))
                return None
            if host_retried:
                rerun = f"{host_retried}: the first run failed; the host ran the preset once more"
                chain.fallbacks.append(FallbackAttempt(spec.name, rerun))
            if result.end == "verdict" and chain.same_family(spec.name, spec.provider, result.family, ran=True):
                return None
            return self._finish(result, check.timeoutMs, prompt.verdict_path, chain, session)

    def _attempt(
        self,
        request: LaneRequest,
        spec: PresetSpec,
        provider: ReviewerProvider,
        prompt: LanePrompt,
        deadline: float,
        work_dir: Path,
        attempt: int,
    ) -> ReviewerResult:
        reviewer_request = ReviewerRequest(
            preset=spec,
            prompt=prompt.render("file"),
            answer_prompt=prompt.render("answer", tools="sandbox"),
            read_prompt=prompt.render("answer", tools="read"),
            check_id=request.check.id,
            review_id=request.review_id,
            repo_root=request.repo_root,
            base_sha=prompt.base_sha,
            head_sha=prompt.head_sha,
            rubric_path=prompt.rubric_path,
            verdict_path=prompt.verdict_path,
            work_dir=work_dir,
            deadline=deadline,
            cancel=request.cancel,
            home=request.home,
            timeout_ms=request.check.timeoutMs,
            attempt=attempt,
            withheld_env=request.withheld_env or frozenset(),
        )
        try:
            result = provider.review(reviewer_request)
        except Exception as exc:  # a provider bug is an unavailable reviewer, not a crashed lane
            return ReviewerResult("unavailable", f"provider '{spec.provider}' failed: {type(exc).__name__}: {exc}")
        if not isinstance(result, ReviewerResult):
            return ReviewerResult("unavailable", f"provider '{spec.provider}' returned {type(result).__name__}")
        return result

    @staticmethod
    def _finish(
        result: ReviewerResult, timeout_ms: int, verdict_path: Path, chain: _Chain, session: dict
    ) -> LaneOutcome:
        fallbacks = chain.fallbacks
        if result.end == "verdict":
            try:
                verdict = read_verdict(verdict_path)
            except VerdictError as exc:
                return LaneOutcome.skipped(str(exc), fallbacks=fallbacks, **session)
            return LaneOutcome.reported(verdict.findings, summary=verdict.summary, fallbacks=fallbacks, **session)
        if result.end == "timeout":
            return LaneOutcome.timeout(
                f"reviewer exceeded {timeout_ms}ms and was killed", fallbacks=fallbacks, **session
            )
        if result.end == "cancelled":
            return LaneOutcome.skipped(
                "review cancelled while the reviewer was running", fallbacks=fallbacks, **session
            )
        label = {"boundary_violation": "reviewer boundary violation", "malformed": "malformed reviewer answer"}
        prefix = label.get(result.end, f"reviewer ended with '{result.end}'")
        return LaneOutcome.skipped(
            f"{prefix}: {result.error or 'no detail'}",
            fallbacks=fallbacks,
            unknown_fields=result.unknown_fields,
            unsafe_values=result.unsafe_values,
            **session,
        )
