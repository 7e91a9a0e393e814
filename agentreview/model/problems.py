"""What is wrong with a manifest: one :class:`Problem` per finding, and the error that carries them all.

In the model layer so that every manifest step can report through them while importing each other in one
direction only.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from agentreview.model.errors import EXIT_ERROR, AgentreviewError

# A hostile file must not flood the terminal: past this many problems, the rest is one counted line.
MAX_PROBLEMS = 100


class Problem(NamedTuple):
    """One thing wrong with a manifest: where (``checks[2].timeoutMs``), what, how to fix it."""

    location: str
    message: str
    fix: str = ""
    line: int | None = None

    def __str__(self) -> str:
        return self.render()

    def render(self, path: Path | str | None = None) -> str:
        where = str(path) if path is not None else ""
        if where and self.line is not None:
            where += f":{self.line}"
        head = f"{where}: " if where else ""
        tail = f"; fix: {self.fix}" if self.fix else ""
        return f"{head}{self.location}: {self.message}{tail}"


class ManifestError(AgentreviewError):
    """An invalid manifest (exit code 3). ``problems`` holds every problem found, in file order."""

    exit_code = EXIT_ERROR

    def __init__(self, path: Path | None, problems: list[Problem]):
        self.path = path
        self.problems = list(problems) or [Problem("manifest", "invalid")]
        first = self.problems[0].render(path)
        more = len(self.problems) - 1
        super().__init__(first + (f" (and {more} more)" if more else ""))

    def lines(self) -> list[str]:
        return [p.render(self.path) for p in self.problems]

    def render(self) -> str:
        """Every problem, one per line."""
        return "\n".join(self.lines())
