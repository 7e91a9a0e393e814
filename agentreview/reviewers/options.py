"""Declaring the options a provider understands in its presets, so a bad ``presets.toml`` fails when it is read.

The core does not know a provider's options; a provider on :class:`~agentreview.reviewers.base.ReviewerBase`
declares them as ``preset_options`` and inherits the check. Undeclared options pass through untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from agentreview.model.record import record
from agentreview.reviewers.env import ENV_NAME

OptionKind = Literal["string", "strings", "integer", "env_names"]
MAX_RETRIES = 5


@record
class PresetOption:
    """The shape one preset option must have: ``kind`` is ``string``, ``strings``, ``integer`` (from
    ``minimum`` to ``maximum``) or ``env_names``; ``hint`` ends the error message."""

    kind: OptionKind
    hint: str = ""
    minimum: int = 0
    maximum: int = 2**31 - 1

    def problem(self, name: str, value: Any) -> str | None:
        """Why ``value`` is not a valid ``name`` option (a sentence starting with the name), or ``None``."""
        if self.kind == "string":
            ok = isinstance(value, str) and bool(value)
            return None if ok else f"{name} must be a non-empty string{self.hint}"
        if self.kind == "strings":
            ok = isinstance(value, list) and bool(value) and all(isinstance(part, str) and part for part in value)
            return None if ok else f"{name} must be a non-empty array of non-empty strings{self.hint}"
        if self.kind == "integer":
            ok = isinstance(value, int) and not isinstance(value, bool) and self.minimum <= value <= self.maximum
            return None if ok else f"{name} must be an integer from {self.minimum} to {self.maximum}{self.hint}"
        bad = [value]  # not an array: the value itself is what is wrong
        if isinstance(value, list):
            bad = [n for n in value if not (isinstance(n, str) and ENV_NAME.match(n))]
        if not bad:
            return None
        return (
            f'{name}: {bad[0]!r} is not a variable name; {name} = ["MY_KEY"] lists host variables '
            f"the reviewer may see{self.hint}"
        )


# The options every reviewer preset understands: ``env`` is granted by ReviewerBase's environment, ``retries``
# is how often the agent lane executor retries a transient failure before falling back, ``idle_timeout`` the
# seconds of no output, after a reviewer's output began, before it counts as a broken stream.
REVIEWER_OPTIONS: Mapping[str, PresetOption] = {
    "env": PresetOption("env_names"),
    "retries": PresetOption("integer", minimum=0, maximum=MAX_RETRIES),
    "idle_timeout": PresetOption("integer", minimum=1, maximum=24 * 3600),
}


def check_options(declared: Mapping[str, PresetOption], options: Mapping[str, Any]) -> list[str]:
    """The problems of ``options`` against ``declared`` (undeclared options are not looked at)."""
    found = (option.problem(name, options[name]) for name, option in declared.items() if name in options)
    return [problem for problem in found if problem]
