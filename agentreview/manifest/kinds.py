"""Check kinds contributed by plugins: which model validates a check whose kind is not built in.

A manifest of ``command`` and ``agent`` checks only never loads a plugin to be parsed; any other kind is read
by the ``check_model`` of the lane executor registered for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from agentreview.model.record import record

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.plugins.registry import Registry

# The spec's kinds: validated by the built-in models, never looked up among plugins.
BUILTIN_CHECK_KINDS = ("command", "agent")

_FIX = "update the plugin, or report this to its author"


@record
class PluginKinds:
    """The plugin check kinds one manifest uses.

    ``models``: kind -> the executor's check model, for every kind a plugin provides usably.
    ``broken``: kind -> (message, fix) when the providing plugin's model cannot be used.
    A used kind in neither is provided by no loaded plugin.
    """

    registry: Any = None
    models: Mapping[str, type[Any]] = field(default_factory=dict)
    broken: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def used_plugin_kinds(raw_checks: Any) -> list[str]:
    """The kinds in ``checks[]`` that are strings and not built in, in first-use order."""
    if not isinstance(raw_checks, list):
        return []
    kinds: list[str] = []
    for item in raw_checks:
        kind = item.get("kind") if isinstance(item, dict) else None
        if isinstance(kind, str) and kind not in BUILTIN_CHECK_KINDS and kind not in kinds:
            kinds.append(kind)
    return kinds


def find_plugin_kinds(raw_checks: Any, registry: Registry | None = None) -> PluginKinds:
    """Look up the models for the plugin kinds ``raw_checks`` uses; load the registry only if there are any."""
    kinds = used_plugin_kinds(raw_checks)
    if not kinds:
        return PluginKinds(registry=registry)
    if registry is None:
        from agentreview.plugins.registry import load_registry

        registry = load_registry()
    models: dict[str, type[Any]] = {}
    broken: dict[str, tuple[str, str]] = {}
    for kind in kinds:
        entry = registry.lane_executors.get(kind)
        if entry is None:
            continue
        model = getattr(entry.obj, "check_model", None)
        reason = model_problem(kind, model)
        if reason is None:
            models[kind] = model  # type: ignore[assignment]  # checked by model_problem
        else:
            broken[kind] = (f"check kind '{kind}' (plugin '{entry.plugin}') {reason}", _FIX)
    for kind in [kind for kind, model in models.items() if not getattr(model, "__pydantic_complete__", False)]:
        broken[kind] = (f"check kind '{kind}' cannot be used: its check_model is invalid (not fully defined)", _FIX)
        del models[kind]
    return PluginKinds(registry, models, broken, tuple(registry.warnings))


def model_problem(kind: str, model: Any) -> str | None:
    """Why ``model`` cannot validate checks of ``kind`` (None when it can)."""
    from agentreview.model.check_model import CheckModel
    from agentreview.model.manifest import ID_PATTERN

    if re.fullmatch(ID_PATTERN, kind) is None or len(kind) > 64:
        return "is not a usable kind name (lowercase letters, digits and '-', starting with a letter)"
    if model is None:
        return "declares no check_model, so it cannot be used in a manifest"
    if not (isinstance(model, type) and issubclass(model, CheckModel)):
        return "has a check_model that is not a subclass of agentreview.api.CheckModel"
    config = model.model_config
    if config.get("extra") != "forbid" or not config.get("strict") or not config.get("frozen"):
        return "has a check_model that is not frozen, strict and closed to unknown keys (extra='forbid')"
    kind_field = model.model_fields.get("kind")
    annotation = kind_field.annotation if kind_field is not None else None
    if get_origin(annotation) is not Literal or get_args(annotation) != (kind,):
        return f"has a check_model whose 'kind' is not Literal['{kind}']"
    if "effects" in model.model_fields:
        return "has a check_model with 'effects', which only a command check may declare"
    return None
