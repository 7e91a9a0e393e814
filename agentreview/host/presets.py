"""Host-local reviewer presets: which provider (and model, and options) a preset name means.

A preset is never read from the reviewed repository — a change under review must not
be able to choose or reconfigure its own reviewer. There are two sources:

* built-in presets, one per registered reviewer provider, named after it
  (``claude``, ``codex``, ``opencode``, ``kimi``, ...), listed even when that CLI is
  missing (the lane then reports the provider unavailable);
* user presets in ``$AGENTREVIEW_HOME/presets.toml``, one table each::

      [presets.fast-claude]
      provider = "claude"
      model = "sonnet"

      [presets.team-bot]
      provider = "exec"
      command = ["team-review", "--strict"]
      env = ["TEAM_REVIEW_TOKEN"]   # host variables the reviewer may see (default: none beyond the basics)

  Every key other than ``provider`` and ``model`` is a provider option. A user
  preset may reuse a built-in name to give it a model or options.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentreview.model.contracts import PresetSpec
from agentreview.model.errors import AgentreviewError

PRESETS_FILE = "presets.toml"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_RETRIES = 5
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def presets_path(home: Path) -> Path:
    return home / PRESETS_FILE


def _fail(path: Path, table: str, message: str) -> AgentreviewError:
    return AgentreviewError(f"{path}: [{table}]: {message}")


def _check_options(path: Path, table: str, options: Mapping[str, Any]) -> None:
    """Shape-check the options the shipped providers understand; the rest pass through."""
    if "command" in options:
        command = options["command"]
        if not (isinstance(command, list) and command and all(isinstance(part, str) and part for part in command)):
            raise _fail(path, table, 'command must be a non-empty array of non-empty strings, e.g. ["prog", "arg"]')
    if "binary" in options and not (isinstance(options["binary"], str) and options["binary"]):
        raise _fail(path, table, 'binary must be a non-empty string (a program name or "/absolute/path")')
    if "env" in options:
        env = options["env"]
        bad = [n for n in env if not (isinstance(n, str) and ENV_NAME.match(n))] if isinstance(env, list) else [env]
        if bad:
            raise _fail(
                path,
                table,
                f'env: {bad[0]!r} is not a variable name; env = ["MY_KEY"] lists host variables the reviewer may see',
            )
    if "retries" in options:
        retries = options["retries"]
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
            raise _fail(path, table, f"retries must be an integer from 0 to {MAX_RETRIES}")


def _user_presets(path: Path) -> dict[str, PresetSpec]:
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
        _check_options(path, where, options)
        found[name] = PresetSpec(name=name, provider=provider, model=model, options=options)
    return found


def load_presets(home: Path, provider_names: Iterable[str]) -> dict[str, PresetSpec]:
    """Built-in presets for ``provider_names`` plus the user presets of ``home``.

    Raises :class:`~agentreview.model.errors.AgentreviewError` naming the file and table of a
    bad entry. Never looks at the reviewed repository.
    """
    presets = {name: PresetSpec(name=name, provider=name, builtin=True) for name in sorted(provider_names)}
    presets.update(_user_presets(presets_path(home)))
    return presets
