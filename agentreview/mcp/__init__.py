"""``agentreview mcp``: the review as tools for agents, over the Model Context Protocol (stdio).

The spec's §Host surface: an agent asks for a review, keeps working, checks on it, cancels it, lists the ledger
and exports through tools instead of parsing text. Built on the official ``mcp`` SDK, an optional extra, so
nothing else in the core imports this package.
"""

from agentreview import DISTRIBUTION

INSTALL_HINT = f"the MCP server needs the 'mcp' extra: pip install '{DISTRIBUTION}[mcp]'"
