"""agentreview-command: the ``command`` lane executor (``sh -c`` in its own process group)."""
