"""``agentreview mcp``: serve the review's tools to an agent over MCP (stdio).

The server needs the optional ``mcp`` extra; without it one line says how to install it (exit 3).
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.errors import AgentreviewError, UsageError


def register(app: typer.Typer) -> None:
    @app.command(
        "mcp",
        epilog=epilog(
            ["claude mcp add agentreview -- agentreview mcp", "agentreview mcp --root ../other-repo --max-runs 4"],
            [0],
        ),
    )
    def mcp(
        roots: Annotated[
            list[Path] | None,
            typer.Option(
                "--root",
                metavar="DIR",
                help="Also work inside DIR when the client declares no roots (repeatable); by default only the "
                "directory the server was started in.",
            ),
        ] = None,
        max_runs: Annotated[
            int | None,
            typer.Option(
                "--max-runs", metavar="N", help="Reviews this server may have running at once (1-1000; default 8)."
            ),
        ] = None,
        cancel_any: Annotated[
            bool,
            typer.Option(
                "--cancel-any",
                help="Let review_cancel cancel any run of this host, not only the ones this server started.",
            ),
        ] = False,
    ) -> int:
        """Serve review_run, review_status, review_cancel, review_ledger, review_export, review_presets (and
        review_pr) to an agent over the Model Context Protocol on stdin/stdout, confined to the client's roots."""
        from agentreview.mcp import INSTALL_HINT

        if max_runs is not None and not 1 <= max_runs <= 1000:
            raise UsageError(f"--max-runs {max_runs} must be between 1 and 1000")
        start = Path.cwd()
        extra = []
        for root in roots or []:
            path = (start / root.expanduser()).resolve()
            if not path.is_dir():
                raise UsageError(f"--root {root} is not a directory")
            extra.append(path)
        try:  # the 2.x SDK's server; an older or foreign `mcp` is as good as none
            found = importlib.util.find_spec("mcp.server.mcpserver") is not None
        except ImportError:
            found = False
        if not found:
            raise AgentreviewError(INSTALL_HINT)
        from agentreview.mcp.server import ServeOptions, serve

        options = ServeOptions(start=start, roots=tuple(extra), cancel_any=cancel_any)
        serve(options if max_runs is None else replace(options, max_runs=max_runs))
        return 0
