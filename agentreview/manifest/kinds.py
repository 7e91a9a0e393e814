"""Check kinds contributed by plugins: which model validates a check whose kind is not built in.

``command`` and ``agent`` are the spec's kinds, validated by the built-in models; a manifest
that uses only them never loads a plugin to be parsed. A check of any other kind is validated
by the ``check_model`` of the lane executor a plugin registered for that kind, so the plugin
registry is loaded only when such a check appears. The validators are built per set of plugin
models (and cached), so the review model the JSON Schema documents stays the spec's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.plugins.registry import Registry

__all__ = [
    "BUILTIN_CHECK_KINDS",
    "PluginKinds",
    "check_adapter",
    "find_plugin_kinds",
    "review_adapter",
    "review_model",
]

# The spec's kinds: validated by the built-in models, never looked up among plugins.
BUILTIN_CHECK_KINDS = ("command", "agent")

_FIX = "update the plugin, or report this to its author"


@dataclass(frozen=True)
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

    def model_tuple(self) -> tuple[type[Any], ...]:
        return tuple(self.models[kind] for kind in sorted(self.models))


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
    if models:
        try:
            review_adapter(tuple(models[k] for k in sorted(models)))
        except Exception as exc:  # a model pydantic cannot combine: one line, never a traceback
            text = " ".join(str(exc).split())[:200]
            for kind in models:
                broken[kind] = (f"check kind '{kind}' cannot be used: its check_model is invalid ({text})", _FIX)
            models = {}
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


# --------------------------------------------------------------------------- validators


def _check_union(models: tuple[type[Any], ...]) -> Any:
    from typing import Annotated, Union

    from pydantic import Field

    from agentreview.model.manifest import AgentCheck, CommandCheck

    members = (CommandCheck, AgentCheck, *models)
    return Annotated[Union[members], Field(discriminator="kind")]  # noqa: UP007  # a runtime tuple of members


@functools.lru_cache(maxsize=8)
def review_model(models: tuple[type[Any], ...] = ()) -> type[Any]:
    """The review manifest record whose ``checks`` also accept ``models`` (the spec's record when none).

    With plugin models it is a dataclass subclass of ``ReviewManifest`` (so every reader of a
    parsed manifest sees the record it knows) whose one changed field names the wider union.
    """
    from agentreview.model.manifest import ReviewManifest

    if not models:
        return ReviewManifest
    from dataclasses import make_dataclass
    from typing import Annotated

    from pydantic import Field, Strict

    import agentreview.model.manifest_fields  # noqa: F401  # the base's field types resolve (its publish step)

    union = _check_union(models)
    checks: Any = Annotated[list[union], Strict(), Field(min_length=1)]  # type: ignore[valid-type]  # built at run time
    return make_dataclass(
        "ReviewManifest",
        [("checks", checks)],
        bases=(ReviewManifest,),
        namespace={"__module__": __name__},
        frozen=True,
        kw_only=True,
        slots=True,
    )


@functools.lru_cache(maxsize=8)
def review_adapter(models: tuple[type[Any], ...] = ()) -> Any:
    """The validator of a whole review manifest whose ``checks`` also accept ``models``, built once."""
    from pydantic import TypeAdapter

    from agentreview.model.manifest_fields import adapter

    return TypeAdapter(review_model(models)) if models else adapter(review_model())


@functools.lru_cache(maxsize=8)
def check_adapter(is_pack: bool, models: tuple[type[Any], ...] = ()) -> Any:
    """One validator per check union, built once: building it costs milliseconds per call."""
    from pydantic import TypeAdapter

    from agentreview.model.manifest_fields import Check, PackCheck, adapter

    if is_pack:
        return adapter(PackCheck)
    return TypeAdapter(_check_union(models)) if models else adapter(Check)
