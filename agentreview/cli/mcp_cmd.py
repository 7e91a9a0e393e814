"""``agentreview mcp``: serve the review's tools to an agent over MCP (stdio).

The server lives in :mod:`agentreview.mcp` and needs the optional ``mcp`` extra; without
it the command says in one line how to install it (exit 3). No other command imports it.
"""

from __future__ import annotations

import typer

from agentreview.cli.helptext import epilog


def register(app: typer.Typer) -> None:
    @app.command(
        "mcp",
        epilog=epilog(["agentreview mcp", "claude mcp add agentreview -- agentreview mcp"], [0]),
    )
    def mcp() -> int:
        """Serve review_run, review_status, review_cancel, review_ledger, review_export (and review_pr)
        to an agent over the Model Context Protocol on stdin/stdout."""
        import importlib.util

        from agentreview.mcp import INSTALL_HINT
        from agentreview.model.errors import AgentreviewError

        try:  # the 2.x SDK's server; an older or foreign `mcp` is as good as none
            found = importlib.util.find_spec("mcp.server.mcpserver") is not None
        except ImportError:
            found = False
        if not found:
            raise AgentreviewError(INSTALL_HINT)
        from agentreview.mcp.server import serve

        serve()
        return 0
