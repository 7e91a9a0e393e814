"""What every command's ``--help`` ends with: examples and exit codes, rendered one way.

Each exit code's meaning is declared here once; blocks start with click's ``\\b`` so they print as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

try:  # typer 0.24 (pinned, see pyproject.toml) depends on click; typer >= 0.25 vendors it.
    import click
except ImportError:  # pragma: no cover
    from typer import _click as click  # type: ignore[no-redef,attr-defined,unused-ignore]

from agentreview.model.errors import (
    EXIT_BLOCK,
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_NOT_EXPORTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_SIGNATURE,
    EXIT_USAGE,
)

EXIT_MEANINGS: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_BLOCK: "block",
    EXIT_INCOMPLETE: "interrupted",
    EXIT_ERROR: "could not run",
    EXIT_NOT_FOUND: "not found",
    EXIT_NOT_EXPORTED: "not exported",
    EXIT_SIGNATURE: "signature required or invalid",
    EXIT_USAGE: "usage error",
}

# Every command can be interrupted, fail to run or be misused.
COMMON = (EXIT_INCOMPLETE, EXIT_ERROR, EXIT_USAGE)

ExitCode = int | tuple[int, str]

# Options several commands declare alike, so each --help says it the same way.
RangeOption = Annotated[
    str | None, typer.Option("--range", help="BASE..HEAD (refs resolved in --cwd) or a 64-hex rangeSha.")
]
SummaryOption = Annotated[
    Path | None,
    typer.Option("--summary", help="Append a Markdown summary to PATH.", show_default="$GITHUB_STEP_SUMMARY"),
]


def epilog(examples: Sequence[str], codes: Sequence[ExitCode]) -> str:
    """The help's closing text: ``Examples:`` and ``Exit codes:``.

    ``codes``: an int (its shared meaning) or ``(code, meaning)``; 2, 3 and 64 are added when missing.
    """
    meanings: dict[int, str] = {}
    for code in codes:
        number, meaning = code if isinstance(code, tuple) else (code, EXIT_MEANINGS[code])
        meanings[number] = meaning
    for number in COMMON:
        meanings.setdefault(number, EXIT_MEANINGS[number])
    example_lines = "\n".join(f"  {line}" for line in examples)
    code_lines = "\n".join(f"  {number:<3} {meanings[number]}" for number in sorted(meanings))
    return f"\b\nExamples:\n{example_lines}\n\n\b\nExit codes:\n{code_lines}"


def choice(*values: str) -> click.Choice:
    """A value that must be one of ``values``, listed as ``[a|b]`` in the help (the value stays a str)."""
    return click.Choice(values)


def keep_argument_help() -> None:
    """Show a positional argument's ``help`` once, in typer's ``Arguments:`` section.

    click >= 8.3 resets the help typer 0.24 sets, and adds a ``Positional arguments:`` section repeating typer's.
    """
    argument = typer.core.TyperArgument
    init = argument.__init__
    if getattr(init, "keeps_help", False):
        return

    def __init__(self: typer.core.TyperArgument, *args: Any, help: str | None = None, **kwargs: Any) -> None:
        init(self, *args, help=help, **kwargs)
        self.help = help

    __init__.keeps_help = True  # type: ignore[attr-defined]
    argument.__init__ = __init__  # type: ignore[method-assign]
    if hasattr(click.Command, "format_arguments"):
        typer.core.TyperCommand.format_arguments = lambda self, ctx, formatter: None  # type: ignore[method-assign]
