"""Plugin discovery: a plugin manager made per call, never a global one at import.

``AGENTREVIEW_PLUGINS`` and ``AGENTREVIEW_DISABLE_PLUGINS`` choose distributions. A broken plugin is a warning,
never silent; two plugins claiming one name (or one signature alg) are a :class:`PluginConflictError`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any

import pluggy

from agentreview.model.errors import AgentreviewError
from agentreview.model.signature_alg import is_signature_alg
from agentreview.plugins import discovery, hookspecs
from agentreview.plugins.discovery import GROUP, PluginEntry

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
    """One loaded plugin as ``agentreview plugins`` lists it: entry point, distribution, module and hooks."""

    name: str  # entry-point name (the name registered with pluggy)
    distribution: str
    version: str
    module: str
    hooks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hooks": sorted(self.hooks)}


@dataclass
class Registered:
    """An object a plugin registered, with the plugin's name (for conflicts and messages)."""

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
    # signature alg -> the signer that declares it (its ``algorithms``); filled from ``signers``
    signature_algs: dict[str, Registered] = field(default_factory=dict)

    def get(self, point: str, name: str) -> Any | None:
        entry = getattr(self, point).get(name)
        return entry.obj if entry else None

    def objects(self, point: str) -> dict[str, Any]:
        return {name: reg.obj for name, reg in getattr(self, point).items()}

    def signer_for_alg(self, alg: str) -> Any | None:
        """The installed signer that verifies signatures of ``alg``, or ``None``."""
        entry = self.signature_algs.get(alg)
        return entry.obj if entry else None


def _one_line(exc: BaseException) -> str:
    """An exception as one line: a warning must not spill a plugin's multi-line message over stderr."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _split_env(value: str | None) -> set[str]:
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-")


def _selected(ep: PluginEntry, only: set[str], blocked: set[str]) -> bool:
    dist = _normalize(ep.distribution) if ep.distribution else ""
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
    cache: bool = True,
) -> tuple[pluggy.PluginManager, list[PluginInfo], list[str]]:
    """A fresh plugin manager with the selected entry points registered, what was loaded, and one warning
    per plugin that failed. ``only`` and ``blocked`` default to the environment variables;
    ``extra_plugins`` registers in-process objects; ``cache=False`` keeps nothing under the home."""
    only_set = set(only) if only is not None else _split_env(os.environ.get(ENV_ONLY))
    blocked_set = set(blocked) if blocked is not None else _split_env(os.environ.get(ENV_DISABLE))
    entries, from_cache = discovery.discover(cache=cache) if load_entry_points else ((), False)
    pm, infos, warnings, import_failed = _entry_point_manager(entries, only_set, blocked_set)
    if import_failed and from_cache:
        # The cached listing names a module that is not there: perhaps uninstalled in a way the
        # fingerprint could not see. Ask importlib.metadata once; if its answer differs, start over from it.
        fresh, _ = discovery.discover(rescan=True)
        if fresh != entries:
            pm, infos, warnings, _ = _entry_point_manager(fresh, only_set, blocked_set)
    for name, obj in extra_plugins:
        pm.register(obj, name=name)
        infos.append(PluginInfo(name, "(in-process)", "", getattr(obj, "__name__", repr(obj))))
    by_name = {info.name: info for info in infos}
    for hook_name in HOOKS:
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            if impl.plugin_name in by_name:
                by_name[impl.plugin_name].hooks.append(hook_name)
    warnings.extend(_unknown_hook_warnings(pm, by_name))
    return pm, infos, warnings


def _entry_point_manager(
    entries: Iterable[PluginEntry], only: set[str], blocked: set[str]
) -> tuple[pluggy.PluginManager, list[PluginInfo], list[str], bool]:
    """A manager with the selected entry points registered, what loaded, the warnings, and whether
    an entry failed with ImportError (its module, or one it imports, is not installed)."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    warnings: list[str] = []
    import_failed = False
    seen: dict[str, PluginEntry] = {}
    # Sorted by name, stably: of two distributions declaring one name, the one earlier on
    # sys.path is loaded, as Python would import it.
    for ep in sorted(entries, key=lambda e: e.name):
        if not _selected(ep, only, blocked):
            continue
        if ep.name in seen:
            warnings.append(_duplicate_warning(seen[ep.name], ep))
            continue
        seen[ep.name] = ep
        dist_name = ep.distribution or "?"
        dist_version = ep.version or "?"
        try:
            module = discovery.load(ep)
            pm.register(module, name=ep.name)
        except (Exception, SystemExit) as exc:  # a broken plugin must not take the others down
            import_failed = import_failed or isinstance(exc, ImportError)
            warnings.append(
                f"plugin '{ep.name}' ({dist_name} {dist_version}) failed to load and was skipped: "
                f"{_one_line(exc)}"
            )
            continue
        infos.append(PluginInfo(ep.name, dist_name, dist_version, ep.value))
    return pm, infos, warnings, import_failed


def _dist_label(ep: PluginEntry) -> str:
    return f"{ep.distribution} {ep.version}" if ep.distribution else "an unknown distribution"


def _duplicate_warning(loaded: PluginEntry, skipped: PluginEntry) -> str:
    """Two distributions declare one entry-point name: pluggy registers a plugin once per
    name, so the second is skipped, and saying so is the difference from a silent shadow."""
    return (
        f"plugin '{skipped.name}' is declared by two distributions, {_dist_label(loaded)} (loaded) and "
        f"{_dist_label(skipped)} (skipped) — uninstall one, or pick one with "
        f"{ENV_DISABLE}=<the other's distribution name>"
    )


def _unknown_hook_warnings(pm: pluggy.PluginManager, infos: dict[str, PluginInfo]) -> list[str]:
    """One warning per hook implementation no specification knows (a misspelt hook name, which pluggy
    would never call), naming the nearest known hook; the plugin's other hooks keep working."""
    try:
        pm.check_pending()
        return []
    except pluggy.PluginValidationError:
        pass
    warnings: list[str] = []
    for hook_name in sorted(name for name in vars(pm.hook) if not name.startswith("_")):
        caller = getattr(pm.hook, hook_name)
        if caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if impl.optionalhook:
                continue
            info = infos.get(impl.plugin_name)
            origin = f" ({' '.join(filter(None, (info.distribution, info.version)))})" if info else ""
            close = difflib.get_close_matches(hook_name, list(HOOKS), n=1)
            hint = f" — did you mean '{close[0]}'?" if close else f" — the hooks are {', '.join(HOOKS)}"
            warnings.append(
                f"plugin '{impl.plugin_name}'{origin} implements unknown hook '{hook_name}', which is never "
                f"called{hint}"
            )
    return warnings


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
    registry.signature_algs = _signature_algs(registry.signers)
    return registry


def _declared_algorithms(name: str, entry: Registered) -> tuple[str, ...]:
    """A signer's ``algorithms``: a tuple (or list) of alg names; a signer that declares none
    verifies nothing (it may still sign). Anything else is the plugin's error, named."""
    declared = getattr(entry.obj, "algorithms", ())
    if isinstance(declared, (tuple, list)) and all(is_signature_alg(alg) for alg in declared):
        return tuple(declared)
    raise PluginConflictError(
        f"plugin '{entry.plugin}' registered signer '{name}' with algorithms={declared!r}: it must be a tuple "
        "of signature alg names (letters, digits, '.', '_', '+', '-'), e.g. ('ssh-ed25519',)"
    )


def _signature_algs(signers: dict[str, Registered]) -> dict[str, Registered]:
    """alg -> the signer that verifies it. A signature names its alg, not a plugin, so two
    signers declaring one alg would make the choice arbitrary: a conflict naming both."""
    table: dict[str, Registered] = {}
    owner: dict[str, str] = {}
    for name, entry in signers.items():
        for alg in _declared_algorithms(name, entry):
            if alg in table and owner[alg] != name:
                other = table[alg]
                if other.plugin == entry.plugin:
                    raise PluginConflictError(
                        f"plugin '{entry.plugin}' registers two signers, '{owner[alg]}' and '{name}', "
                        f"that both verify signature alg '{alg}'"
                    )
                raise PluginConflictError(
                    f"plugins '{other.plugin}' and '{entry.plugin}' both verify signature alg '{alg}' "
                    f"(signers '{owner[alg]}' and '{name}') — disable one with {ENV_DISABLE}=<name>"
                )
            table[alg], owner[alg] = entry, name
    return table


def load_registry(
    *,
    only: Iterable[str] | None = None,
    blocked: Iterable[str] | None = None,
    extra_plugins: Iterable[tuple[str, ModuleType | object]] = (),
    load_entry_points: bool = True,
    cache: bool = True,
) -> Registry:
    """Discover plugins and collect what they register (the one call most code needs)."""
    pm, infos, warnings = make_plugin_manager(
        only=only, blocked=blocked, extra_plugins=extra_plugins, load_entry_points=load_entry_points, cache=cache
    )
    return build_registry(pm, infos, warnings)
