"""Plugin entry module: registers the ``command`` lane executor with agentreview."""

from __future__ import annotations

from collections.abc import Callable

from agentreview.api import LaneExecutor, hookimpl
from agentreview_command.executor import CommandLaneExecutor, cancel_all

__all__ = ["CommandLaneExecutor", "agentreview_register_lane_executors", "cancel_all"]


@hookimpl
def agentreview_register_lane_executors(register: Callable[[LaneExecutor], None]) -> None:
    register(CommandLaneExecutor())
