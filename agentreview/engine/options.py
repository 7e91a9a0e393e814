"""What a caller asks of a review run: the ``agentreview run`` options, before anything is resolved.

Apart from the plan so the CLI can build one without importing the engine's stages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_SESSION = "AGENTREVIEW_SESSION_ID"
ENV_SESSION_REFERENCE = "AGENTPROTO_SESSION_ID"  # the reference host's name, accepted too


def requester_from_env() -> str | None:
    """The requesting agent session: ``AGENTREVIEW_SESSION_ID``, else the reference's ``AGENTPROTO_SESSION_ID``."""
    return os.environ.get(ENV_SESSION) or os.environ.get(ENV_SESSION_REFERENCE) or None


@dataclass
class RunOptions:
    """What a run was asked for: the checkout, manifest, binding, range and flags."""

    cwd: Path = field(default_factory=Path.cwd)
    manifest: Path | None = None
    binding: str | None = None
    base: str | None = None
    head: str | None = None
    no_cache: bool = False
    no_compose: bool = False
    headless: bool = False
    supersede: bool = False
    export: bool = False
    export_to: Path | None = None
    pr: dict[str, Any] | None = None
    session_id: str | None = None  # requesterSessionId; None: taken from the environment (requester_from_env)
    home: Path | None = None
    join_timeout_s: float | None = None
    run_id: str | None = None  # review-<uuid>, given by a caller that announced it (run --detach); else made
    # Model families that wrote the change (--authored-by): agent lanes run no reviewer of them. A verdict
    # reused from the cache or composed from an earlier run may come from such a reviewer, so neither is used.
    authored_by: tuple[str, ...] = ()
    # --policy-from REF: the lanes, rubrics and path packs come from REF's tree (git objects), not the
    # checkout, so a change that edits the review policy is reviewed under the policy it would replace.
    policy_from: str | None = None
    # The head is a commit being pushed (the pre-push hook): the "commit the export" rule moves a named
    # head too. A head the user names otherwise is reviewed as named.
    pushed: bool = False
    # For a pushed commit: the remote's commit of the ref (an ancestor of the head), the range's base
    # when merge-base(target.base, head) cannot be computed (target.base not fetched here, say).
    pushed_over: str | None = None
