"""Base classes for reviewer providers: the isolation every provider needs, written once.

:class:`ReviewerBase` builds the environment and private home, checks preset options and runs the child
bounded by the request; :class:`CliReviewer` adds finding, probing and credentials of one installed CLI.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from agentreview.host.procs.group import KILL_GRACE_S, MAX_CAPTURE, Keep, ProcessResult, run_process_group
from agentreview.model.contracts.reviewers import PresetSpec, ProviderStatus, ReviewerRequest, ReviewerResult
from agentreview.reviewers.attempt import attempt_dir
from agentreview.reviewers.cli import CliInfo, cli_info, find_binary, status_from
from agentreview.reviewers.credentials import link_credential, save_refreshed
from agentreview.reviewers.env import REDIRECTING_ENV, preset_env, request_env, reviewer_env
from agentreview.reviewers.options import REVIEWER_OPTIONS, PresetOption, check_options

CLI_OPTIONS: Mapping[str, PresetOption] = {
    **REVIEWER_OPTIONS,
    "binary": PresetOption("string", hint=' (a program name or "/absolute/path")'),
}


class ReviewerBase(ABC):
    """A reviewer provider's generic parts. Subclasses set ``name``, implement ``status()`` and
    ``review()``, and may set ``model_env``, ``redirecting_env``, ``private_home`` and ``preset_options``."""

    name: str
    # Host variables that give the reviewer access to its model (``PREFIX_*`` for a family).
    model_env: tuple[str, ...] = ()
    # Variables that would point the reviewer back at the user's configuration: a preset may not grant them.
    redirecting_env: tuple[str, ...] = REDIRECTING_ENV
    # False: the reviewer keeps the user's own HOME (a vouched-for script), instead of an empty private one.
    private_home: bool = True
    # Seconds of no stdout after its first output before a reviewer counts as a broken stream (None: never).
    idle_timeout_s: float | None = None
    preset_options: ClassVar[Mapping[str, PresetOption]] = REVIEWER_OPTIONS

    @abstractmethod
    def status(self) -> ProviderStatus:
        """Whether this provider can run here (``agentreview presets``)."""

    @abstractmethod
    def review(self, request: ReviewerRequest) -> ReviewerResult:
        """Run one reviewer attempt; never raise, never outlive ``request.deadline``."""

    def validate_options(self, options: Mapping[str, Any]) -> list[str]:
        """The problems of a user preset's options, each naming the option (see ``preset_options``)."""
        return check_options(self.preset_options, options)

    def allowed_env(self, request: ReviewerRequest) -> tuple[str, ...] | str:
        """The host variables this reviewer may see beyond the basics, or why the preset cannot grant them."""
        granted = preset_env(request.preset, refused=self.redirecting_env)
        return granted if isinstance(granted, str) else (*self.model_env, *granted)

    def environment(self, request: ReviewerRequest, extra: Mapping[str, str] | None = None) -> dict[str, str] | str:
        """The reviewer's whole environment (see the module docstring) plus ``extra``, or why the
        preset cannot be run. With ``private_home``, ``HOME`` is a fresh ``home`` dir in ``work_dir``."""
        allow = self.allowed_env(request)
        if isinstance(allow, str):
            return allow
        facts = {**request_env(request), **(extra or {})}
        # the host's own variables (GH_TOKEN, ...) reach a reviewer only when its preset names them itself
        explicit = request.preset.options.get("env", [])
        withheld = request.withheld_env - set(explicit if isinstance(explicit, list) else [])
        if self.private_home:
            return reviewer_env({**facts, "HOME": str(attempt_dir(request, "home"))}, allow, withheld)
        return reviewer_env(facts, ("HOME", *allow), withheld)

    def run(
        self,
        request: ReviewerRequest,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None = None,
        stdin: bytes | None = None,
        deadline: float | None = None,
        keep: Keep = "head",
        max_output: int = MAX_CAPTURE,
        kill_grace_s: float = KILL_GRACE_S,
    ) -> ProcessResult:
        """Run ``argv`` (in ``cwd``, default the repository root) in its own process group until it exits,
        the request's deadline (or an earlier ``deadline``) passes, its output stalls (``idle_timeout``)
        or the request is cancelled."""
        idle = request.preset.options.get("idle_timeout", self.idle_timeout_s)
        return run_process_group(
            argv,
            cwd=cwd if cwd is not None else request.repo_root,
            env=env,
            deadline=request.deadline if deadline is None else min(deadline, request.deadline),
            cancel=request.cancel,
            stdin=stdin,
            keep=keep,
            max_output=max_output,
            kill_grace_s=kill_grace_s,
            idle_s=float(idle) if isinstance(idle, (int, float)) and not isinstance(idle, bool) else None,
        )

    @staticmethod
    def ended_abnormally(proc: ProcessResult, who: str) -> ReviewerResult | None:
        """The result for a spawn failure, timeout or cancel of ``who`` (e.g. the provider's name);
        ``None`` when the process just exited."""
        if proc.spawn_error:
            return ReviewerResult("unavailable", f"reviewer spawn failed: {proc.spawn_error}")
        if proc.timed_out:
            return ReviewerResult("timeout", f"{who} exceeded the lane deadline and was killed")
        if proc.stalled:
            return ReviewerResult(
                "unavailable",
                f"stream_stalled: {who} produced no output for its idle timeout after its stream began "
                "(a broken model stream); stopped so the lane can fall back",
            )
        if proc.cancelled:
            return ReviewerResult("cancelled", "review cancelled while the reviewer was running")
        return None


class CliReviewer(ReviewerBase):
    """A provider that drives one installed CLI, run only once it is found and its help lists every flag
    isolation needs. Subclasses set ``binary``, ``help_args`` and ``required_flags`` and implement
    :meth:`review_with`."""

    binary: str
    help_args: tuple[str, ...] = ("--help",)
    required_flags: tuple[str, ...] = ()
    preset_options: ClassVar[Mapping[str, PresetOption]] = CLI_OPTIONS

    def status(self) -> ProviderStatus:
        return self.preset_status(None)

    def preset_status(self, spec: PresetSpec | None) -> ProviderStatus:
        """Whether the CLI ``spec`` runs (its ``binary`` option, else ``binary`` on PATH) is usable here."""
        return status_from(self.cli(spec), self.required_flags)

    def runtime_problem(self, binary: str) -> str | None:
        """Why the found CLI cannot run on this host at all, asked before it is probed (e.g. a Node too old
        for it, which would only print a stack trace); ``None`` when nothing is known against it."""
        return None

    def cli(self, spec: PresetSpec | None) -> CliInfo | str:
        """Find the CLI for ``spec``, check its runtime and probe it; its info, or why it is not usable."""
        binary = find_binary(spec, self.binary)
        problem = self.runtime_problem(binary) if binary else None
        return problem if problem else cli_info(spec, self.binary, self.help_args)

    def probe(self, spec: PresetSpec) -> str:
        """What a lane of ``spec`` would meet here, without a paid model call (``agentreview presets --probe``):
        ``usable``, ``would fall back: <reason>``, ``would stop: <reason>`` or ``missing: <fix>``."""
        info = self.cli(spec)
        if isinstance(info, str):
            return f"missing: {info}"
        lacking = info.lacks(self.required_flags)
        if lacking:
            who = f"{self.name} {info.version or ''}".rstrip()
            lacks = " ".join(lacking)
            return f"would fall back: {who} cannot run isolated: its help lacks {lacks} — install a newer one"
        return self.admission_probe(info, spec) or "usable"

    def admission_probe(self, info: CliInfo, spec: PresetSpec) -> str | None:
        """Run the CLI's own admission (its config validation, its init event) without a paid model call, where
        the CLI allows it; ``would fall back: ...`` or ``would stop: ...``, or ``None`` when it would run."""
        return None

    def review(self, request: ReviewerRequest) -> ReviewerResult:
        allow = self.allowed_env(request)
        if isinstance(allow, str):
            return ReviewerResult("unavailable", allow)
        info = self.cli(request.preset)
        if isinstance(info, str):
            return ReviewerResult("unavailable", info)
        missing = info.lacks(self.required_flags)
        if missing:
            who = f"{self.name} {info.version or ''}".rstrip()
            return ReviewerResult("unavailable", f"{who} cannot run isolated: its help lacks " + " ".join(missing))
        env = self.environment(request)
        if isinstance(env, str):
            return ReviewerResult("unavailable", env)
        try:
            result = self.review_with(info, request, env)
        finally:
            notes = save_refreshed(request.work_dir)
        return replace(result, notes=(*result.notes, *notes)) if notes else result

    @staticmethod
    def link_credential(request: ReviewerRequest, source: Path, target: Path) -> bool:
        """Link the user's credential ``source`` into this attempt's private home at ``target``; after the
        attempt, a refreshed copy the CLI put in its place is saved back to ``source`` (or noted)."""
        return link_credential(request.work_dir, source, target)

    @abstractmethod
    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        """Run the probed CLI ``info`` as the reviewer of ``request``, in ``env`` (the allow-listed
        environment with an empty private ``HOME``) plus the provider's own private-home variables."""
