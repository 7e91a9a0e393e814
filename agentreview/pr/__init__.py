"""Pull requests: link a ledger entry to its GitHub pull request and snapshot the PR's status."""
