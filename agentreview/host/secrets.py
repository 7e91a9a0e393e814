"""The variables the host keeps for itself: no lane's process inherits them.

A lane runs the change author's code, which would read a host token and could carry it into the signed export.
:data:`HOST_ENV` lists the host's own; ``config.toml`` adds ``[lanes] withhold_env`` and the owner's ``pass_env``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentreview.model.errors import AgentreviewError

# What agentreview itself reads as a GitHub credential (agentreview.pr.github.token), and what the
# ``gh`` it may ask reads for another host.
HOST_ENV = ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def _names(section: Mapping[str, Any], key: str, config_file: Path) -> frozenset[str]:
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(n, str) and ENV_NAME.match(n) for n in value):
        raise AgentreviewError(
            f'{config_file}: [lanes].{key} must be an array of variable names, e.g. ["DEPLOY_KEY"] — fix it'
        )
    return frozenset(value)


def withheld_names(home: Path | None = None) -> frozenset[str]:
    """:data:`HOST_ENV` plus ``[lanes].withhold_env``, minus ``[lanes].pass_env``; a bad ``[lanes]``
    table is one line naming config.toml, the field and the fix. A config.toml that cannot be read
    at all (a FIFO planted there; signing says so) withholds :data:`HOST_ENV` and grants nothing."""
    from agentreview.host.home import home_dir, load_config

    home = home or home_dir()
    config_file = home / "config.toml"
    try:
        config = load_config(home)
    except AgentreviewError:
        return frozenset(HOST_ENV)
    lanes = config.get("lanes", {})
    if not isinstance(lanes, dict):
        raise AgentreviewError(f"{config_file}: [lanes] must be a table — fix it")
    unknown = sorted(set(lanes) - {"withhold_env", "pass_env"})
    if unknown:
        raise AgentreviewError(
            f"{config_file}: [lanes] has unknown key {unknown[0]!r} (known: withhold_env, pass_env) — fix it"
        )
    withhold = _names(lanes, "withhold_env", config_file)
    granted = _names(lanes, "pass_env", config_file)
    return (frozenset(HOST_ENV) | withhold) - granted


def lane_env(withheld: frozenset[str] | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default this process's) without the ``withheld`` names (default :func:`withheld_names`)."""
    names = withheld_names() if withheld is None else withheld
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items() if name not in names}
