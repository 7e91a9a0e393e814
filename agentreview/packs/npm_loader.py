"""Built-in pack loader for npm package references (``@scope/name`` or ``name``).

Found as Node resolves ``<name>/package.json`` from the repository root (``node_modules/<name>`` there, then in
each parent); nothing is installed or fetched. An npm pack is never trusted: its commands need ``allowCommands``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from agentreview import hookimpl
from agentreview.model.contracts.errors import PackLoadError, PackUnavailableError
from agentreview.model.contracts.packs import LoadedPack, PackLoadContext, PackLoader
from agentreview.packs.confine import read_pack_manifest

# One path segment of an npm name: no separators, no whitespace, no control characters.
_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+\Z")


def package_segments(name: str) -> list[str]:
    """Split and check an npm package name (``name`` or ``@scope/name``); raise PackLoadError if unsafe."""
    parts = name.split("/")
    scoped = name.startswith("@")
    if scoped:
        parts[0] = parts[0][1:]
    expected = 2 if scoped else 1
    ok = len(parts) == expected and all(
        _SEGMENT.match(part) and part not in (".", "..") and not part.startswith(".") for part in parts
    )
    if not ok:
        raise PackLoadError(
            f"pack '{name}': not a valid npm package name — use 'name' or '@scope/name' "
            "(no '..', no absolute or backslash parts, no sub-paths); a path must start with './' or '../'"
        )
    return [f"@{parts[0]}", parts[1]] if scoped else parts


def find_package(repo_root: Path, segments: list[str]) -> Path | None:
    """The first ``node_modules/<name>`` holding a package.json, from the repo root upward (as Node does)."""
    current = Path(os.path.realpath(repo_root))
    while True:
        if current.name != "node_modules":  # Node never looks in node_modules/node_modules
            candidate = current.joinpath("node_modules", *segments)
            if (candidate / "package.json").is_file():
                return candidate
        if current.parent == current:
            return None
        current = current.parent


class NpmPackLoader:
    """Loads ``npm`` references from an installed package folder."""

    form = "npm"

    def load(self, ref: str, ctx: PackLoadContext) -> LoadedPack:
        segments = package_segments(ref)
        found = find_package(ctx.repo_root, segments)
        if found is None:
            raise PackUnavailableError(
                f"pack '{ref}': npm package '{ref}' is not installed (no node_modules/{ref}/package.json from "
                f"{ctx.repo_root} upward) — install it with your package manager, e.g. 'npm install --save-dev "
                f"{ref}'; agentreview never installs or fetches packages"
            )
        root = Path(os.path.realpath(found))
        source = read_pack_manifest(root, ref)
        return LoadedPack(root=root, source=source, trusted=False, origin=str(found))


@hookimpl
def agentreview_register_pack_loaders(register: Callable[[PackLoader], None]) -> None:
    register(NpmPackLoader())
