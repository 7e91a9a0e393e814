"""``agentreview init``: from an ungated repository to a gated one, one job per module.

The signer and reviewer providers are handed in by the CLI, so it needs nothing from its sibling packages.
"""
