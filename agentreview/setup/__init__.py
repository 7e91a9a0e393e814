"""``agentreview init``: from an ungated repository to a gated one, one job per module.

A services-layer package: git facts through ``host.git``, writes through ``host.files``, and the signer and
reviewer providers handed in by the CLI, so it needs nothing from its sibling packages.
"""
