"""``agentreview mcp``: the spec's §Host surface as Model Context Protocol tools over stdio.

Built on the official ``mcp`` SDK, an optional extra, so nothing else in the core imports this package.
"""

from agentreview import DISTRIBUTION

INSTALL_HINT = f"the MCP server needs the 'mcp' extra: pip install '{DISTRIBUTION}[mcp]'"
