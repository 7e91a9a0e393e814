"""What every built-in provider shares: finding its CLI, probing its ``--help`` for the
flags it needs, building a private home per attempt, and an allow-listed environment.

Flags are enabled only when the installed CLI's help lists them (wrapper contract):
a missing *required* flag makes the provider unavailable (``capability_missing``, so
the lane may fall back) instead of running the CLI less isolated than intended.

A reviewer reads what the change's author wrote, so a prompt injection may steer it:
it gets no host variable it was not granted (AIP-62 Security considerations: no
credentials beyond the model). The grant is :data:`BASE_ENV`, the provider's own model
variables, and the names a user preset lists in ``env``; everything else — tokens,
``AWS_*``, ``SSH_AUTH_SOCK``, ``GIT_*``, ``LD_PRELOAD``, ``NODE_OPTIONS``,
``AGENTREVIEW_*`` — stays behind.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentreview.api import PresetSpec, ProviderStatus, ReviewerRequest, ReviewerResult
from agentreview_agent.answer import record_answer
from agentreview_agent.proc import ProcResult, run_in_group

PROBE_TIMEOUT_S = 20.0

# What any CLI needs to run and to reach its model through the host's proxy and CA bundle. ``NAME_*`` is a family.
# None of these is a credential beyond the proxy URL the model traffic itself goes through.
BASE_ENV = (
    "PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
)  # fmt: skip

# Variables that would point a CLI back at the user's own configuration or widen it. The providers set the
# private-home ones themselves; a preset's ``env`` may name none of them.
REDIRECTING_ENV = (
    "HOME",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_SAFE_MODE",
    "CODEX_HOME",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_PERMISSION",
    "KIMI_CODE_HOME",
    "KIMI_SHARE_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def tail(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else "…" + text[-limit:]


def clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _granted(name: str, allow: Iterable[str]) -> bool:
    return any(name.startswith(entry[:-1]) if entry.endswith("*") else name == entry for entry in allow)


def safe_path(value: str) -> str:
    """``PATH`` without empty or relative entries: a reviewer runs in the reviewed repository, where such
    an entry would run the change author's ``./git`` or ``./node`` in place of the real one."""
    return os.pathsep.join(entry for entry in value.split(os.pathsep) if os.path.isabs(entry))


def child_env(extra: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """The host variables :data:`BASE_ENV` and ``allow`` grant (``PATH`` made safe), plus ``extra``."""
    granted = (*BASE_ENV, *allow)
    env = {name: value for name, value in os.environ.items() if _granted(name, granted)}
    if "PATH" in env:
        env["PATH"] = safe_path(env["PATH"])
    env.update(extra)
    return env


def env_names_problem(names: Any, preset: str, option: str = "env") -> str | None:
    """Why ``names`` (a preset's list of host variables to pass on) cannot be granted; ``None`` when it can."""
    where = f"[presets.{preset}] in presets.toml"
    if not isinstance(names, (list, tuple)):
        return f"preset '{preset}': {option} must be an array of variable names, e.g. [\"MY_GATEWAY_KEY\"], in {where}"
    for name in names:
        if not isinstance(name, str) or not ENV_NAME.match(name):
            return (
                f"preset '{preset}': {option} entry {clip(repr(name), 60)} is not a variable name "
                f"(letters, digits and '_'; no wildcards) — fix it in {where}"
            )
        if name in REDIRECTING_ENV or name.startswith("AGENTREVIEW_"):
            return (
                f"preset '{preset}': {option} may not name {name}: it points the reviewer at a home or configuration "
                f"other than its private one (or is agentreview's own), undoing its isolation — remove it from {where}"
            )
    return None


def preset_env(spec: PresetSpec) -> tuple[str, ...] | str:
    """The host variables a preset grants its reviewer (its ``env`` option), or why they cannot be granted."""
    names = spec.options.get("env", [])
    problem = env_names_problem(names, spec.name)
    return problem if problem else tuple(names)


def find_binary(spec: PresetSpec | None, default: str) -> str | None:
    """The CLI to run: a preset's ``binary`` option, else ``default`` on PATH."""
    name = str(spec.options.get("binary")) if spec and spec.options.get("binary") else default
    if os.sep in name:
        return name if os.access(name, os.X_OK) and Path(name).is_file() else None
    return shutil.which(name, path=safe_path(os.environ.get("PATH", os.defpath)))


def _probe(argv: tuple[str, ...]) -> ProcResult:
    with tempfile.TemporaryDirectory(prefix="agentreview-probe-") as home:
        return run_in_group(
            argv,
            cwd=Path("/"),
            env=child_env({"NO_COLOR": "1", "HOME": home}),
            deadline=time.monotonic() + PROBE_TIMEOUT_S,
            cancel=threading.Event(),
            kill_grace_s=1.0,
        )


@lru_cache(maxsize=64)
def _probe_cached(argv: tuple[str, ...], stamp: tuple[int, int]) -> ProcResult:
    return _probe(argv)


def probe(binary: str, *args: str) -> ProcResult:
    """Run ``binary args`` (``--help``, ``--version``), cached while the binary is unchanged."""
    try:
        st = os.stat(binary)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    return _probe_cached((binary, *args), stamp)


def help_lists(help_text: str, flags: Iterable[str]) -> list[str]:
    """The flags of ``flags`` that ``help_text`` does not mention."""
    return [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text)]


@dataclass(frozen=True)
class CliInfo:
    binary: str
    version: str | None
    help_text: str


def cli_info(spec: PresetSpec | None, default: str, help_args: tuple[str, ...]) -> CliInfo | str:
    """Find and probe the CLI; return its info, or the reason it is not usable."""
    binary = find_binary(spec, default)
    if binary is None:
        where = spec.options.get("binary") if spec and spec.options.get("binary") else f"'{default}' on PATH"
        return f'{default} CLI not found ({where}); install it or set binary = "/path" in the preset'
    ver = probe(binary, "--version")
    if ver.spawn_error or ver.timed_out or ver.rc != 0:
        why = ver.spawn_error or ("timed out" if ver.timed_out else f"exit {ver.rc}: {tail(ver.stderr_text(), 200)}")
        return f"{binary} --version failed: {why}"
    version = (ver.stdout_text().strip().splitlines() or [""])[0].strip() or None
    helped = probe(binary, *help_args)
    text = helped.stdout_text() + helped.stderr_text()
    if helped.spawn_error or helped.timed_out or not text.strip():
        return f"{binary} {' '.join(help_args)} printed no help"
    return CliInfo(binary=binary, version=version, help_text=text)


def status_from(info: CliInfo | str, required: Iterable[str]) -> ProviderStatus:
    if isinstance(info, str):
        return ProviderStatus(installed="not found" not in info, usable=False, detail=info)
    missing = help_lists(info.help_text, required)
    if missing:
        return ProviderStatus(
            installed=True, usable=False, version=info.version, detail="help lacks required flags: " + " ".join(missing)
        )
    return ProviderStatus(installed=True, usable=True, version=info.version, detail=info.binary)


def capability_missing(name: str, info: CliInfo, missing: list[str]) -> ReviewerResult:
    return ReviewerResult(
        "unavailable",
        f"{name} {info.version or ''}".rstrip() + " cannot run isolated: its help lacks " + " ".join(missing),
    )


class CliProvider(ABC):
    """A provider that drives one installed CLI: ``status()``, and a ``review()`` that runs
    the CLI only once it is found and its help lists every flag isolation needs.

    Subclasses name the CLI (``binary``, overridable per preset), the arguments that print
    the help listing its flags, the flags without which it cannot run isolated, the host
    variables that give it model access (``model_env``), and implement :meth:`review_with`.
    """

    name: str
    binary: str
    help_args: tuple[str, ...]
    required_flags: tuple[str, ...]
    model_env: tuple[str, ...] = ()

    def status(self) -> ProviderStatus:
        return status_from(cli_info(None, self.binary, self.help_args), self.required_flags)

    def allowed_env(self, request: ReviewerRequest) -> tuple[str, ...] | str:
        """The host variables this reviewer may see beyond :data:`BASE_ENV`, or why the preset cannot grant them."""
        granted = preset_env(request.preset)
        return granted if isinstance(granted, str) else (*self.model_env, *granted)

    def review(self, request: ReviewerRequest) -> ReviewerResult:
        allow = self.allowed_env(request)
        if isinstance(allow, str):
            return ReviewerResult("unavailable", allow)
        info = cli_info(request.preset, self.binary, self.help_args)
        if isinstance(info, str):
            return ReviewerResult("unavailable", info)
        missing = help_lists(info.help_text, self.required_flags)
        if missing:
            return capability_missing(self.name, info, missing)
        home = fresh_dir(request.work_dir / "home")
        return self.review_with(info, request, child_env({**request_env(request), "HOME": str(home)}, allow))

    @abstractmethod
    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        """Run the probed CLI ``info`` as the reviewer of ``request``, in ``env`` (the allow-listed
        environment with an empty private ``HOME``) plus the provider's own private-home variables."""


def remove_path(path: Path) -> None:
    """Remove whatever is at ``path`` (a symlink itself, never its target)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def fresh_dir(path: Path) -> Path:
    """An empty private directory (0700), replacing anything left at ``path``."""
    remove_path(path)
    path.mkdir(parents=True, mode=0o700)
    return path


def link_if_exists(source: Path, target: Path) -> bool:
    """Symlink a credential into a private home (linked, never copied, so token refresh is kept)."""
    if not source.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(source)
    return True


def user_home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def user_dir(variable: str, *default: str) -> Path:
    """Where the user's own CLI keeps its credentials: ``$variable`` when set, else ``~/<default>``."""
    value = os.environ.get(variable)
    return Path(value) if value else user_home().joinpath(*default)


def ended_abnormally(name: str, proc: ProcResult) -> ReviewerResult | None:
    """The result for a spawn failure, timeout or cancel; ``None`` when the process just exited."""
    if proc.spawn_error:
        return ReviewerResult("unavailable", f"reviewer spawn failed: {proc.spawn_error}")
    if proc.timed_out:
        return ReviewerResult("timeout", f"{name} exceeded the lane deadline and was killed")
    if proc.cancelled:
        return ReviewerResult("cancelled", "review cancelled while the reviewer was running")
    return None


def stream_end(
    name: str, corrupt: str | None, breach: list[str], proc: ProcResult, **ids: str | None
) -> ReviewerResult | None:
    """What an audited run ended in before its answer counts: an unauditable stream or a breach
    (``boundary_violation``, terminal) outranks a spawn failure, timeout or cancel; ``None`` otherwise."""
    if corrupt:
        return ReviewerResult("boundary_violation", f"{name}'s event stream cannot be audited: {corrupt}", **ids)
    if breach:
        return ReviewerResult("boundary_violation", "; ".join(dict.fromkeys(breach)), **ids)
    abnormal = ended_abnormally(name, proc)
    if abnormal:
        return ReviewerResult(abnormal.end, abnormal.error, **ids)
    return None


def answered(answer: Any, verdict_path: Path, who: str, **ids: str | None) -> ReviewerResult:
    """``verdict`` once the final answer is written as the verdict file, else why it could not be."""
    recorded = record_answer(answer, verdict_path, who=who)
    if recorded is not None:
        return ReviewerResult(recorded.end, recorded.error, **ids)
    return ReviewerResult("verdict", **ids)


def request_env(request: ReviewerRequest) -> dict[str, str]:
    """The facts of the lane every reviewer may read from its environment."""
    return {
        "AGENTREVIEW_BASE": request.base_sha,
        "AGENTREVIEW_HEAD": request.head_sha,
        "AGENTREVIEW_RUBRIC": str(request.rubric_path),
        "AGENTREVIEW_CHECK_ID": request.check_id,
    }
