"""``agentreview init``: from an ungated repository to a gated one, one job per module.

``detect`` (what the repository already runs), ``manifest`` (REVIEW.md and the rubric),
``signers`` (the allowed_signers line of this host), ``hooks`` (the pre-push hook where git runs
hooks), ``workflow`` (the GitHub gate), ``writer`` (the never-overwrite rule every file obeys)
and ``init`` (the order and the report). A services-layer package: it reads git facts through
``host.git`` (hardened) and writes through ``host.files`` (atomic); the CLI hands it the signer
and the reviewer providers so it needs nothing from its sibling packages.
"""
