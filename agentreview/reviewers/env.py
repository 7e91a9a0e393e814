"""What a reviewer process may see of the host's environment: an allow-list, never the host minus a few names.

A steered reviewer gets no host variable it was not granted (AIP-62: no credentials beyond the
model): :data:`BASE_ENV`, the provider's model variables and the names a user preset lists in ``env``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from agentreview.host.programs import safe_path
from agentreview.host.secrets import ENV_NAME
from agentreview.model.contracts.reviewers import PresetSpec, ReviewerRequest

# What any CLI needs to run and to reach its model through the host's proxy and CA bundle. ``NAME_*`` is a family.
# None of these is a credential beyond the proxy URL the model traffic itself goes through.
BASE_ENV = (
    "PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
)  # fmt: skip

# Variables that point any program back at the user's own home or configuration. A provider adds the ones its
# CLI reads (``ReviewerBase.redirecting_env``); a preset's ``env`` may name none of them.
REDIRECTING_ENV = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _granted(name: str, allow: Iterable[str]) -> bool:
    return any(name.startswith(entry[:-1]) if entry.endswith("*") else name == entry for entry in allow)


def reviewer_env(
    extra: Mapping[str, str], allow: Iterable[str] = (), withheld: Iterable[str] = ()
) -> dict[str, str]:
    """The host variables :data:`BASE_ENV` and ``allow`` (names, or ``PREFIX_*``) grant, plus ``extra``;
    ``PATH`` made safe, and a ``withheld`` name (the host's own variables) never, whatever grants it."""
    granted = (*BASE_ENV, *allow)
    kept = frozenset(withheld)
    env = {name: value for name, value in os.environ.items() if name not in kept and _granted(name, granted)}
    if "PATH" in env:
        # A reviewer runs in the reviewed repository, where an empty or relative entry would run
        # the change author's ``./git`` or ``./node`` in place of the real one.
        env["PATH"] = safe_path(env["PATH"])
    env.update(extra)
    return env


def env_names_problem(
    names: Any, preset: str, option: str = "env", refused: Iterable[str] = REDIRECTING_ENV
) -> str | None:
    """Why ``names`` (a preset's list of host variables to pass on) cannot be granted; ``None`` when it can.

    ``refused`` would undo the reviewer's isolation (its private home and configuration), as ``AGENTREVIEW_*``."""
    where = f"[presets.{preset}] in presets.toml"
    if not isinstance(names, (list, tuple)):
        return f"preset '{preset}': {option} must be an array of variable names, e.g. [\"MY_GATEWAY_KEY\"], in {where}"
    refused = tuple(refused)
    for name in names:
        if not isinstance(name, str) or not ENV_NAME.match(name):
            return (
                f"preset '{preset}': {option} entry {_clip(repr(name), 60)} is not a variable name "
                f"(letters, digits and '_'; no wildcards) — fix it in {where}"
            )
        if name in refused or name.startswith("AGENTREVIEW_"):
            return (
                f"preset '{preset}': {option} may not name {name}: it points the reviewer at a home or configuration "
                f"other than its private one (or is agentreview's own), undoing its isolation — remove it from {where}"
            )
    return None


def preset_env(spec: PresetSpec, refused: Iterable[str] = REDIRECTING_ENV) -> tuple[str, ...] | str:
    """The host variables a preset grants its reviewer (its ``env`` option), or why they cannot be granted."""
    names = spec.options.get("env", [])
    problem = env_names_problem(names, spec.name, refused=refused)
    return problem if problem else tuple(names)


def request_env(request: ReviewerRequest) -> dict[str, str]:
    """The facts of the lane every reviewer may read from its environment."""
    return {
        "AGENTREVIEW_BASE": request.base_sha,
        "AGENTREVIEW_HEAD": request.head_sha,
        "AGENTREVIEW_RUBRIC": str(request.rubric_path),
        "AGENTREVIEW_CHECK_ID": request.check_id,
    }
