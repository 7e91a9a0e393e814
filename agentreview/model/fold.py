"""The verdict fold: a pure function from lanes to ``pass | block | incomplete``.

``incomplete`` is never a pass: a blocking lane that timed out or was skipped can
only make the verdict ``incomplete`` (or ``block`` when another blocking lane failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

Verdict = Literal["pass", "block", "incomplete"]
QUORUM = "all-blocking-pass"


def fold_verdict(lanes: Iterable[tuple[bool, str]], quorum: str = QUORUM) -> Verdict:
    """Fold ``(blocking, status)`` pairs into a verdict, in the spec's order of rules."""
    if quorum != QUORUM:
        return "incomplete"
    blocking = [status for is_blocking, status in lanes if is_blocking]
    if not blocking:
        return "incomplete"
    if any(status == "fail" for status in blocking):
        return "block"
    if any(status != "pass" for status in blocking):
        return "incomplete"
    return "pass"
