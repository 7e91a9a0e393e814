"""agentreview's public plugin API, the one module a plugin imports; its names keep their meaning within a major
:data:`API_VERSION` (docs/plugins.md). Each loads from its defining module on first use, so discovery stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

API_VERSION = "2.2"

# module -> the names it defines, exported lazily. ``__all__`` is made from it; the imports
# under TYPE_CHECKING at the end give type checkers the same names (a test holds them equal).
_MODULES: dict[str, str] = {
    "agentreview": "hookimpl",
    # lane executors; check kinds a plugin contributes (the model its executor declares as check_model)
    "agentreview.model.contracts.lanes": (
        "LaneExecutor LaneRequest LaneOutcome OutcomeKind ReportedFinding FallbackAttempt DeltaRange"
    ),
    "agentreview.model.check_model": "CheckModel",
    # pack loaders
    "agentreview.model.contracts.packs": "PackLoader PackLoadContext LoadedPack",
    "agentreview.model.contracts.errors": "PackLoadError PackUnavailableError SigningError SignatureInvalidError",
    "agentreview.packs.confine": "read_pack_manifest read_confined PACK_MANIFEST",
    "agentreview.model.packref": "parse_git_pack_ref GitPackRefError",
    # reviewer providers, and their base: environment allow-list, private homes, preset options, running the CLI
    "agentreview.model.contracts.reviewers": (
        "ReviewerProvider ReviewerRequest ReviewerResult ReviewerEnd ProviderStatus PresetSpec"
    ),
    "agentreview.reviewers.base": "ReviewerBase CliReviewer",
    "agentreview.reviewers.cli": "CliInfo",
    "agentreview.reviewers.options": "PresetOption",
    "agentreview.reviewers.env": "reviewer_env env_names_problem",
    "agentreview.reviewers.attempt": "attempt_dir fresh_dir remove_path link_if_exists user_dir",
    # signers
    "agentreview.model.contracts.signing": "Signer SignerContext KeyInfo",
    # files, locks, JSON, host state
    "agentreview.host.files": (
        "read_regular_file UnreadableFileError MissingFileError atomic_write_bytes atomic_write_text"
    ),
    "agentreview.host.locks": "FileLock LockTimeout",
    "agentreview.model.digests": "loads_strict sha256_hex",
    "agentreview.model.numbers": "whole_number",
    "agentreview.host.home": "home_dir pack_cache_dir load_config",
    "agentreview.host.secrets": "lane_env",
    # child processes: one process group each, bounded, killed with the host
    "agentreview.host.procs.group": "run_process_group ProcessResult",
    # git, always with the hardened configuration (no fsmonitor, hooks, external diff, textconv, filters, prompts)
    "agentreview.host.gitrun": "run_git GitError",
    # programs by absolute path, from the absolute PATH entries only (since API 2.1)
    "agentreview.host.programs": "find_program",
}
_EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = ["API_VERSION", "ApiVersionError", "require", *_EXPORTS]


class ApiVersionError(RuntimeError):
    """The installed core offers an older plugin API than the plugin needs."""


def require(version: str) -> None:
    """Raise :class:`ApiVersionError` unless this core's API is ``version`` or a later minor of it."""
    want_major, want_minor = (int(part) for part in version.split("."))
    have_major, have_minor = (int(part) for part in API_VERSION.split("."))
    if want_major != have_major or want_minor > have_minor:
        raise ApiVersionError(
            f"this plugin needs agentreview plugin API {version}; the installed core offers {API_VERSION} — "
            "upgrade agentreview or install a plugin release made for this core"
        )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentreview.api' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)


if TYPE_CHECKING:  # pragma: no cover - static names for type checkers and IDEs
    from agentreview import hookimpl
    from agentreview.host.files import (
        MissingFileError,
        UnreadableFileError,
        atomic_write_bytes,
        atomic_write_text,
        read_regular_file,
    )
    from agentreview.host.gitrun import GitError, run_git
    from agentreview.host.home import home_dir, load_config, pack_cache_dir
    from agentreview.host.locks import FileLock, LockTimeout
    from agentreview.host.procs.group import ProcessResult, run_process_group
    from agentreview.host.programs import find_program
    from agentreview.host.secrets import lane_env
    from agentreview.model.check_model import CheckModel
    from agentreview.model.contracts import (
        DeltaRange,
        FallbackAttempt,
        KeyInfo,
        LaneExecutor,
        LaneOutcome,
        LaneRequest,
        LoadedPack,
        OutcomeKind,
        PackLoadContext,
        PackLoader,
        PackLoadError,
        PackUnavailableError,
        PresetSpec,
        ProviderStatus,
        ReportedFinding,
        ReviewerEnd,
        ReviewerProvider,
        ReviewerRequest,
        ReviewerResult,
        SignatureInvalidError,
        Signer,
        SignerContext,
        SigningError,
    )
    from agentreview.model.digests import loads_strict, sha256_hex
    from agentreview.model.numbers import whole_number
    from agentreview.model.packref import GitPackRefError, parse_git_pack_ref
    from agentreview.packs.confine import PACK_MANIFEST, read_confined, read_pack_manifest
    from agentreview.reviewers.attempt import attempt_dir, fresh_dir, link_if_exists, remove_path, user_dir
    from agentreview.reviewers.base import CliReviewer, ReviewerBase
    from agentreview.reviewers.cli import CliInfo
    from agentreview.reviewers.env import env_names_problem, reviewer_env
    from agentreview.reviewers.options import PresetOption
