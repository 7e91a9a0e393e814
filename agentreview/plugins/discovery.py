"""Which plugins are installed: the core's built-ins, and the ``agentreview`` entry points.

A scan of the entry points is kept in ``$AGENTREVIEW_HOME/cache/`` under a key made of exactly what the scan
reads (the interpreter, each ``sys.path`` entry and the ``stat`` of each distribution's metadata files), taken
before and after the scan. Best effort: an unreadable, foreign or planted cache costs one scan.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import re
import sys
import zlib
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from agentreview import __version__
from agentreview.host.files import atomic_write_bytes, read_regular_file
from agentreview.host.home import cache_dir

GROUP = "agentreview"
CACHE_FORMAT = "agentreview-plugin-cache/2"
CACHE_LIMIT = 1024 * 1024  # a real cache is a few KiB; anything larger is not ours
_DIST_FILES = ("entry_points.txt", "METADATA", "PKG-INFO")
# An entry point's value, ``module``, ``module:attr.attr`` or either with ``[extras]``.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@dataclass(frozen=True)
class PluginEntry:
    """One plugin entry, with the distribution that declares it (``None``: unknown)."""

    name: str
    value: str
    distribution: str | None
    version: str | None


# The core's own built-ins, registered like any plugin so they can be blocked
# (AGENTREVIEW_DISABLE_PLUGINS=agentreview-core) or replaced.
BUILTINS = tuple(
    PluginEntry(name, module, "agentreview-core", __version__)
    for name, module in (
        ("builtin-path-loader", "agentreview.packs.path_loader"),
        ("builtin-npm-loader", "agentreview.packs.npm_loader"),
        ("builtin-ssh-signer", "agentreview.signing.ssh_signer"),
    )
)

_BUILTIN_NAMES = frozenset(e.name for e in BUILTINS)


@dataclass(frozen=True)
class Listing:
    """The built-ins, then the group's entry points in importlib.metadata's order; whether from the cache."""

    entries: tuple[PluginEntry, ...]
    from_cache: bool


def load(entry: PluginEntry) -> Any:
    """Import the object an entry names, exactly as ``EntryPoint.load`` does."""
    match = _VALUE.match(entry.value)
    if match is None:
        raise ValueError(f"entry point value {entry.value!r} is not 'module' or 'module:attribute'")
    module = importlib.import_module(match.group("module"))
    return functools.reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)


def discover(*, rescan: bool = False, cache: bool = True) -> Listing:
    """The plugins: from the cache when its key matches (and not ``rescan``), else scanned and kept.
    ``cache=False`` neither reads nor writes it (a command that leaves the caller's home untouched)."""
    key = environment_key() if cache else None
    path = cache_path() if key is not None else None
    if key is None or path is None:
        return Listing(BUILTINS + _scan(), from_cache=False)
    if not rescan and (cached := _read(path, key)) is not None:
        return Listing(BUILTINS + cached, from_cache=True)
    entries = _scan()
    if environment_key() == key:  # nothing changed while it scanned
        rows = [[e.name, e.value, e.distribution, e.version] for e in entries]
        document = json.dumps({"format": CACHE_FORMAT, "key": key, "entries": rows}).encode()
        try:
            if not path.parent.is_symlink():  # never write through a link planted in the home
                atomic_write_bytes(path, document, durable=False)
        except OSError:
            pass
    return Listing(BUILTINS + entries, from_cache=False)


def environment_key() -> str | None:
    """The digest of what a scan reads, or ``None`` when a finder outside ``sys.path`` also reports
    distributions (an app bundler's, the importlib_metadata backport's): then nothing is cached."""
    if any(f is not PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return None
    parts: list[Any] = [sys.executable, sys.version]
    for entry in sys.path:
        root = entry or "."
        try:
            names = sorted(n for n in os.listdir(root) if n.lower().endswith((".dist-info", ".egg-info")))
        except (OSError, ValueError, TypeError):
            parts.append([root, _stat(root)])  # a zip or a missing folder: its own stat stands for it
            continue
        if os.path.basename(root).lower().endswith(".egg"):
            names.append("EGG-INFO")
        parts.append([root, [[n, [_stat(os.path.join(root, n, f)) for f in _DIST_FILES]] for n in names]])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size, st.st_dev]


def cache_path() -> Path | None:
    """This interpreter's cache file, or ``None`` when there is no home to keep it in."""
    try:
        folder = cache_dir()
    except (OSError, RuntimeError, KeyError):
        return None
    return folder / f"plugins-{zlib.crc32(os.fsencode(sys.executable)):08x}.json"


def _scan() -> tuple[PluginEntry, ...]:
    from importlib.metadata import entry_points  # paid only on a scan

    entries = []
    for ep in entry_points(group=GROUP):
        name, version = getattr(ep.dist, "name", None), getattr(ep.dist, "version", None)
        known = isinstance(name, str) and isinstance(version, str)
        if name == "agentreview-core" and ep.name in _BUILTIN_NAMES:
            continue  # an install made before the built-ins were registered directly
        entries.append(PluginEntry(ep.name, ep.value, name if known else None, version if known else None))
    return tuple(entries)


def _read(path: Path, key: str) -> tuple[PluginEntry, ...] | None:
    """The cached entries if the file is ours, well formed and made under ``key``."""
    try:
        document = json.loads(read_regular_file(path, limit=CACHE_LIMIT, follow_symlinks=False, plain_dir=True))
        if document["format"] != CACHE_FORMAT or document["key"] != key:
            return None
        entries = tuple(PluginEntry(*row) for row in document["entries"])
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return None
    for e in entries:
        dist = (isinstance(e.distribution, str) and isinstance(e.version, str)) or e.distribution is e.version is None
        if not (isinstance(e.name, str) and isinstance(e.value, str) and dist):
            return None
    return entries
