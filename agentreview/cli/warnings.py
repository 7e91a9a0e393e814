"""How a command shows a warning: one line on stderr, ``agentreview: warning: <message>``.

The standard library and :mod:`agentreview.report.neutral` only: it sits on command paths that must start fast.
"""

from __future__ import annotations

import sys

from agentreview.report.neutral import neutralize


def print_warning(message: str) -> None:
    """A ``warn`` callback for command-line use: one line on stderr (a warning quotes others' text: neutralized)."""
    sys.stderr.write(neutralize(f"agentreview: warning: {message}") + "\n")
