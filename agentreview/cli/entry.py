"""Console entry point. ``--version`` is answered before anything heavy is imported.

It leaves through ``os._exit`` after ``atexit`` and a flush: tearing down every module is wasted work.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import NoReturn

from agentreview import __version__


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        sys.stdout.write(f"agentreview {__version__}\n")
        return 0
    from agentreview.cli.app import run_app

    return run_app(args)


def _flush(stream: object) -> None:
    # A reader that went away (``agentreview ledger | head -1``) is not our failure.
    with contextlib.suppress(BrokenPipeError, ValueError, OSError):
        stream.flush()  # type: ignore[attr-defined]


def _escape_unencodable(stream: object) -> None:
    """Write what the stream's encoding cannot hold (a lone surrogate in a reviewer's finding or an
    export's string) as its ``\\uXXXX`` escape: visible to the reader, never an encoding error."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        stream.reconfigure(errors="backslashreplace")  # type: ignore[attr-defined]


def console() -> NoReturn:  # pragma: no cover - exercised by every CLI subprocess test
    _escape_unencodable(sys.stdout)
    _escape_unencodable(sys.stderr)
    code = main()
    try:
        atexit._run_exitfuncs()
    finally:
        _flush(sys.stdout)
        _flush(sys.stderr)
        os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
