"""The ``example-linter`` reviewer provider: a complete, minimal third-party provider.

It stands in for a vendor's reviewer. Instead of calling a model it runs ``git diff``
over the range it is given and reports every added line containing ``TODO`` as a low
finding and every added ``eval(`` as a high one. What makes it a correct provider is
the contract around that, not the review itself:

* it registers through the ``agentreview_register_reviewer_providers`` hook;
* ``review()`` never raises, never runs past ``request.deadline`` and honours
  ``request.cancel``: every external call is bounded;
* it writes exactly one file, ``request.verdict_path``, and nothing in the repository;
* it reports *how it ended* (``verdict``, ``unavailable``, ``timeout``, ...) and never
  decides pass or fail: the core derives that from the findings and ``blockOn``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

from agentreview.api import ProviderStatus, ReviewerRequest, ReviewerResult, hookimpl


class ExampleLinterProvider:
    name = "example-linter"

    def status(self) -> ProviderStatus:
        git = shutil.which("git")
        return ProviderStatus(installed=bool(git), usable=bool(git), detail=git or "git not found on PATH")

    def review(self, request: ReviewerRequest) -> ReviewerResult:
        if request.cancel.is_set():
            return ReviewerResult("cancelled", "cancelled before it started")
        remaining = request.deadline - time.monotonic()
        if remaining <= 0:
            return ReviewerResult("timeout", "no time left")
        try:
            rng = f"{request.base_sha}..{request.head_sha}"
            diff = subprocess.run(
                ["git", "diff", "--no-ext-diff", "--no-textconv", "--unified=0", rng],
                cwd=request.repo_root, capture_output=True, text=True, timeout=min(remaining, 60), check=True,
            ).stdout  # fmt: skip
        except subprocess.TimeoutExpired:
            return ReviewerResult("timeout", "git diff did not finish before the deadline")
        except (OSError, subprocess.CalledProcessError) as exc:
            return ReviewerResult("unavailable", f"git diff failed: {exc}")
        findings, current = [], None
        for line in diff.splitlines():
            if line.startswith("+++ "):
                current = line[6:] if line.startswith("+++ b/") else None
            elif line.startswith("+") and current:
                if "eval(" in line:
                    findings.append({"severity": "high", "title": "eval() added", "file": current})
                elif "TODO" in line:
                    findings.append({"severity": "low", "title": "TODO added", "file": current})
        verdict = {"summary": f"{len(findings)} finding(s)", "findings": findings}
        request.verdict_path.write_text(json.dumps(verdict), encoding="utf-8")
        return ReviewerResult("verdict", model=request.preset.model or "example-linter-1")


@hookimpl
def agentreview_register_reviewer_providers(register):
    register(ExampleLinterProvider())
