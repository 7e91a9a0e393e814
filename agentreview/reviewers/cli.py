"""Finding a reviewer's CLI and probing its ``--help`` for the flags isolation needs.

A missing *required* flag makes the provider unavailable (so the lane may fall back), never the CLI
run less isolated than intended. Probes get the basics only and a throwaway ``HOME``.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from agentreview.host.procs.group import ProcessResult, run_process_group
from agentreview.host.programs import find_program
from agentreview.model.contracts.reviewers import PresetSpec, ProviderStatus
from agentreview.model.record import record
from agentreview.reviewers.env import reviewer_env

# Generous: a Node CLI can be slow to answer on a loaded machine, and the answer is shared per binary.
PROBE_TIMEOUT_S = 60.0
PROBE_CACHE_SIZE = 64
PROBE_KILL_GRACE_S = 1.0


def _tail(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else "…" + text[-limit:]


def find_binary(spec: PresetSpec | None, default: str) -> str | None:
    """The CLI to run, as an absolute path: a preset's ``binary`` option (a relative path is taken
    from the current folder, not the reviewed repository the CLI runs in), else ``default`` on
    the absolute PATH entries."""
    name = str(spec.options.get("binary")) if spec and spec.options.get("binary") else default
    if os.sep in name:
        return os.path.abspath(name) if os.access(name, os.X_OK) and Path(name).is_file() else None
    return find_program(name)


def _probe(argv: tuple[str, ...]) -> ProcessResult:
    with tempfile.TemporaryDirectory(prefix="agentreview-probe-") as home:
        return run_process_group(
            argv,
            cwd="/",
            env=reviewer_env({"NO_COLOR": "1", "HOME": home}),
            deadline=time.monotonic() + PROBE_TIMEOUT_S,
            kill_grace_s=PROBE_KILL_GRACE_S,
        )


# One lock per probe: lanes starting together wait for one probe instead of each starting the CLI
# (a Node CLI started by every lane at once can outlast the probe timeout on a loaded machine).
_probe_locks: dict[tuple[str, ...], threading.Lock] = {}
_probe_locks_guard = threading.Lock()
# The answers, while the binary is unchanged (its mtime and size). A probe that timed out is not kept:
# a moment of load must not make a CLI unusable for the rest of a long-lived process (the MCP server).
_probe_answers: dict[tuple[str, ...], tuple[tuple[int, int], ProcessResult]] = {}


def probe(binary: str, *args: str) -> ProcessResult:
    """Run ``binary args`` (``--help``, ``--version``), cached while the binary is unchanged."""
    try:
        st = os.stat(binary)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    argv = (binary, *args)
    with _probe_locks_guard:
        lock = _probe_locks.setdefault(argv, threading.Lock())
    with lock:
        kept = _probe_answers.get(argv)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        answer = _probe(argv)
        if not answer.timed_out:
            if len(_probe_answers) >= PROBE_CACHE_SIZE:
                _probe_answers.clear()
            _probe_answers[argv] = (stamp, answer)
        return answer


def help_lists(help_text: str, flags: Iterable[str]) -> list[str]:
    """The flags of ``flags`` that ``help_text`` does not mention."""
    return [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text)]


@record
class CliInfo:
    """A found and probed CLI."""

    binary: str
    version: str | None
    help_text: str

    def lacks(self, flags: Iterable[str]) -> list[str]:
        """The flags of ``flags`` its help does not list."""
        return help_lists(self.help_text, flags)

    def offers(self, flag: str) -> bool:
        """Whether its help lists ``flag`` (use an optional flag only then)."""
        return not help_lists(self.help_text, [flag])


def cli_info(spec: PresetSpec | None, default: str, help_args: tuple[str, ...]) -> CliInfo | str:
    """Find and probe the CLI; return its info, or the reason it is not usable."""
    binary = find_binary(spec, default)
    if binary is None:
        where = spec.options.get("binary") if spec and spec.options.get("binary") else f"'{default}' on PATH"
        return f'{default} CLI not found ({where}); install it or set binary = "/path" in the preset'
    ver = probe(binary, "--version")
    if ver.spawn_error or ver.timed_out or ver.returncode != 0:
        why = ver.spawn_error or (
            f"no answer within {PROBE_TIMEOUT_S:.0f} s"
            if ver.timed_out
            else f"exit {ver.returncode}: {_tail(ver.stderr_text(), 200)}"
        )
        return f"{binary} --version failed: {why}"
    version = (ver.stdout_text().strip().splitlines() or [""])[0].strip() or None
    helped = probe(binary, *help_args)
    text = helped.stdout_text() + helped.stderr_text()
    if helped.timed_out:
        return f"{binary} {' '.join(help_args)} did not answer within {PROBE_TIMEOUT_S:.0f} s (an overloaded machine?)"
    if helped.spawn_error or not text.strip():
        return f"{binary} {' '.join(help_args)} printed no help"
    return CliInfo(binary=binary, version=version, help_text=text)


def status_from(info: CliInfo | str, required: Iterable[str]) -> ProviderStatus:
    """What ``agentreview presets`` shows for a CLI provider."""
    if isinstance(info, str):
        return ProviderStatus(installed="not found" not in info, usable=False, detail=info)
    missing = info.lacks(required)
    if missing:
        return ProviderStatus(
            installed=True, usable=False, version=info.version, detail="help lacks required flags: " + " ".join(missing)
        )
    return ProviderStatus(installed=True, usable=True, version=info.version, detail=info.binary)
