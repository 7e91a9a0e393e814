"""Where the real reviewer CLIs are: the install of scripts/install-reviewer-clis (one npm
prefix per release, a launcher per set and CLI, ``versions.json`` naming each set's
releases) in ``build/reviewer-clis`` or ``$AGENTREVIEW_REVIEWER_CLIS``."""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from importlib.machinery import SourceFileLoader
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
INSTALLER = ROOT / "scripts" / "install-reviewer-clis"


def base() -> Path:
    return Path(os.environ.get("AGENTREVIEW_REVIEWER_CLIS") or ROOT / "build" / "reviewer-clis")


def _installer() -> Any:
    loader = SourceFileLoader("install_reviewer_clis", str(INSTALLER))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def sets() -> dict[str, dict[str, str]]:
    """Set name -> {cli: version}: what is installed, else what the installer would install."""
    try:
        return json.loads((base() / "versions.json").read_text())["sets"]
    except (OSError, ValueError, KeyError):
        clis = _installer().CLIS
        return {"pinned": {c: s[2] for c, s in clis.items()}, "newest": {c: s[3] for c, s in clis.items()}}


@dataclass(frozen=True)
class Release:
    cli: str
    version: str
    set_name: str  # the first set naming it: its launcher is DIR/<set_name>/bin/<cli>

    @property
    def id(self) -> str:
        return f"{self.cli}-{self.version}"

    @property
    def launcher(self) -> Path:
        return base() / self.set_name / "bin" / self.cli


def releases() -> list[Release]:
    """Each distinct (CLI, version) of every set, once: a release named by two sets is driven once."""
    seen: dict[tuple[str, str], Release] = {}
    for set_name, versions in sets().items():
        for cli, version in versions.items():
            seen.setdefault((cli, version), Release(cli, version, set_name))
    return sorted(seen.values(), key=lambda r: (r.cli, r.set_name != "pinned", r.version))


def binary(cli: str, set_name: str = "pinned") -> str | None:
    """The launcher of ``cli`` in ``set_name``, or None when it is not installed."""
    path = base() / set_name / "bin" / cli
    return str(path) if os.access(path, os.X_OK) else None


def missing(cli: str) -> str:
    return f"{cli} CLI not installed: run scripts/install-reviewer-clis (installs into {base()})"
