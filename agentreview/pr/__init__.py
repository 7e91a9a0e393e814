"""Pull requests: link a ledger entry to its GitHub pull request and snapshot the PR's status.

* :mod:`~agentreview.pr.github` — a small GitHub REST client on the standard library
  (the API base, the token, bounded requests with a 30 s timeout);
* :mod:`~agentreview.pr.service` — ``link_pr``: pick the entry, find the PR, append a status
  snapshot to the entry's annotations (never to the attestation), and reply as ``review_pr``.
"""
