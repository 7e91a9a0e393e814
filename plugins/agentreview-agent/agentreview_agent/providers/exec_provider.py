"""``exec``: a user preset's command is the reviewer (docs/providers.md); it cannot be made read-only, so the
preset's author vouches for it and it exists only as a host-local user preset. Exit 75 is retried."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from agentreview.api import PresetOption, ProviderStatus, ReviewerBase, ReviewerRequest, ReviewerResult
from agentreview_agent.providers.base import REDIRECTING_ENV, tail

EX_TEMPFAIL = 75


class ExecProvider(ReviewerBase):
    name = "exec"
    private_home = False  # a team script keeps its configuration in the user's HOME
    redirecting_env = REDIRECTING_ENV
    preset_options: ClassVar[Mapping[str, PresetOption]] = {
        **ReviewerBase.preset_options,
        "command": PresetOption("strings", hint=', e.g. ["prog", "arg"]'),
    }

    def status(self) -> ProviderStatus:
        return ProviderStatus(
            installed=True,
            usable=True,
            detail="runs the command of a user preset (command = [...] in presets.toml)",
        )

    def review(self, request: ReviewerRequest) -> ReviewerResult:
        command = request.preset.options.get("command")
        if not command:
            return ReviewerResult(
                "unavailable",
                f'preset \'{request.preset.name}\' has no command — add command = ["prog", "arg"] to its '
                "[presets.<name>] table in presets.toml",
            )
        env = self.environment(request, {"AGENTREVIEW_VERDICT_PATH": str(request.verdict_path)})
        if isinstance(env, str):
            return ReviewerResult("unavailable", env)
        proc = self.run(request, [str(part) for part in command], env=env, stdin=request.prompt.encode("utf-8"))
        abnormal = self.ended_abnormally(proc, f"reviewer command '{command[0]}'")
        if abnormal:
            return abnormal
        if proc.returncode == 0:
            return ReviewerResult("verdict", model=request.preset.model)
        output = tail(proc.stderr_text() or proc.stdout_text())
        if request.verdict_path.exists() or request.verdict_path.is_symlink():
            return ReviewerResult(
                "malformed",
                f"reviewer command exited with code {proc.returncode} after writing {request.verdict_path}; "
                f"its verdict is not used and no other reviewer replaces it: {output}",
            )
        return ReviewerResult(
            "unavailable",
            f"reviewer command exited with code {proc.returncode}: {output}",
            retryable=proc.returncode == EX_TEMPFAIL,
        )
