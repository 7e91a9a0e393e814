"""agentreview's public plugin API: the one module a plugin imports.

Nothing else in ``agentreview`` is public; the names in ``__all__`` keep their meaning within a major
:data:`API_VERSION` (docs/plugins.md). Each name is loaded from its defining module on first use, so a
plugin that only registers objects stays cheap to import during discovery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

API_VERSION = "2.2"

# name -> module that defines it. One table, so ``__all__``, the lazy loader and the
# documentation cannot disagree.
_EXPORTS: dict[str, str] = {
    # the hook marker
    "hookimpl": "agentreview",
    # lane executors
    "LaneExecutor": "agentreview.model.contracts.lanes",
    "LaneRequest": "agentreview.model.contracts.lanes",
    "LaneOutcome": "agentreview.model.contracts.lanes",
    "OutcomeKind": "agentreview.model.contracts.lanes",
    "ReportedFinding": "agentreview.model.contracts.lanes",
    "FallbackAttempt": "agentreview.model.contracts.lanes",
    "DeltaRange": "agentreview.model.contracts.lanes",
    # check kinds a plugin contributes (the model its lane executor declares as check_model)
    "CheckModel": "agentreview.model.check_model",
    # pack loaders
    "PackLoader": "agentreview.model.contracts.packs",
    "PackLoadContext": "agentreview.model.contracts.packs",
    "LoadedPack": "agentreview.model.contracts.packs",
    "PackLoadError": "agentreview.model.contracts.errors",
    "PackUnavailableError": "agentreview.model.contracts.errors",
    "read_pack_manifest": "agentreview.packs.confine",
    "read_confined": "agentreview.packs.confine",
    "PACK_MANIFEST": "agentreview.packs.confine",
    "parse_git_pack_ref": "agentreview.model.packref",
    "GitPackRefError": "agentreview.model.packref",
    # reviewer providers
    "ReviewerProvider": "agentreview.model.contracts.reviewers",
    "ReviewerRequest": "agentreview.model.contracts.reviewers",
    "ReviewerResult": "agentreview.model.contracts.reviewers",
    "ReviewerEnd": "agentreview.model.contracts.reviewers",
    "ProviderStatus": "agentreview.model.contracts.reviewers",
    "PresetSpec": "agentreview.model.contracts.reviewers",
    # the reviewer-provider base: environment allow-list, private homes, preset options, running the CLI
    "ReviewerBase": "agentreview.reviewers.base",
    "CliReviewer": "agentreview.reviewers.base",
    "CliInfo": "agentreview.reviewers.cli",
    "PresetOption": "agentreview.reviewers.options",
    "reviewer_env": "agentreview.reviewers.env",
    "env_names_problem": "agentreview.reviewers.env",
    "attempt_dir": "agentreview.reviewers.attempt",
    "fresh_dir": "agentreview.reviewers.attempt",
    "remove_path": "agentreview.reviewers.attempt",
    "link_if_exists": "agentreview.reviewers.attempt",
    "user_dir": "agentreview.reviewers.attempt",
    # signers
    "Signer": "agentreview.model.contracts.signing",
    "SignerContext": "agentreview.model.contracts.signing",
    "KeyInfo": "agentreview.model.contracts.signing",
    "SigningError": "agentreview.model.contracts.errors",
    "SignatureInvalidError": "agentreview.model.contracts.errors",
    # files, locks, JSON, host state
    "read_regular_file": "agentreview.host.files",
    "UnreadableFileError": "agentreview.host.files",
    "MissingFileError": "agentreview.host.files",
    "atomic_write_bytes": "agentreview.host.files",
    "atomic_write_text": "agentreview.host.files",
    "FileLock": "agentreview.host.locks",
    "LockTimeout": "agentreview.host.locks",
    "loads_strict": "agentreview.model.digests",
    "whole_number": "agentreview.model.numbers",
    "sha256_hex": "agentreview.model.digests",
    "home_dir": "agentreview.host.home",
    "pack_cache_dir": "agentreview.host.home",
    "load_config": "agentreview.host.home",
    "lane_env": "agentreview.host.secrets",
    # child processes: one process group each, bounded, killed with the host
    "run_process_group": "agentreview.host.procs.group",
    "ProcessResult": "agentreview.host.procs.group",
    # git, always with the hardened configuration (no fsmonitor, hooks, external diff, textconv, filters, prompts)
    "run_git": "agentreview.host.gitrun",
    "GitError": "agentreview.host.gitrun",
    # programs by absolute path, from the absolute PATH entries only (since API 2.1)
    "find_program": "agentreview.host.programs",
}

# Kept literal so linters and type checkers read it; a test checks it against _EXPORTS.
__all__ = [
    "API_VERSION",
    "PACK_MANIFEST",
    "ApiVersionError",
    "CheckModel",
    "CliInfo",
    "CliReviewer",
    "DeltaRange",
    "FallbackAttempt",
    "FileLock",
    "GitError",
    "GitPackRefError",
    "KeyInfo",
    "LaneExecutor",
    "LaneOutcome",
    "LaneRequest",
    "LoadedPack",
    "LockTimeout",
    "MissingFileError",
    "OutcomeKind",
    "PackLoadContext",
    "PackLoadError",
    "PackLoader",
    "PackUnavailableError",
    "PresetOption",
    "PresetSpec",
    "ProcessResult",
    "ProviderStatus",
    "ReportedFinding",
    "ReviewerBase",
    "ReviewerEnd",
    "ReviewerProvider",
    "ReviewerRequest",
    "ReviewerResult",
    "SignatureInvalidError",
    "Signer",
    "SignerContext",
    "SigningError",
    "UnreadableFileError",
    "atomic_write_bytes",
    "atomic_write_text",
    "attempt_dir",
    "env_names_problem",
    "find_program",
    "fresh_dir",
    "home_dir",
    "hookimpl",
    "lane_env",
    "link_if_exists",
    "load_config",
    "loads_strict",
    "pack_cache_dir",
    "parse_git_pack_ref",
    "read_confined",
    "read_pack_manifest",
    "read_regular_file",
    "remove_path",
    "require",
    "reviewer_env",
    "run_git",
    "run_process_group",
    "sha256_hex",
    "user_dir",
    "whole_number",
]


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
