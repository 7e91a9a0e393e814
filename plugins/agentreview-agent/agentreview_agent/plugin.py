"""Plugin entry module: the ``agent`` lane executor and the reviewer providers."""

from __future__ import annotations

from agentreview import hookimpl


@hookimpl
def agentreview_register_lane_executors(register):
    from agentreview_agent.executor import AgentLaneExecutor

    register(AgentLaneExecutor())


@hookimpl
def agentreview_register_reviewer_providers(register):
    from agentreview_agent.providers.claude import ClaudeProvider
    from agentreview_agent.providers.codex import CodexProvider
    from agentreview_agent.providers.exec_provider import ExecProvider
    from agentreview_agent.providers.kimi import KimiProvider
    from agentreview_agent.providers.opencode import OpenCodeProvider

    for provider in (ClaudeProvider(), CodexProvider(), OpenCodeProvider(), KimiProvider(), ExecProvider()):
        register(provider)
