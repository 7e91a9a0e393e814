"""The one way the host starts ``git``: hardened configuration, a scrubbed environment, a timeout.

Git runs programs its configuration names (fsmonitor, hooks, pager, diff drivers, filters, askpass), and neither
``.git/config`` nor the change's ``.gitattributes`` is ours, so :func:`run_git` switches each off; ``GIT_*``
variables other than :data:`KEEP_GIT_ENV` are dropped. docs/security.md lists the attacks.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO, Any

from agentreview.host.procs import spawn
from agentreview.host.programs import ProgramNotFoundError, program, safe_path

__all__ = ["GIT_TIMEOUT_S", "HARDENING", "KEEP_GIT_ENV", "GitError", "hardened_env", "run_git"]

GIT_TIMEOUT_S = 30.0


class GitError(Exception):
    """A git command failed, ran out of time or could not start; the message carries git's own words."""


HARDENING: tuple[str, ...] = (
    "core.fsmonitor=false",  # no fsmonitor hook on commands that read the index
    "core.hooksPath=/dev/null",  # no hook, whatever .git/hooks or the configuration holds
    "core.pager=cat",
    "core.askPass=",  # and SSH_ASKPASS is not consulted either: never a prompt
    "diff.external=",
    "log.showSignature=false",  # `git log` would otherwise run gpg.program on a signed commit
    "protocol.ext.allow=never",  # ext:: runs a command as a transport
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",  # nothing left running in the background after the demo's commits
    "maintenance.auto=false",
    "color.ui=false",
    "i18n.logOutputEncoding=UTF-8",  # what we parse is UTF-8, whatever the repository asks for
)

KEEP_GIT_ENV = frozenset(
    {
        # which repository, work tree, index and object store (set by git for hooks)
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH", "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        # which configuration files the user chose
        "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
        # who commits (the demo)
        "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
        # CA files for a lazy fetch over https
        "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
    }
)  # fmt: skip

# Diff-like commands get these right after the subcommand: no external diff program, no textconv.
_NO_DRIVERS: dict[str, tuple[str, ...]] = {
    name: ("--no-ext-diff", "--no-textconv")
    for name in ("diff", "diff-tree", "diff-index", "diff-files", "log", "show", "whatchanged")
}
_NO_DRIVERS["blame"] = ("--no-textconv",)
# Global flags a caller may put before the subcommand: they change how paths match, nothing runs.
_GLOBAL_FLAGS = frozenset(
    {"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks"}
)
_REFUSED_FLAGS = frozenset({"--textconv", "--filters", "--ext-diff"})
# Commands that may hash or write work-tree files, and so run clean/smudge/process filters.
_MAY_FILTER = frozenset(
    {
        "status", "diff", "diff-files", "diff-index", "add", "commit", "checkout", "switch", "restore",
        "reset", "stash", "update-index", "hash-object", "checkout-index", "read-tree", "apply", "blame",
        "merge", "rebase", "cherry-pick", "revert", "pull", "am", "rm", "mv", "worktree", "ls-files",
    }
)  # fmt: skip
_TRUSTED_SCOPES = frozenset({"system", "global"})
_LFS_VALUE = re.compile(r"git-lfs (?:clean|smudge)(?: --skip)? -- %f|git-lfs filter-process(?: --skip)?")


def hardened_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without the ``GIT_*`` variables outside
    :data:`KEEP_GIT_ENV` and without ``SSH_ASKPASS``, plus the no-prompt, no-pager settings;
    ``PATH`` keeps only its absolute entries."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if (not k.startswith("GIT_") or k in KEEP_GIT_ENV) and k != "SSH_ASKPASS"}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0"})
    if "PATH" in env:
        env["PATH"] = safe_path(env["PATH"])
    return env


def _options(args: Sequence[str]) -> Sequence[str]:
    """The arguments before ``--`` / ``--end-of-options`` (after those, a word is a path or a revision)."""
    for i, arg in enumerate(args):
        if arg in ("--", "--end-of-options"):
            return args[:i]
    return args


def _split(args: Sequence[str]) -> tuple[list[str], str, list[str]]:
    """``(global flags, subcommand, its arguments)``; only the flags of :data:`_GLOBAL_FLAGS` may
    precede the subcommand (``-c`` or ``--git-dir`` there would undo the hardening)."""
    i = 0
    while i < len(args) and args[i] in _GLOBAL_FLAGS:
        i += 1
    if i == len(args) or args[i].startswith("-"):
        raise GitError(
            "run_git takes the git subcommand first (pass configuration with config= and the repository as cwd)"
        )
    return list(args[:i]), args[i], list(args[i + 1 :])


def _argv(args: Sequence[str], config: Mapping[str, str] | None, filters: Sequence[str]) -> list[str]:
    flags, sub, rest = _split(args)
    refused = sorted(_REFUSED_FLAGS.intersection(_options(rest)))
    if refused:
        raise GitError(f"git {sub} {refused[0]} would run a program the repository configures; it is refused")
    argv = ["git", "--no-pager", *flags]
    for key, value in (config or {}).items():
        argv += ["-c", f"{key}={value}"]
    for option in (*HARDENING, *filters):
        argv += ["-c", option]
    return [*argv, sub, *_NO_DRIVERS.get(sub, ()), *rest]


def _filter_overrides(cwd: str, env: dict[str, str], timeout: float) -> list[str]:
    """``-c`` options that switch off every filter driver the repository's own configuration
    (not the user's global or system file) defines; empty when there is none."""
    listing = ["git", "--no-pager", "config", "-z", "--get-regexp", r"^filter\."]
    proc = _spawn([*listing[:4], "--show-scope", *listing[4:]], cwd, env, timeout)
    entries: list[tuple[str, str, str]] = []  # (scope, key, value)
    if proc.returncode == 0:
        fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        for scope, item in zip(fields[0::2], fields[1::2], strict=False):
            key, _, value = item.partition("\n")
            entries.append((scope, key, value))
    elif proc.returncode != 1:  # 1 is "no such key"; anything else: a git without --show-scope
        plain = _spawn(listing, cwd, env, timeout)
        for item in plain.stdout.decode("utf-8", "surrogateescape").split("\0"):
            key, _, value = item.partition("\n")
            entries.append(("local", key, value))
    drivers: set[str] = set()
    for scope, key, value in entries:
        name, _, var = key[len("filter.") :].rpartition(".")
        if not name or scope in _TRUSTED_SCOPES:
            continue
        if var == "required" or (var in ("clean", "smudge", "process") and _LFS_VALUE.fullmatch(value)):
            continue
        if "=" in name or "\n" in name:
            raise GitError(f"the filter driver {name!r} in the repository's configuration cannot be switched off")
        drivers.add(name)
    out: list[str] = []
    for name in sorted(drivers):
        out += [f"filter.{name}.{var}=" for var in ("clean", "smudge", "process")]
        out.append(f"filter.{name}.required=false")
    return out


def _needs_filter_guard(args: Sequence[str]) -> bool:
    _, sub, rest = _split(args)
    if sub == "ls-files":
        return bool({"-m", "--modified", "-d", "--deleted"}.intersection(_options(rest)))
    return sub in _MAY_FILTER


def _spawn(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    timeout: float,
    *,
    input_bytes: bytes | None = None,
    stdout: IO[bytes] | None = None,
    text: bool = False,
) -> subprocess.CompletedProcess[Any]:
    try:
        executable = program("git", env.get("PATH", os.defpath))  # the PATH git itself gets
    except ProgramNotFoundError as exc:
        raise GitError(str(exc)) from exc
    try:
        return spawn.run(
            [executable, *argv[1:]],
            cwd=cwd,
            input=(input_bytes.decode() if text else input_bytes) if input_bytes is not None else None,
            stdin=None if input_bytes is not None else subprocess.DEVNULL,
            stdout=stdout if stdout is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=text,
            timeout=timeout,
            env=env,
        )
    except FileNotFoundError as exc:
        raise GitError(f"git could not be started from {executable}: {exc.strerror}") from exc
    except subprocess.TimeoutExpired as exc:
        subcommand = next((a for a in argv[1:] if not a.startswith("-") and "=" not in a), "")
        raise GitError(f"git {subcommand} did not finish within {timeout:.0f}s") from exc


def run_hardened(
    args: Sequence[str],
    cwd: str | os.PathLike[str],
    *,
    timeout: float = GIT_TIMEOUT_S,
    input_bytes: bytes | None = None,
    stdout: IO[bytes] | None = None,
    env: Mapping[str, str] | None = None,
    config: Mapping[str, str] | None = None,
    text: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """``git <args>`` hardened, unchecked; ``text`` decodes the output as :func:`subprocess.run` does."""
    where = os.fspath(cwd)
    full_env = hardened_env(env)
    filters = _filter_overrides(where, full_env, timeout) if _needs_filter_guard(args) else []
    argv = _argv(args, config, filters)
    return _spawn(argv, where, full_env, timeout, input_bytes=input_bytes, stdout=stdout, text=text)


def run_git(
    args: Sequence[str],
    cwd: str | os.PathLike[str],
    *,
    timeout: float = GIT_TIMEOUT_S,
    check: bool = True,
    input_bytes: bytes | None = None,
    stdout: IO[bytes] | None = None,
    env: Mapping[str, str] | None = None,
    config: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` with the hardened configuration; return its result (bytes).

    ``env`` is the base that is then scrubbed; ``config`` adds ``-c`` options (the hardening still wins).
    Raises :class:`GitError` with git's last line when ``check`` and git fails, and always on a timeout."""
    proc: subprocess.CompletedProcess[bytes] = run_hardened(
        args, cwd, timeout=timeout, input_bytes=input_bytes, stdout=stdout, env=env, config=config
    )
    if check and proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        raise GitError(lines[-1] if lines else f"git {_split(args)[1]} exited with {proc.returncode}")
    return proc
