"""Which plugins are installed: the ``agentreview`` entry points, from a cache while the environment is unchanged.

Asking importlib.metadata costs up to ~30 ms a command: up to ~25 ms to import it (email, zipfile,
csv, ...; less when some are loaded already), ~3-4 ms to list every ``sys.path`` entry and read every
distribution's metadata. Its answer changes only when a
distribution is installed, removed or upgraded, so the answer of the last real scan is kept in
``$AGENTREVIEW_HOME/cache/plugins-<interpreter>.json`` with the fingerprint of what it was read
from (:mod:`agentreview.plugins.fingerprint`) and used while that fingerprint is unchanged.

The cache is best effort and never decides anything: missing, corrupt, foreign (another format or
interpreter), planted (a FIFO, a symlink, oversized), unreadable or unwritable, it is ignored, the
real scan runs and its answer is written back. It holds the whole group, unfiltered;
``AGENTREVIEW_PLUGINS`` / ``AGENTREVIEW_DISABLE_PLUGINS`` apply to it per command as to a scan. Loading
an entry (:func:`load`) is the same whichever way the listing came.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentreview.plugins import fingerprint

GROUP = "agentreview"
CACHE_FORMAT = "agentreview-plugin-cache/1"
CACHE_LIMIT = 1024 * 1024  # a real cache is a few KiB; anything larger is not ours

# An entry point's value, ``module``, ``module:attr.attr`` or either with ``[extras]``: the
# grammar importlib.metadata loads by.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@dataclass(frozen=True)
class PluginEntry:
    """One entry point of the group, with the distribution that declares it (``None``: unknown)."""

    name: str
    value: str
    distribution: str | None
    version: str | None


@dataclass(frozen=True)
class Listing:
    """The group's entry points in importlib.metadata's order, and whether they came from the cache."""

    entries: tuple[PluginEntry, ...]
    from_cache: bool


def load(entry: PluginEntry) -> Any:
    """Import the object an entry point names, exactly as ``EntryPoint.load`` does."""
    match = _VALUE.match(entry.value)
    if match is None:
        raise ValueError(f"entry point value {entry.value!r} is not 'module' or 'module:attribute'")
    module = importlib.import_module(match.group("module"))
    attrs = filter(None, (match.group("attr") or "").split("."))
    return functools.reduce(getattr, attrs, module)


def discover(*, rescan: bool = False, cache: bool = True) -> Listing:
    """The group's entry points: from the cache when it is current (and ``rescan`` is false), else
    from importlib.metadata, writing the cache for the next command. ``cache=False`` neither reads
    nor writes it (a command that promises to leave the caller's home untouched)."""
    started = time.time_ns()  # before any stat: a change after it is too recent to trust (is_racy)
    key = fingerprint.environment_key() if cache else None
    path = cache_path() if cache else None
    if key is None or path is None:
        return Listing(_scan()[0], from_cache=False)
    if not rescan:
        cached = _read(path, key, started)
        if cached is not None:
            return Listing(cached, from_cache=True)
    listings = [fingerprint.listing(entry) for entry, _ in key["path"]]  # what the scan is about to read
    entries, plugin_dirs = _scan()
    if plugin_dirs is not None:
        watched = fingerprint.watched_paths(fingerprint.distribution_dirs(key, listings), plugin_dirs)
        rows = [[e.name, e.value, e.distribution, e.version] for e in entries]
        document = {"format": CACHE_FORMAT, "key": key, "listing": listings, "watch": watched, "entries": rows}
        if not fingerprint.is_racy(key, watched, started):
            _write(path, document)
    return Listing(entries, from_cache=False)


def cache_path() -> Path | None:
    """This interpreter's cache file (one per interpreter, so two venvs do not take turns
    overwriting one file), or ``None`` when there is no home to keep it in."""
    from agentreview.host.home import cache_dir

    try:
        folder = cache_dir()
    except (OSError, RuntimeError, KeyError):  # no home directory can be determined
        return None
    return folder / f"plugins-{zlib.crc32(os.fsencode(sys.executable)):08x}.json"


def _scan() -> tuple[tuple[PluginEntry, ...], list[str] | None]:
    """The real answer, and the folder of each distribution that declares a plugin (``None`` when
    one has no folder on disk, e.g. inside a zip: then the answer is not cached)."""
    from importlib.metadata import entry_points

    entries: list[PluginEntry] = []
    folders: list[str] | None = []
    for ep in entry_points(group=GROUP):
        dist = ep.dist
        name = getattr(dist, "name", None)
        version = getattr(dist, "version", None)
        known = isinstance(name, str) and isinstance(version, str)
        entries.append(PluginEntry(ep.name, ep.value, name if known else None, version if known else None))
        where = getattr(dist, "_path", None)  # a PathDistribution's folder: the one handle to it
        if folders is not None and isinstance(where, str | os.PathLike):
            folders.append(os.fspath(where))
        else:
            folders = None
    return tuple(entries), folders


def _write(path: Path, document: dict[str, Any]) -> None:
    """Replace the cache file atomically; a home that cannot be written is not an error."""
    from agentreview.host.files import atomic_write_bytes

    try:
        if path.parent.is_symlink():  # never write through a link planted in the home
            return
        atomic_write_bytes(path, json.dumps(document, separators=(",", ":")).encode("utf-8"), durable=False)
    except OSError:
        return


def _read(path: Path, key: dict[str, Any], started: int) -> tuple[PluginEntry, ...] | None:
    """The cached entries if the file is ours, well formed, for this environment and still current.

    When a ``sys.path`` entry changed but still lists the same distributions, the file is written
    again with the entry's new ``stat``, so the next command compares ``stat`` alone again."""
    from agentreview.host.files import read_regular_file

    try:
        document = json.loads(read_regular_file(path, limit=CACHE_LIMIT, follow_symlinks=False, plain_dir=True))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or set(document) != {"format", "key", "listing", "watch", "entries"}:
        return None
    recorded, listings, watched = document["key"], document["listing"], document["watch"]
    if document["format"] != CACHE_FORMAT or not (_is_key(recorded) and _is_listings(listings)):
        return None
    if not (_is_watch_list(watched) and fingerprint.same_environment(recorded, key, listings)):
        return None
    if not fingerprint.is_current(watched):
        return None
    entries = _entries(document["entries"])
    if entries is not None and recorded != key and not fingerprint.is_racy(key, [], started):
        _write(path, {**document, "key": key})
    return entries


def _is_key(value: object) -> bool:
    return isinstance(value, dict) and _is_watch_list(value.get("path"))


def _is_listings(value: object) -> bool:
    return isinstance(value, list) and all(
        names is None or (isinstance(names, list) and all(isinstance(n, str) for n in names)) for names in value
    )


def _is_stat(value: object) -> bool:
    return value is None or (isinstance(value, list) and len(value) == 5 and all(type(n) is int for n in value))


def _is_watch_list(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and _is_stat(item[1]) for item in value
    )


def _entries(value: object) -> tuple[PluginEntry, ...] | None:
    if not isinstance(value, list):
        return None
    entries: list[PluginEntry] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 4):
            return None
        name, target, dist, version = item
        if not (isinstance(name, str) and isinstance(target, str)):
            return None
        if not ((isinstance(dist, str) and isinstance(version, str)) or (dist is None and version is None)):
            return None
        entries.append(PluginEntry(name, target, dist, version))
    return tuple(entries)
