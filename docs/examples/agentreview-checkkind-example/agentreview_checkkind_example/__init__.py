"""A minimal third-party check kind for agentreview: ``kind: notebook`` (see README.md)."""
