"""The ``example-linter`` reviewer provider: a complete, minimal third-party provider.

It stands in for a vendor's reviewer: instead of calling a model it runs ``git diff``
over the range and reports each added ``TODO`` (low) and ``eval(`` (high). What makes
it a correct provider is the contract around that, most of which ``ReviewerBase``
supplies: ``environment()`` is the allow-listed environment with a private ``HOME``;
``run()`` keeps the child in its own process group, within ``request.deadline`` and
``request.cancel``, and kills it with the host; ``preset_options`` makes a bad
``presets.toml`` fail when it is read. The provider itself writes only
``request.verdict_path`` and reports how it ended — never pass or fail.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from typing import ClassVar

from agentreview.api import PresetOption, ProviderStatus, ReviewerBase, ReviewerRequest, ReviewerResult, hookimpl


class ExampleLinterProvider(ReviewerBase):
    name = "example-linter"
    preset_options: ClassVar[Mapping[str, PresetOption]] = {
        **ReviewerBase.preset_options,  # env, retries
        "max_findings": PresetOption("integer", minimum=1, maximum=1000),
    }

    def status(self) -> ProviderStatus:
        git = shutil.which("git")
        return ProviderStatus(installed=bool(git), usable=bool(git), detail=git or "git not found on PATH")

    def review(self, request: ReviewerRequest) -> ReviewerResult:
        env = self.environment(request)
        if isinstance(env, str):  # the preset grants a variable it may not
            return ReviewerResult("unavailable", env)
        rng = f"{request.base_sha}..{request.head_sha}"
        proc = self.run(request, ["git", "diff", "--no-ext-diff", "--no-textconv", "--unified=0", rng], env=env)
        ended = self.ended_abnormally(proc, "git diff")
        if ended:
            return ended
        if proc.returncode != 0 or proc.truncated:
            return ReviewerResult("unavailable", f"git diff failed: {proc.stderr_text().strip() or 'too long'}")
        findings, current = [], None
        for line in proc.stdout_text().splitlines():
            if line.startswith("+++ "):
                current = line[6:] if line.startswith("+++ b/") else None
            elif line.startswith("+") and current:
                if "eval(" in line:
                    findings.append({"severity": "high", "title": "eval() added", "file": current})
                elif "TODO" in line:
                    findings.append({"severity": "low", "title": "TODO added", "file": current})
        findings = findings[: request.preset.options.get("max_findings", 1000)]
        verdict = {"summary": f"{len(findings)} finding(s)", "findings": findings}
        request.verdict_path.write_text(json.dumps(verdict), encoding="utf-8")
        return ReviewerResult("verdict", model=request.preset.model or "example-linter-1")


@hookimpl
def agentreview_register_reviewer_providers(register):
    register(ExampleLinterProvider())
