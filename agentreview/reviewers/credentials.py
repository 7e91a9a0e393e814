"""Credentials linked into a private home, and saving back what a CLI refreshed there.

A CLI that renames a refreshed file over the link would lose the token with the attempt's folder, so a replaced
link is copied back when it is a valid newer credential of the same kind, and otherwise noted on the lane. Links
are recorded in this process, never in a file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from agentreview.host.files import atomic_write_bytes
from agentreview.reviewers.attempt import link_if_exists

_LINKS: dict[str, list[tuple[Path, Path]]] = {}  # attempt folder -> (user's credential, link in the private home)
_LOCK = threading.Lock()
MAX_CREDENTIAL_BYTES = 1024 * 1024
MAX_FILES = 64
# Fields that say when a credential expires or was issued: a bigger value is a newer credential.
TIME_KEYS = frozenset(
    ("expiresat", "expires_at", "expires", "expiry", "expiry_date", "exp", "last_refresh", "issued_at", "iat")
)


def link_credential(work_dir: Path, source: Path, target: Path) -> bool:
    """Symlink the user's credential ``source`` to ``target`` in a private home under ``work_dir``,
    and record the link so :func:`save_refreshed` checks it after the attempt. False when absent."""
    if not link_if_exists(source, target):
        return False
    with _LOCK:
        _LINKS.setdefault(str(work_dir), []).append((source, target))
    return True


def _read_json(path: Path) -> Any:
    with path.open("rb") as fh:
        raw = fh.read(MAX_CREDENTIAL_BYTES + 1)
    if len(raw) > MAX_CREDENTIAL_BYTES:
        raise ValueError("larger than a credential")
    return json.loads(raw)


def _times(value: Any, out: dict[str, float], depth: int = 0) -> dict[str, float]:
    """Every expiry/issue time in ``value`` by dotted path (numbers, or ISO-like strings compared as text)."""
    if depth > 4 or not isinstance(value, dict):
        return out
    for key, sub in value.items():
        if isinstance(sub, dict):
            inner = _times(sub, {}, depth + 1)
            out.update({f"{key}.{k}": v for k, v in inner.items()})
        elif str(key).lower() in TIME_KEYS:
            if isinstance(sub, (int, float)) and not isinstance(sub, bool):
                out[str(key)] = float(sub)
            elif isinstance(sub, str) and sub:
                out[str(key)] = _text_time(sub)
    return out


def _text_time(text: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("nan")


def why_not_newer(old: Any, new: Any) -> str | None:
    """Why ``new`` is not a valid newer credential of the same kind as ``old``; None when it is."""
    if not isinstance(new, dict) or not new:
        return "it is not a JSON object"
    if isinstance(old, dict) and old and not set(old) & set(new):
        return "it is another kind of credential (no top-level key in common with yours)"
    if new == old:
        return "unchanged"
    old_times, new_times = _times(old, {}), _times(new, {})
    for key in set(old_times) & set(new_times):
        if new_times[key] < old_times[key]:
            return f"it is older than yours ({key})"
    return None


def _save_file(source: Path, replaced: Path) -> str | None:
    """Copy ``replaced`` (a file the CLI wrote in place of its link) over ``source``; a note when not saved."""
    if replaced.is_symlink() or not replaced.is_file():
        return f"{replaced.name} was replaced by something other than a file"
    try:
        new_bytes = replaced.read_bytes()[: MAX_CREDENTIAL_BYTES + 1]
        new = json.loads(new_bytes) if len(new_bytes) <= MAX_CREDENTIAL_BYTES else None
    except (OSError, ValueError):
        new = None
    real = source.resolve()
    try:
        old = _read_json(real)
    except (OSError, ValueError):
        old = None
    why = why_not_newer(old, new)
    if why == "unchanged":
        return None
    if why:
        return f"a refreshed {replaced.name} was not saved to {source}: {why}"
    try:
        atomic_write_bytes(real, new_bytes, mode=0o600)
    except OSError as exc:
        return f"a refreshed {replaced.name} could not be saved to {source}: {exc.strerror or exc}"
    return None


def save_refreshed(work_dir: Path) -> list[str]:
    """After an attempt: save every credential the CLI refreshed by replacing its link (see the module
    docstring); return a note for each one that could not be saved."""
    notes: list[str] = []
    with _LOCK:
        links = _LINKS.pop(str(work_dir), [])
    for source, target in links:
        try:
            if target.is_symlink() and os.readlink(target) == str(source):
                continue
            if not target.exists() and not target.is_symlink():
                notes.append(f"the linked credential {target.name} was removed by the CLI; {source} is unchanged")
            elif target.is_dir() and not target.is_symlink():
                for entry in sorted(target.iterdir())[:MAX_FILES]:
                    if entry.is_symlink() or not entry.is_file():
                        continue
                    if not (source / entry.name).exists():
                        notes.append(f"a new credential {entry.name} was not saved to {source}: yours has no such file")
                        continue
                    note = _save_file(source / entry.name, entry)
                    notes += [note] if note else []
            else:
                note = _save_file(source, target)
                notes += [note] if note else []
        except OSError as exc:
            notes.append(f"the linked credential {target.name} could not be checked: {exc.strerror or exc}")
    return notes
