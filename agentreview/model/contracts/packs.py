"""Pack loaders: one reference form each, returning the bytes and the trust decision."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from agentreview.model.contracts.errors import PackLoadError, PackUnavailableError
from agentreview.model.record import record

__all__ = ["LoadedPack", "PackLoadContext", "PackLoadError", "PackLoader", "PackUnavailableError"]


@record
class PackLoadContext:
    """What a pack loader is given: the repository, the manifest's folder, the home for its cache, and bounds."""

    repo_root: Path
    manifest_dir: Path
    home: Path
    timeout_s: float = 120.0
    offline: bool = False


@record
class LoadedPack:
    """A pack's root (real path), its REVIEW.md bytes as read, and whether its commands may run unasked."""

    root: Path
    source: bytes
    trusted: bool
    origin: str = ""


@runtime_checkable
class PackLoader(Protocol):
    """Loads one reference form: ``path``, ``npm`` or ``git+https``."""

    form: str

    def load(self, ref: str, ctx: PackLoadContext) -> LoadedPack:
        """Return the loaded pack or raise :class:`PackLoadError` (never run pack code)."""
        ...
