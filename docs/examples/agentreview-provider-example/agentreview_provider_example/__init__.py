"""A minimal third-party reviewer provider for agentreview (see docs/providers.md)."""
