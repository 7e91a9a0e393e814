"""Which plugins are installed: the core's built-ins and the ``agentreview`` entry points. A scan's answer is
kept in ``$AGENTREVIEW_HOME/cache/`` under the ``stat`` of what it read; a bad or planted cache costs one scan."""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, NamedTuple

from agentreview import __version__
from agentreview.host.files import atomic_write_bytes, read_regular_file
from agentreview.host.home import cache_dir
from agentreview.model.digests import sha256_hex

GROUP = "agentreview"
CACHE_FORMAT = "agentreview-plugin-cache/3"
_METADATA_FILES = ("entry_points.txt", "METADATA", "PKG-INFO")
_ROW_TYPES = ([str] * 4, [str, str, type(None), type(None)])  # a cached entry's types, with or without its distribution


class PluginEntry(NamedTuple):
    """One plugin entry, with the distribution that declares it (``None``: unknown)."""

    name: str
    value: str
    distribution: str | None
    version: str | None


# The core's own, registered like any plugin so they can be blocked (by distribution: agentreview-core) or replaced.
BUILTINS = (
    PluginEntry("builtin-path-loader", "agentreview.packs.path_loader", "agentreview-core", __version__),
    PluginEntry("builtin-npm-loader", "agentreview.packs.npm_loader", "agentreview-core", __version__),
    PluginEntry("builtin-ssh-signer", "agentreview.signing.ssh_signer", "agentreview-core", __version__),
)


def load(entry: PluginEntry) -> Any:
    """Import what ``module`` or ``module:attr.attr`` (either with ``[extras]``) names, as ``EntryPoint.load``."""
    module, _, attrs = entry.value.partition("[")[0].partition(":")
    return functools.reduce(getattr, filter(None, attrs.strip().split(".")), importlib.import_module(module.strip()))


def discover(*, rescan: bool = False, cache: bool = True) -> tuple[tuple[PluginEntry, ...], bool]:
    """The built-ins then the entry points (in importlib.metadata's order), and whether they came from the cache,
    used when its key matches and not ``rescan``. ``cache=False`` neither reads nor writes the caller's home."""
    key = _key() if cache else None
    try:
        path = cache_dir() / f"plugins-{sha256_hex(os.fsencode(sys.executable))[:8]}.json"
    except (OSError, RuntimeError, KeyError):  # no home to keep it in
        key = None
    if key and not rescan and (cached := _read(path, key)) is not None:
        return BUILTINS + cached, True
    entries = _scan()
    # Kept under the key taken before the scan: a change during the scan alters the next key, so it is never served.
    if key and not path.parent.is_symlink():  # never write through a link planted in the home
        with contextlib.suppress(OSError):
            document = {"format": CACHE_FORMAT, "key": key, "entries": entries}
            atomic_write_bytes(path, json.dumps(document).encode(), durable=False)
    return BUILTINS + entries, False


def _key() -> str | None:
    """The digest of what a scan reads: the interpreter and the ``stat`` of the distributions' metadata on ``sys.path``
    (ctime too: a file put back with its old mtime is seen); ``None`` when a finder outside ``sys.path`` lists some."""
    if any(f is not PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return None
    parts: list[Any] = [CACHE_FORMAT, sys.executable, sys.version]
    for root in (entry or "." for entry in sys.path):
        try:
            names = sorted(n for n in os.listdir(root) if n.lower().endswith((".dist-info", ".egg-info")))
        except (OSError, ValueError, TypeError):
            parts.append([root, _stat(root)])  # a zip or a missing folder: its own stat stands for it
            continue
        names += ["EGG-INFO"] if os.path.basename(root).lower().endswith(".egg") else []
        parts.append([root, [[n, [_stat(os.path.join(root, n, f)) for f in _METADATA_FILES]] for n in names]])
    return sha256_hex(repr(parts))


def _stat(path: Any) -> tuple[int, ...] | None:
    with contextlib.suppress(OSError, ValueError, TypeError):
        st = os.stat(path)
        return st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size, st.st_dev
    return None


def _scan() -> tuple[PluginEntry, ...]:
    from importlib.metadata import entry_points  # paid only on a scan

    entries = []
    for ep in entry_points(group=GROUP):
        dist, version = getattr(ep.dist, "name", None), getattr(ep.dist, "version", None)
        if not (isinstance(dist, str) and isinstance(version, str)):
            dist = version = None
        if not (dist == "agentreview-core" and ep.name in {e.name for e in BUILTINS}):  # an old core's install
            entries.append(PluginEntry(ep.name, ep.value, dist, version))
    return tuple(entries)


def _read(path: Path, key: str) -> tuple[PluginEntry, ...] | None:
    """The cached entries if the file is a regular one of at most 1 MiB, ours, and made under ``key``."""
    with contextlib.suppress(OSError, ValueError, RecursionError, KeyError, TypeError):
        document = json.loads(read_regular_file(path, limit=1 << 20, follow_symlinks=False, plain_dir=True))
        rows = document["entries"] if (document["format"], document["key"]) == (CACHE_FORMAT, key) else None
        if isinstance(rows, list) and all(isinstance(r, list) and list(map(type, r)) in _ROW_TYPES for r in rows):
            return tuple(PluginEntry(*r) for r in rows)
    return None
