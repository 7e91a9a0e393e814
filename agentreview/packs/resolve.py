"""From a parsed REVIEW.md to the review that actually runs: packs merged, bindings final.

Called on every run, by ``check`` and by ``verify`` (step 6); without ``uses`` it only wraps the parsed manifest.
Loaders, trust, overrides and digests are here; reading a pack's files is :mod:`agentreview.packs.confine`'s job.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.contracts.errors import PackLoadError, PackUnavailableError
from agentreview.model.errors import AgentreviewError
from agentreview.model.record import record
from agentreview.packs.confine import read_confined

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview, Problem
    from agentreview.model.contracts.packs import LoadedPack, PackLoadContext
    from agentreview.model.manifest import (
        AgentCheck,
        Binding,
        CommandCheck,
        Override,
        PackAgentCheck,
        PackCommandCheck,
        ReviewPack,
        UsesEntry,
    )
    from agentreview.plugins.registry import Registry

# Which plugin provides the loader of each reference form, for the "not installed" error.
_BUILTIN_HINT = "the built-in loader agentreview:{} (check AGENTREVIEW_PLUGINS / AGENTREVIEW_DISABLE_PLUGINS)"
LOADER_PLUGINS = {
    "git+https": "the agentreview-packs-git plugin (pip install agentreview-packs-git)",
    "path": _BUILTIN_HINT.format("builtin-path-loader"),
    "npm": _BUILTIN_HINT.format("builtin-npm-loader"),
}


class PackResolutionError(AgentreviewError):
    """A pack could not be loaded. ``unavailable`` is true when it cannot be obtained *here*
    (not installed, not fetchable, loader missing): verify reports that as a note."""

    def __init__(self, message: str, *, unavailable: bool):
        super().__init__(message)
        self.unavailable = unavailable


def classify_pack_ref(ref: str) -> str:
    """The loader form of a ``uses[].pack`` reference: ``git+https``, ``path`` or ``npm``."""
    if ref.startswith("git+"):
        return "git+https"
    if ref.startswith(("./", "../")) or os.path.isabs(ref):
        return "path"
    return "npm"


@record
class ResolvedCheck:
    """A check as it runs: for a pack check the id is ``<as>/<id>``, overrides are applied,
    and an agent check carries its final preset."""

    check: CommandCheck | AgentCheck
    rubric_base: Path  # the pack root for a pack agent check, else the manifest's folder
    namespace: str | None = None  # uses[].as for a pack check

    @property
    def id(self) -> str:
        return self.check.id

    def rubric_path(self) -> Path | None:
        rubric = getattr(self.check, "rubric", None)
        return (self.rubric_base / rubric) if rubric else None


@record
class ResolvedPack:
    """One ``uses`` entry resolved: the pack as loaded and read, and the digest the attestation records."""

    entry: UsesEntry
    loaded: LoadedPack
    pack: ReviewPack
    digest: dict[str, Any]  # {ref, id, version, alg, sha256}
    form: str  # which loader form: path, npm, git+https


@record
class ResolvedReview:
    """A review with its packs resolved: every check by reference, the bindings, and what resolution ignored."""

    parsed: ParsedReview
    manifest_dir: Path
    checks: dict[str, ResolvedCheck]  # local checks first, then pack checks, in order
    bindings: dict[str, Binding]
    packs: list[ResolvedPack] = field(default_factory=list)
    warnings: tuple[str, ...] = ()  # what resolution ignored (overrides that cannot apply), for the run to show

    @property
    def review_id(self) -> str:
        return self.parsed.manifest.id

    def pack_digests(self) -> list[dict[str, Any]]:
        return [p.digest for p in self.packs]


def resolve_review(
    parsed: ParsedReview,
    *,
    registry: Registry | None = None,
    ctx: PackLoadContext | None = None,
) -> ResolvedReview:
    """Resolve ``uses[]`` (when present) and finalize the bindings against the full check set."""
    from agentreview.manifest.rules import finalize_bindings

    manifest = parsed.manifest
    manifest_dir = parsed.path.parent if parsed.path else Path.cwd()
    checks = {c.id: ResolvedCheck(check=c, rubric_base=manifest_dir) for c in manifest.checks}
    if not manifest.uses:
        return ResolvedReview(parsed, manifest_dir, checks, dict(parsed.bindings))
    if registry is None or ctx is None:
        raise ValueError("resolve_review: a manifest with uses[] needs a plugin registry and a load context")
    resolver = _PackResolver(parsed, registry, ctx)
    packs = resolver.resolve_all(checks)
    all_checks = [rc.check for rc in checks.values()]
    bindings = finalize_bindings(all_checks, dict(parsed.bindings), path=parsed.path)
    return ResolvedReview(parsed, manifest_dir, checks, bindings, packs, tuple(resolver.warnings))


# --------------------------------------------------------------------------- resolution


class _PackResolver:
    """AIP-62 §Resolution for one manifest: every rule problem is gathered and raised as one
    :class:`~agentreview.manifest.parse.ManifestError`; a pack that cannot be loaded stops at once
    (:class:`PackResolutionError`); overrides that cannot apply are only warnings."""

    def __init__(self, parsed: ParsedReview, registry: Registry, ctx: PackLoadContext):
        self.parsed = parsed
        self.registry = registry
        self.ctx = ctx
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    def problem(self, index: int, where: str, message: str, fix: str = "") -> None:
        from agentreview.model.problems import Problem

        self.problems.append(Problem(f"uses[{index}]{where}", message, fix))

    def resolve_all(self, checks: dict[str, ResolvedCheck]) -> list[ResolvedPack]:
        from agentreview.model.problems import ManifestError

        packs = [self.resolve_entry(i, entry, checks) for i, entry in enumerate(self.parsed.manifest.uses)]
        if self.problems:
            raise ManifestError(self.parsed.path, self.problems)
        return packs

    def load(self, entry: UsesEntry) -> tuple[str, LoadedPack]:
        from agentreview.model.contracts.packs import LoadedPack

        ref, form = entry.pack, classify_pack_ref(entry.pack)
        label = f"uses '{entry.as_}' ({ref})"
        loader = self.registry.get("pack_loaders", form)
        if loader is None:
            raise PackResolutionError(
                f"{label}: no pack loader for '{form}' references is installed — install {LOADER_PLUGINS[form]}",
                unavailable=True,
            )
        try:
            loaded = loader.load(ref, self.ctx)
        except PackLoadError as exc:
            raise PackResolutionError(f"{label}: {exc}", unavailable=isinstance(exc, PackUnavailableError)) from exc
        except Exception as exc:  # a loader plugin bug must still be one clear line
            raise PackResolutionError(
                f"{label}: the '{form}' pack loader failed ({type(exc).__name__}: {exc})", unavailable=False
            ) from exc
        if not isinstance(loaded, LoadedPack) or not isinstance(loaded.source, bytes):
            raise PackResolutionError(f"{label}: the '{form}' pack loader returned {loaded!r}", unavailable=False)
        return form, loaded

    def parse(self, entry: UsesEntry, loaded: LoadedPack) -> ReviewPack:
        from agentreview.manifest.parse import ManifestError, parse_pack

        try:
            return parse_pack(loaded.source, loaded.root / "REVIEW.md", home=self.ctx.home)
        except ManifestError as exc:
            prefix = f"pack '{entry.pack}' (uses '{entry.as_}') "
            raise ManifestError(exc.path, [p._replace(location=prefix + p.location) for p in exc.problems]) from None

    def resolve_entry(self, index: int, entry: UsesEntry, checks: dict[str, ResolvedCheck]) -> ResolvedPack:
        from agentreview.model.digests import PACK_DIGEST_ALG, pack_digest_sha256

        form, loaded = self.load(entry)
        pack = self.parse(entry, loaded)
        label = f"uses '{entry.as_}' ({entry.pack})"
        selected = self.select(index, entry, pack, label)
        self.check_overrides(index, entry, pack, selected, label)
        rubrics: list[tuple[str, bytes]] = []
        for pack_check in selected:
            namespaced = f"{entry.as_}/{pack_check.id}"
            override = entry.overrides.get(pack_check.id)
            if pack_check.kind == "command":
                imported: CommandCheck | AgentCheck | None = self.command(index, entry, pack_check, override, loaded)
            else:
                imported = self.agent(index, entry, pack_check, override, label)
                try:
                    rubrics.append((pack_check.rubric, read_confined(loaded.root, pack_check.rubric)))
                except PackLoadError as exc:
                    self.problem(
                        index,
                        f".checks ({pack_check.id})",
                        f"{label}: agent check '{pack_check.id}' rubric '{pack_check.rubric}' {exc}",
                        "a pack rubric must be a file inside the pack folder",
                    )
            if namespaced in checks:
                self.problem(index, "", f"check '{namespaced}' (from a uses[] pack) collides with an existing check id")
            elif imported is not None:
                checks[namespaced] = ResolvedCheck(imported, rubric_base=loaded.root, namespace=entry.as_)
        digest = {
            "ref": entry.pack,
            "id": pack.id,
            "version": pack.version,
            "alg": PACK_DIGEST_ALG,
            "sha256": pack_digest_sha256(loaded.source, rubrics),
        }
        return ResolvedPack(entry=entry, loaded=loaded, pack=pack, digest=digest, form=form)

    def select(
        self, index: int, entry: UsesEntry, pack: ReviewPack, label: str
    ) -> list[PackCommandCheck | PackAgentCheck]:
        if entry.checks is None:
            return list(pack.checks)
        declared = {c.id: c for c in pack.checks}
        chosen: list[PackCommandCheck | PackAgentCheck] = []
        for position, name in enumerate(entry.checks):
            if name not in declared:
                self.problem(
                    index,
                    f".checks[{position}]",
                    f"{label}: checks[] names '{name}', which pack '{pack.id}' does not declare",
                    f"use one of: {', '.join(declared)}",
                )
            elif declared[name] in chosen:
                self.problem(index, f".checks[{position}]", f"{label}: checks[] lists '{name}' more than once")
            else:
                chosen.append(declared[name])
        return chosen

    def check_overrides(
        self,
        index: int,
        entry: UsesEntry,
        pack: ReviewPack,
        selected: list[PackCommandCheck | PackAgentCheck],
        label: str,
    ) -> None:
        """An override that cannot apply (an id not declared or not selected, an agent-only key on a
        command check) is ignored with a warning, as the reference host does."""
        declared = {c.id: c for c in pack.checks}
        chosen = {c.id for c in selected}
        for name, override in entry.overrides.items():
            where = f"uses[{index}].overrides.{name}"
            if name not in declared:
                self.warnings.append(
                    f"{where}: ignored: {label}: pack '{pack.id}' declares no check '{name}' "
                    f"(it declares {', '.join(declared)})"
                )
            elif name not in chosen:
                self.warnings.append(f"{where}: ignored: {label}: this entry's checks[] does not select '{name}'")
            elif declared[name].kind == "command":
                agent_only = [k for k in ("blockOn", "preset", "fallbackPresets") if getattr(override, k) is not None]
                if agent_only:
                    self.warnings.append(
                        f"{where}: {', '.join(agent_only)} ignored: {label}: '{name}' is a command check, "
                        "which takes only blocking and timeoutMs overrides"
                    )

    def command(
        self,
        index: int,
        entry: UsesEntry,
        check: PackCommandCheck,
        override: Override | None,
        loaded: LoadedPack,
    ) -> CommandCheck | None:
        from agentreview.model.manifest import CommandCheck

        if not (entry.allowCommands or loaded.trusted):
            self.problem(
                index,
                ".allowCommands",
                f"uses '{entry.as_}' ({entry.pack}): check '{check.id}' is a command check — it would run shell "
                "commands in this checkout from third-party pack content. Set allowCommands: true on the uses entry "
                "to allow it.",
                "set allowCommands: true only if you would author these commands yourself, or select only the "
                "pack's agent checks with checks: [...]",
            )
            return None
        return CommandCheck(
            id=f"{entry.as_}/{check.id}",
            kind="command",
            description=check.description,
            run=check.run,
            cwd=check.cwd or None,
            blocking=_pick(override, "blocking", check.blocking),
            timeoutMs=_pick(override, "timeoutMs", check.timeoutMs),
            effects=False,
        )

    def agent(
        self,
        index: int,
        entry: UsesEntry,
        check: PackAgentCheck,
        override: Override | None,
        label: str,
    ) -> AgentCheck | None:
        from agentreview.manifest.rules import validate_reviewer_chain
        from agentreview.model.manifest import AgentCheck

        preset = _pick(override, "preset", None) or entry.preset or check.preset
        if preset is None:
            self.problem(
                index,
                ".preset",
                f"{label}: agent check '{check.id}' has no preset — set 'preset' on the uses entry, "
                f"'overrides.{check.id}.preset', or a preset directly on the pack's check",
            )
            return None
        fallbacks = _pick(override, "fallbackPresets", None)
        if fallbacks is None:
            fallbacks = entry.fallbackPresets or []
        chain = validate_reviewer_chain(f"{label}: agent check '{check.id}'", preset, fallbacks)
        self.problems.extend(chain)
        return AgentCheck(
            id=f"{entry.as_}/{check.id}",
            kind="agent",
            description=check.description,
            preset=preset,
            fallbackPresets=list(fallbacks),
            rubric=check.rubric,
            blockOn=_pick(override, "blockOn", check.blockOn),
            blocking=_pick(override, "blocking", check.blocking),
            timeoutMs=_pick(override, "timeoutMs", check.timeoutMs),
            effects=False,
        )


def _pick(override: Override | None, name: str, default: Any) -> Any:
    value = getattr(override, name) if override is not None else None
    return default if value is None else value
