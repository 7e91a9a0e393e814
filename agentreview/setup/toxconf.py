"""What a repository's tox configuration needs: its default environments, their interpreters, its plugins.

Read from the files, never by running tox: tox lacking them skips every environment and exits 0, testing nothing.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from agentreview.model.record import record
from agentreview.setup.detect import toml_of

__all__ = ["ToxConfig", "expand_envs", "interpreter_of", "normalize_name", "read_tox_config"]

# py312, py3.12, py3, pypy3.11, py314t: a factor that names the interpreter of an environment
_PY_FACTOR = re.compile(r"^(py|pypy)(\d)(?:\.?(\d+))?(t?)\Z")
_BARE_VERSION = re.compile(r"^(\d)\.(\d+)(t?)\Z")  # tox 4's "3.12"
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# runners that a plugin provides, and the plugin (a distribution name) that provides them
_RUNNER_PLUGINS = {"uv-venv-runner": "tox-uv", "uv-venv-lock-runner": "tox-uv", "uv-venv-pep-517": "tox-uv"}


@record
class ToxConfig:
    """``envs``: the environments a bare ``tox`` runs; ``plugins``: distributions it needs besides
    tox (``requires`` and the runners' plugins), normalized; ``interpreters``: env -> the interpreter
    it needs (``None``: the one tox runs in); ``commands``: what the run environments run, as written."""

    source: str
    envs: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    interpreters: dict[str, str | None] = field(default_factory=dict)
    commands: tuple[str, ...] = ()


def normalize_name(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def expand_envs(text: str) -> list[str]:
    """Environment names of an ``env_list`` value: separated by commas or lines, ``{a,b}`` expanded."""
    out: list[str] = []
    depth, item = 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        if ch in ",\n" and depth == 0:
            out += _braces(item.strip())
            item = ""
        else:
            item += ch
    out += _braces(item.strip())
    return [env for env in out if env and not env.startswith("#")]


def _braces(item: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", item)
    if not match:
        return [item] if item else []
    head, tail = item[: match.start()], item[match.end() :]
    return [env for part in match.group(1).split(",") for env in _braces(f"{head}{part.strip()}{tail}")]


def interpreter_of(env: str, base_python: str | None = None) -> str | None:
    """The interpreter ``env`` needs (``python3.12``, ``pypy3.11``), or None: tox's own."""
    if base_python:
        return base_python.strip().split()[0]
    for factor in env.split("-"):
        bare = _BARE_VERSION.match(factor)
        if bare:
            return f"python{bare.group(1)}.{bare.group(2)}{bare.group(3)}"
        found = _PY_FACTOR.match(factor)
        if found:
            impl, major, minor, threaded = found.groups()
            name = "python" if impl == "py" else "pypy"
            return f"{name}{major}.{minor}{threaded}" if minor else f"{name}{major}"
    return None


def _plugin_names(requires: list[str], runners: list[str]) -> tuple[str, ...]:
    names = {normalize_name(m.group(1)) for r in requires if (m := _REQUIREMENT_NAME.match(r))}
    names |= {_RUNNER_PLUGINS[r] for r in runners if r in _RUNNER_PLUGINS}
    names.discard("tox")
    return tuple(sorted(names))


def _from_ini(text: str, source: str, tox_section: str, env_prefix: str) -> ToxConfig | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    if not parser.has_section(tox_section):
        return None

    def get(section: str, *keys: str) -> str:
        for key in keys:
            if parser.has_option(section, key):
                return parser.get(section, key)
        return ""

    envs = expand_envs(get(tox_section, "env_list", "envlist")) or ["py"]
    base = env_prefix.rstrip(":")
    requires = [line for line in get(tox_section, "requires").splitlines() if line.strip()]
    runners: list[str] = []
    interpreters: dict[str, str | None] = {}
    for env in envs:
        own = f"{env_prefix}{env}"  # a missing section or option reads as ""
        runner = get(own, "runner") or get(base, "runner")
        runners += [runner] if runner else []
        interpreters[env] = interpreter_of(env, get(own, "base_python", "basepython") or None)
    commands = [c.strip() for c in get(base, "commands").splitlines() if c.strip()]
    return ToxConfig(source, tuple(envs), _plugin_names(requires, runners), interpreters, tuple(commands))


def _words(command: Any) -> str:
    if isinstance(command, list):
        return " ".join(w if isinstance(w, str) else "{…}" for w in command)
    return str(command)


def _from_toml(data: dict[str, Any], source: str) -> ToxConfig:
    raw_envs = data.get("env_list", [])
    envs = [e for e in raw_envs if isinstance(e, str)] if isinstance(raw_envs, list) else []
    envs = envs or ["py"]
    base = data.get("env_run_base", {}) if isinstance(data.get("env_run_base"), dict) else {}
    per_env = data.get("env", {}) if isinstance(data.get("env"), dict) else {}
    requires = [r for r in data.get("requires", []) or [] if isinstance(r, str)]
    runners: list[str] = []
    interpreters: dict[str, str | None] = {}
    for env in envs:
        own = per_env.get(env, {}) if isinstance(per_env.get(env), dict) else {}
        runner = own.get("runner", base.get("runner"))
        runners += [runner] if isinstance(runner, str) else []
        explicit = own.get("base_python")
        explicit = explicit[0] if isinstance(explicit, list) and explicit else explicit
        interpreters[env] = interpreter_of(env, explicit if isinstance(explicit, str) else None)
    commands = base.get("commands", [])
    shown = tuple(_words(c) for c in commands) if isinstance(commands, list) else ()
    return ToxConfig(source, tuple(envs), _plugin_names(requires, runners), interpreters, shown)


def read_tox_config(root: Path, text_of: Callable[[Path], str | None]) -> ToxConfig | None:
    """The tox configuration of ``root`` in tox's own order of files, or None when there is none."""
    ini = text_of(root / "tox.ini")
    if ini is not None:
        return _from_ini(ini, "tox.ini", "tox", "testenv:") or ToxConfig("tox.ini", ("py",), (), {"py": None})
    toml_text = text_of(root / "tox.toml")
    if toml_text is not None:
        try:
            return _from_toml(tomllib.loads(toml_text), "tox.toml")
        except tomllib.TOMLDecodeError:
            return ToxConfig("tox.toml", ("py",), (), {"py": None})
    pyproject = text_of(root / "pyproject.toml")
    if pyproject is not None:
        tool = toml_of(pyproject).get("tool", {})
        tox = tool.get("tox") if isinstance(tool, dict) else None
        if isinstance(tox, dict):
            legacy = tox.get("legacy_tox_ini")
            if isinstance(legacy, str):
                return _from_ini(legacy, "pyproject.toml", "tox", "testenv:") or ToxConfig(
                    "pyproject.toml", ("py",), (), {"py": None}
                )
            return _from_toml(tox, "pyproject.toml")
    setup_cfg = text_of(root / "setup.cfg")
    if setup_cfg is not None and "[tox:tox]" in setup_cfg:
        return _from_ini(setup_cfg, "setup.cfg", "tox:tox", "testenv:")
    return None
