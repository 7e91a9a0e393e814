"""What a caller asks of a review run: the ``agentreview run`` options, before anything is resolved.

Kept apart from the plan so that the CLI (and the warm server) can build one without
importing the engine's stages; :func:`agentreview.engine.plan.build_plan` turns it into
a frozen :class:`~agentreview.engine.plan.RunPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_SESSION = "AGENTREVIEW_SESSION_ID"


@dataclass
class RunOptions:
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
    session_id: str | None = None
    home: Path | None = None
    join_timeout_s: float | None = None
