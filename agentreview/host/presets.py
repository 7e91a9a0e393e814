"""Host-local reviewer presets: which provider, model and options a preset name means.

A preset is never read from the reviewed repository, so a change cannot choose its own reviewer. Built-ins
are one per registered provider; user presets come from ``$AGENTREVIEW_HOME/presets.toml``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentreview.model.contracts.reviewers import PresetSpec, ReviewerProvider
from agentreview.model.errors import AgentreviewError

PRESETS_FILE = "presets.toml"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def presets_path(home: Path) -> Path:
    return home / PRESETS_FILE


def _fail(path: Path, table: str, message: str) -> AgentreviewError:
    return AgentreviewError(f"{path}: [{table}]: {message}")


def _check_options(
    path: Path, table: str, provider_name: str, provider: ReviewerProvider | None, options: Mapping[str, Any]
) -> None:
    """Ask the preset's provider whether it understands ``options``; raise its first problem."""
    validate = getattr(provider, "validate_options", None)
    if validate is None:
        return
    try:
        problems = [str(problem) for problem in validate(dict(options))]
    except Exception as exc:  # a provider's bug: the options went unchecked, so the preset is refused
        raise _fail(
            path, table, f"provider '{provider_name}' could not check these options: {type(exc).__name__}: {exc}"
        ) from exc
    if problems:
        raise _fail(path, table, problems[0])


def _user_presets(path: Path, providers: Mapping[str, ReviewerProvider]) -> dict[str, PresetSpec]:
    from agentreview.host.files import MissingFileError, read_regular_file

    try:  # a FIFO or device in place of the file is refused, never waited on
        data = tomllib.loads(read_regular_file(path).decode("utf-8"))
    except MissingFileError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AgentreviewError(f"{path}: cannot read presets: {exc} — fix or remove the file") from exc
    unknown = sorted(set(data) - {"presets"})
    if unknown:
        raise AgentreviewError(f"{path}: unknown top-level key {unknown[0]!r} — presets go in [presets.<name>] tables")
    tables = data.get("presets", {})
    if not isinstance(tables, dict):
        raise AgentreviewError(f"{path}: 'presets' must be a table of [presets.<name>] tables")
    found: dict[str, PresetSpec] = {}
    for name, table in tables.items():
        where = f"presets.{name}"
        if not NAME.match(name):
            raise _fail(path, where, "a preset name is letters, digits, '.', '_' or '-' (at most 64 characters)")
        if not isinstance(table, dict):
            raise _fail(path, where, 'must be a table with provider = "<provider>"')
        provider = table.get("provider")
        if not isinstance(provider, str) or not provider:
            raise _fail(path, where, 'provider is required, e.g. provider = "claude" or provider = "exec"')
        model = table.get("model")
        if model is not None and (not isinstance(model, str) or not model):
            raise _fail(path, where, "model must be a non-empty string")
        options = {k: v for k, v in table.items() if k not in ("provider", "model")}
        _check_options(path, where, provider, providers.get(provider), options)
        found[name] = PresetSpec(name=name, provider=provider, model=model, options=options)
    return found


def load_presets(home: Path, providers: Mapping[str, ReviewerProvider]) -> dict[str, PresetSpec]:
    """Built-in presets for the registered ``providers`` plus the user presets of ``home``, each checked by
    its provider; raises :class:`~agentreview.model.errors.AgentreviewError` naming a bad entry."""
    presets = {name: PresetSpec(name=name, provider=name, builtin=True) for name in sorted(providers)}
    presets.update(_user_presets(presets_path(home), providers))
    return presets
