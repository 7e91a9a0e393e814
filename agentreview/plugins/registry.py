"""Plugin discovery: a plugin manager made per call, never a global one at import.

Plugins are distributions that declare modules in the ``agentreview`` entry-point
group. ``AGENTREVIEW_PLUGINS=a,b`` loads only those distributions (or entry-point
names); ``AGENTREVIEW_DISABLE_PLUGINS=x`` blocks some. A plugin that fails to
import becomes one warning and the rest still work. Two plugins registering the
same lane kind, pack form, provider or signer name is a :class:`PluginConflictError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import pluggy

from agentreview.model.errors import AgentreviewError
from agentreview.plugins import hookspecs

GROUP = "agentreview"
ENV_ONLY = "AGENTREVIEW_PLUGINS"
ENV_DISABLE = "AGENTREVIEW_DISABLE_PLUGINS"

# hook name -> (registry attribute, attribute naming the registered object)
HOOKS: dict[str, tuple[str, str]] = {
    "agentreview_register_lane_executors": ("lane_executors", "kind"),
    "agentreview_register_pack_loaders": ("pack_loaders", "form"),
    "agentreview_register_reviewer_providers": ("providers", "name"),
    "agentreview_register_signers": ("signers", "name"),
}


class PluginConflictError(AgentreviewError):
    """Two plugins claim the same name for one extension point.

    An :class:`AgentreviewError`, so every command that loads plugins reports it as one line
    and exits 3 (a configuration the host cannot run with)."""


@dataclass
class PluginInfo:
    name: str  # entry-point name (the name registered with pluggy)
    distribution: str
    version: str
    module: str
    hooks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "hooks": sorted(self.hooks),
        }


@dataclass
class Registered:
    obj: Any
    plugin: str


@dataclass
class Registry:
    """What the loaded plugins provide, by extension point and name."""

    plugins: list[PluginInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lane_executors: dict[str, Registered] = field(default_factory=dict)
    pack_loaders: dict[str, Registered] = field(default_factory=dict)
    providers: dict[str, Registered] = field(default_factory=dict)
    signers: dict[str, Registered] = field(default_factory=dict)

    def get(self, point: str, name: str) -> Any | None:
        entry = getattr(self, point).get(name)
        return entry.obj if entry else None

    def objects(self, point: str) -> dict[str, Any]:
        return {name: reg.obj for name, reg in getattr(self, point).items()}


def _one_line(exc: BaseException) -> str:
    """An exception as one line: a warning must not spill a plugin's multi-line message over stderr."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _split_env(value: str | None) -> set[str]:
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-")


def _selected(ep: EntryPoint, only: set[str], blocked: set[str]) -> bool:
    dist = _normalize(ep.dist.name) if ep.dist else ""
    names = {_normalize(ep.name), dist}
    if names & {_normalize(b) for b in blocked}:
        return False
    return not only or bool(names & {_normalize(o) for o in only})


def make_plugin_manager(
    *,
    only: Iterable[str] | None = None,
    blocked: Iterable[str] | None = None,
    extra_plugins: Iterable[tuple[str, ModuleType | object]] = (),
    load_entry_points: bool = True,
) -> tuple[pluggy.PluginManager, list[PluginInfo], list[str]]:
    """Build a fresh plugin manager with the selected entry points registered.

    ``only`` and ``blocked`` default to the environment variables. ``extra_plugins``
    registers in-process objects (tests, embedding applications).
    Returns the manager, what was loaded, and one warning per plugin that failed.
    """
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    only_set = set(only) if only is not None else _split_env(os.environ.get(ENV_ONLY))
    blocked_set = set(blocked) if blocked is not None else _split_env(os.environ.get(ENV_DISABLE))
    infos: list[PluginInfo] = []
    warnings: list[str] = []
    if load_entry_points:
        seen: set[str] = set()
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            if ep.name in seen or not _selected(ep, only_set, blocked_set):
                continue
            seen.add(ep.name)
            dist_name = ep.dist.name if ep.dist else "?"
            dist_version = ep.dist.version if ep.dist else "?"
            try:
                module = ep.load()
                pm.register(module, name=ep.name)
            except (Exception, SystemExit) as exc:  # a broken plugin must not take the others down
                warnings.append(
                    f"plugin '{ep.name}' ({dist_name} {dist_version}) failed to load and was skipped: "
                    f"{_one_line(exc)}"
                )
                continue
            infos.append(PluginInfo(ep.name, dist_name, dist_version, ep.value))
    for name, obj in extra_plugins:
        pm.register(obj, name=name)
        infos.append(PluginInfo(name, "(in-process)", "", getattr(obj, "__name__", repr(obj))))
    by_name = {info.name: info for info in infos}
    for hook_name in HOOKS:
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            if impl.plugin_name in by_name:
                by_name[impl.plugin_name].hooks.append(hook_name)
    return pm, infos, warnings


def build_registry(
    pm: pluggy.PluginManager, infos: list[PluginInfo], warnings: list[str]
) -> Registry:
    """Call every plugin's register hooks, one implementation at a time, to attribute and
    reject conflicting names."""
    registry = Registry(plugins=infos, warnings=list(warnings))
    for hook_name, (attr, key_attr) in HOOKS.items():
        table: dict[str, Registered] = getattr(registry, attr)
        for impl in reversed(getattr(pm.hook, hook_name).get_hookimpls()):
            plugin_name = impl.plugin_name

            def register(obj: Any, _plugin: str = plugin_name, _table=table, _key=key_attr) -> None:
                key = getattr(obj, _key, None)
                if not isinstance(key, str) or not key:
                    raise PluginConflictError(
                        f"plugin '{_plugin}' registered {obj!r} without a '{_key}' name"
                    )
                if key in _table and _table[key].plugin != _plugin:
                    raise PluginConflictError(
                        f"plugins '{_table[key].plugin}' and '{_plugin}' both provide {_key} '{key}' "
                        f"— disable one with {ENV_DISABLE}=<name>"
                    )
                _table[key] = Registered(obj, _plugin)

            try:
                impl.function(register)
            except PluginConflictError:
                raise
            except (Exception, SystemExit) as exc:
                registry.warnings.append(
                    f"plugin '{plugin_name}' failed in {hook_name} and was skipped: {_one_line(exc)}"
                )
    return registry


def load_registry(
    *,
    only: Iterable[str] | None = None,
    blocked: Iterable[str] | None = None,
    extra_plugins: Iterable[tuple[str, ModuleType | object]] = (),
    load_entry_points: bool = True,
) -> Registry:
    """Discover plugins and collect what they register (the one call most code needs)."""
    pm, infos, warnings = make_plugin_manager(
        only=only, blocked=blocked, extra_plugins=extra_plugins, load_entry_points=load_entry_points
    )
    return build_registry(pm, infos, warnings)


RegisterFn = Callable[[Any], None]
