"""``agentreview mcp``: the review as tools for agents, over the Model Context Protocol (stdio).

The spec's §Host surface: an agent that has just changed code asks for a review, keeps
working, checks on it, cancels it, lists the ledger and exports, through tools instead of
shelling out and parsing text. Built on the official ``mcp`` SDK, which is an optional extra
(``pip install 'agentreview-core[mcp]'``): nothing else in the core imports this package.

* :mod:`~agentreview.mcp.args` — argument checks shared by the tools (one clear error each);
* :mod:`~agentreview.mcp.confine` — the roots every path must lie in, and the export written through no link;
* :mod:`~agentreview.mcp.queries` — ``review_ledger`` and ``review_export`` over the ledger;
* :mod:`~agentreview.mcp.runs` — ``review_run``, ``review_status``, ``review_cancel`` (the runs in flight);
* :mod:`~agentreview.mcp.server` — the SDK server: tool names, descriptions, progress.
"""

from agentreview import DISTRIBUTION

INSTALL_HINT = f"the MCP server needs the 'mcp' extra: pip install '{DISTRIBUTION}[mcp]'"
