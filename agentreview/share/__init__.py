"""Sharing attestations between hosts through git notes (``refs/notes/agentreview``)."""
