"""A deterministic stand-in reviewer for ``agentreview demo`` (the ``exec`` provider runs it), not an AI model.

It flags added ``eval(``/``exec(`` calls and new functions without a test, and writes the agent-lane verdict file.
"""

from __future__ import annotations

import json
import os
import re
import sys

from agentreview.api import run_git


def main() -> int:
    sys.stdin.read()  # the prompt; this stand-in does not need it
    base, head = os.environ["AGENTREVIEW_BASE"], os.environ["AGENTREVIEW_HEAD"]
    # The host's hardened git: the reviewed repository's configuration runs no external diff or textconv.
    diff = run_git(["diff", "--unified=0", f"{base}..{head}"], os.getcwd(), timeout=30).stdout.decode(errors="replace")
    findings: list[dict[str, object]] = []
    current, line_no = None, 0

    def found(severity: str, title: str, detail: str = "") -> None:
        findings.append({"severity": severity, "title": title, "detail": detail, "file": current, "line": line_no})

    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@"):
            match = re.search(r"\+(\d+)", line)
            line_no = int(match.group(1)) if match else 0
        elif line.startswith("+") and current:
            if re.search(r"\b(eval|exec)\(", line):
                found("high", "eval/exec on input", "Evaluating text as code lets whoever controls the text run code.")
            defined = re.match(r"\+def (\w+)", line)
            if defined and "test" not in current and defined.group(1) not in diff.split("tests/", 1)[-1]:
                found("low", f"{defined.group(1)}() has no test")
            line_no += 1
    verdict = {
        "decision": "request_changes" if any(f["severity"] == "high" for f in findings) else "approve",
        "summary": f"{len(findings)} finding(s) in {base[:7]}..{head[:7]}",
        "findings": findings,
    }
    with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w", encoding="utf-8") as fh:
        json.dump(verdict, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
