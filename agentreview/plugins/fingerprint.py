"""What the installed distributions were read from, cheap to compare: the fingerprint of the plugin cache.

importlib.metadata finds distributions by listing every ``sys.path`` entry for ``*.dist-info`` /
``*.egg-info`` folders and reading their files. Its answer can change only if

- the interpreter or ``sys.path`` changes (another venv, ``PYTHONPATH``, a new ``.pth``);
- the distribution folders an entry lists change: installing, removing or upgrading a distribution
  creates or removes one, which also changes the entry's ``mtime`` (:func:`environment_key`). Other
  changes touch it too (a ``__pycache__`` created by a first import, an editor's file in a project
  on ``sys.path``); then the entry is listed again and compared by names (:func:`listing`), which is
  what importlib.metadata goes by;
- a file it reads is rewritten in place, which changes no folder: every distribution's
  ``entry_points.txt``, and for the distributions that declare plugins, their folder, ``METADATA``
  and ``PKG-INFO`` (name and version) (:func:`watched_paths`).

Each path is recorded with its ``stat`` (mtime and ctime in ns, inode, size, device: a file put back
with an old mtime by ``cp -p`` or ``rsync -a`` still changes its ctime), or ``None`` when it does not
exist. A change within one clock tick of the scan could leave every ``stat`` unchanged:
:func:`is_racy` says when a fingerprint is too recent to vouch for a scan, which then is not cached.
Standard library only, no importlib.metadata: this runs on every command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

Stat = list[int] | None  # [mtime_ns, ctime_ns, ino, size, dev], or None when the path does not exist

FORMAT = "agentreview-plugin-fingerprint/1"
# A change within this long before the scan may share its timestamp with the state the scan saw:
# file timestamps come from a coarse clock (one tick, at most 10 ms on Linux), or are whole seconds
# on file systems such as HFS+ and FAT (2 s).
FINE_MARGIN_NS = 50_000_000
COARSE_MARGIN_NS = 2_000_000_000
_SECOND_NS = 1_000_000_000
_PLUGIN_FILES = ("", "METADATA", "PKG-INFO", "entry_points.txt")


def stat_of(path: str) -> Stat:
    """The ``stat`` of ``path`` (following links, as an import would), or ``None`` if it cannot be had."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size, st.st_dev]


def _foreign_finders() -> bool:
    """A finder besides the standard path finder that can report distributions (an app bundler's,
    the importlib_metadata backport's): its answer is not covered by this fingerprint."""
    from importlib.machinery import PathFinder

    return any(
        finder is not PathFinder and getattr(finder, "find_distributions", None) is not None for finder in sys.meta_path
    )


def environment_key() -> dict[str, Any] | None:
    """The interpreter and every ``sys.path`` entry with its ``stat``, or ``None`` when this process
    finds distributions in a way the fingerprint does not cover (then nothing is cached)."""
    if not all(isinstance(entry, str) for entry in sys.path) or _foreign_finders():
        return None
    return {
        "format": FORMAT,
        "executable": sys.executable,
        "python": sys.version,
        "path": [[entry, stat_of(entry or ".")] for entry in sys.path],
    }


def listing(entry: str) -> list[str] | None:
    """The distribution folders importlib.metadata would find in one ``sys.path`` entry, sorted;
    ``None`` when it cannot be listed (missing, a file, a zip: its ``stat`` alone stands for it)."""
    root = entry or "."
    try:
        names = os.listdir(root)
    except (OSError, ValueError):
        return None
    base_is_egg = os.path.basename(root).lower().endswith(".egg")
    return sorted(
        name
        for name in names
        if name.lower().endswith((".dist-info", ".egg-info")) or (base_is_egg and name.lower() == "egg-info")
    )


def same_environment(recorded: dict[str, Any], current: dict[str, Any], listings: list[Any]) -> bool:
    """Whether ``current`` finds what ``recorded`` found: the same interpreter and ``sys.path``, and
    each entry whose ``stat`` changed still lists the same distribution folders (``listings``, as
    recorded with ``recorded``)."""
    if {k: v for k, v in recorded.items() if k != "path"} != {k: v for k, v in current.items() if k != "path"}:
        return False
    before, after = recorded["path"], current["path"]
    if len(before) != len(after) or len(listings) != len(after):
        return False
    for (old_entry, old_stat), (entry, stat), names in zip(before, after, listings, strict=True):
        if old_entry != entry:
            return False
        if old_stat != stat and (names is None or listing(entry) != names):
            return False
    return True


def distribution_dirs(key: dict[str, Any], listings: Iterable[list[str] | None]) -> Iterator[str]:
    """Every distribution folder of ``listings`` (one per entry of ``key``), as a path."""
    for (entry, _), names in zip(key["path"], listings, strict=True):
        for name in names or ():
            yield os.path.join(entry or ".", name)


def watched_paths(all_dists: Iterable[str], plugin_dists: Iterable[str]) -> list[list[Any]]:
    """``[path, stat]`` for the files whose in-place rewrite would change the answer."""
    paths = {os.path.join(d, f) if f else d for d in plugin_dists for f in _PLUGIN_FILES}
    paths |= {os.path.join(d, "entry_points.txt") for d in all_dists}
    return [[path, stat_of(path)] for path in sorted(paths)]


def is_current(watched: Iterable[list[Any]]) -> bool:
    """Whether every watched path still has the ``stat`` it had."""
    return all(stat_of(path) == recorded for path, recorded in watched)


def is_racy(key: dict[str, Any], watched: Iterable[list[Any]], scan_started_ns: int) -> bool:
    """Whether a path changed so close to the scan that a later change could keep its timestamps
    (then the fingerprint cannot vouch for the scan, and it is not cached)."""
    stats = [stat for _, stat in key["path"]] + [stat for _, stat in watched]
    return any(_recent(stat, scan_started_ns) for stat in stats)


def _recent(stat: Stat, scan_started_ns: int) -> bool:
    if stat is None:
        return False
    mtime, ctime = stat[0], stat[1]
    coarse = mtime % _SECOND_NS == 0 and ctime % _SECOND_NS == 0
    margin = COARSE_MARGIN_NS if coarse else FINE_MARGIN_NS
    return max(mtime, ctime) >= scan_started_ns - margin
