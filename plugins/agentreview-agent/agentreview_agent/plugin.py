"""Plugin entry module: the ``agent`` lane executor and the reviewer providers, as light stand-ins that
import them on first use (every command that loads plugins imports this module)."""

from __future__ import annotations

import importlib
from typing import Any

from agentreview.api import hookimpl


class _Lazy:
    """Defers importing ``module.attr`` until the first call on the object it builds."""

    def __init__(self, module: str, attr: str):
        self._module = module
        self._attr = attr
        self._target: Any = None

    def _get(self) -> Any:
        if self._target is None:
            self._target = getattr(importlib.import_module(self._module), self._attr)()
        return self._target


class LazyAgentExecutor(_Lazy):
    kind = "agent"

    def __init__(self) -> None:
        super().__init__("agentreview_agent.executor", "AgentLaneExecutor")

    def run_lane(self, request: Any) -> Any:
        return self._get().run_lane(request)


class LazyProvider(_Lazy):
    def __init__(self, name: str, module: str, attr: str):
        super().__init__(f"agentreview_agent.providers.{module}", attr)
        self.name = name

    def status(self) -> Any:
        return self._get().status()

    def review(self, request: Any) -> Any:
        return self._get().review(request)

    def preset_status(self, spec: Any) -> Any:
        """The status of the CLI a preset runs (its ``binary`` option honoured)."""
        target = self._get()
        method = getattr(target, "preset_status", None)
        return method(spec) if method else target.status()

    def probe(self, spec: Any) -> Any:
        """``agentreview presets --probe``: the provider's admission without a paid model call (None: no probe)."""
        method = getattr(self._get(), "probe", None)
        return method(spec) if method else None

    def validate_options(self, options: Any) -> Any:
        """Asked by the core for each user preset naming this provider (imports the provider then)."""
        return self._get().validate_options(options)


PROVIDERS = (
    ("claude", "claude", "ClaudeProvider"),
    ("codex", "codex", "CodexProvider"),
    ("opencode", "opencode", "OpenCodeProvider"),
    ("kimi", "kimi", "KimiProvider"),
    ("exec", "exec_provider", "ExecProvider"),
)


@hookimpl
def agentreview_register_lane_executors(register):
    register(LazyAgentExecutor())


@hookimpl
def agentreview_register_reviewer_providers(register):
    for name, module, attr in PROVIDERS:
        register(LazyProvider(name, module, attr))
