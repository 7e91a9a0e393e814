"""Running git against an untrusted remote: a scrubbed environment, hardened config, a hard deadline.

No hook, credential helper, URL rewrite or other protocol of the user's configuration reaches the
fetch (only the CA settings); on timeout the whole process group is killed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

# -c options placed before every git subcommand that may touch the remote or the object store.
HARDENING: tuple[str, ...] = (
    "-c", "protocol.allow=never",
    "-c", "protocol.https.allow=always",
    "-c", "core.hooksPath=/dev/null",
    "-c", "credential.helper=",
    "-c", "core.askPass=",
    "-c", "core.fsmonitor=false",
    "-c", "submodule.recurse=false",
    "-c", "fetch.recurseSubmodules=false",
    "-c", "transfer.fsckObjects=true",
    "-c", "http.followRedirects=initial",
)  # fmt: skip

_KEEP_GIT_VARS = ("GIT_SSL_CAINFO", "GIT_SSL_CAPATH")
MISSING_GIT = "git is not installed: no executable 'git' in an absolute PATH entry — install git"


class GitRunError(Exception):
    """A git step failed or ran out of time; the message carries git's last line."""

    def __init__(self, message: str, *, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


def git_executable() -> str | None:
    """git's absolute path on the absolute PATH entries, the one every git process of the loader
    starts (an empty or relative entry would name a folder relative to the working directory)."""
    from agentreview.api import find_program

    return find_program("git")


def safe_env(ca_overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for every git call: no inherited GIT_* (a hook's GIT_DIR would redirect us),
    no system or global config, https only, never a prompt, no LFS smudge."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "SSH_ASKPASS"}
    for key in _KEEP_GIT_VARS:
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(ca_overrides or {})
    env.update(
        {
            "GIT_ALLOW_PROTOCOL": "https",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_ASKPASS": "",
            "LC_ALL": "C",
        }
    )
    return env


def user_ca_settings(cwd: Path, timeout: float) -> dict[str, str]:
    """``http.sslCAInfo`` / ``http.sslCAPath`` from the user's own config, carried over as the
    equivalent environment variables (the rest of that config is ignored on purpose)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES")}
    git = git_executable()
    if git is None:
        return {}  # the fetch that follows says git is missing
    from agentreview.api import run_process_group

    argv = [git, "config", "--get-regexp", r"^http\.sslca(info|path)$"]
    proc = run_process_group(argv, cwd=cwd, env=env, deadline=time.monotonic() + timeout, kill_grace_s=0)
    found: dict[str, str] = {}  # nothing when git could not start or ran out of time
    for line in proc.stdout_text().splitlines() if proc.returncode == 0 else []:
        key, _, value = line.partition(" ")
        if key.lower() == "http.sslcainfo" and value:
            found["GIT_SSL_CAINFO"] = value
        elif key.lower() == "http.sslcapath" and value:
            found["GIT_SSL_CAPATH"] = value
    return found


def run_git(
    args: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    deadline: float,
) -> bytes:
    """Run ``git <HARDENING> <args>`` in ``cwd`` in its own process group, ended whole at ``deadline``;
    its stdout, or :class:`GitRunError` on a non-zero exit or on timeout."""
    from agentreview.api import run_process_group

    if deadline <= time.monotonic():
        raise GitRunError(f"git {args[0]} was not started: the time limit was already used up", timed_out=True)
    git = git_executable()
    if git is None:
        raise GitRunError(MISSING_GIT)
    proc = run_process_group([git, *HARDENING, *args], cwd=cwd, env=env, deadline=deadline, kill_grace_s=0)
    if proc.spawn_error:
        raise GitRunError(f"cannot start git ({proc.spawn_error}) — is git installed?")
    if proc.timed_out:
        raise GitRunError(f"git {args[0]} did not finish in time and was killed", timed_out=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr_text().splitlines() if ln.strip()]
        raise GitRunError(lines[-1].strip() if lines else f"git {args[0]} exited with {proc.returncode}")
    return proc.stdout
