"""How a command shows a warning: one line on stderr, ``agentreview: warning: <message>``.

Standard library only: it sits on command paths that must start fast.
"""

from __future__ import annotations

import sys


def print_warning(message: str) -> None:
    """A ``warn`` callback for command-line use: one line on stderr."""
    sys.stderr.write(f"agentreview: warning: {message}\n")
