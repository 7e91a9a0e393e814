"""How a run stops early: its own module, so the paths that only catch these (a cache hit,
joining a run in flight) never import the lane scheduler."""

from __future__ import annotations


class PrepareFailed(Exception):
    """A prepare step did not succeed: the run fails and nothing is attested."""


class Cancelled(Exception):
    """The run was cancelled (Ctrl-C, SIGTERM, superseded)."""
