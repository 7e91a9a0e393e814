"""Exit codes and the one exception type the CLI turns into a one-line error.

Exit codes (``agentreview run``): 0 pass, 1 block, 2 incomplete or cancelled,
3 could not run (also an invalid manifest for ``check``), 64 usage error.
``agentreview verify`` adds 4 not found, 5 not exported, 6 signature required or invalid.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_PASS = 0
EXIT_BLOCK = 1
EXIT_INVALID = 1  # verify: the attestation does not verify
EXIT_INCOMPLETE = 2
EXIT_ERROR = 3  # could not run / invalid manifest
EXIT_NOT_FOUND = 4
EXIT_NOT_EXPORTED = 5
EXIT_SIGNATURE = 6
EXIT_USAGE = 64

VERDICT_EXIT = {"pass": EXIT_PASS, "block": EXIT_BLOCK, "incomplete": EXIT_INCOMPLETE}


class AgentreviewError(Exception):
    """An error with a message fit for one line on stderr and a documented exit code."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(AgentreviewError):
    exit_code = EXIT_USAGE
