"""Plugin entry module: the ``agent`` lane executor and the five reviewer providers."""

from __future__ import annotations

from agentreview import hookimpl


@hookimpl
def agentreview_register_lane_executors(register):
    from agentreview_agent.executor import AgentLaneExecutor

    register(AgentLaneExecutor())


@hookimpl
def agentreview_register_reviewer_providers(register):
    from agentreview_agent.providers.exec_provider import ExecProvider

    register(ExecProvider())
