"""Planning a run: everything decided before any prepare step or lane runs, frozen once in a :class:`RunPlan`.

The later stages read the plan and never change it, so what a run attests is what it decided up front; only the
head is held "as known": the cache key names it before prepare, the attestation the head frozen after it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.engine.coordination import InflightRun, join_key
from agentreview.engine.options import RunOptions
from agentreview.host import git, refs
from agentreview.host.home import home_dir
from agentreview.host.refs import ResolvedRef
from agentreview.manifest.parse import parse_review, read_manifest_bytes
from agentreview.manifest.placeholders import compile_checks, host_values, substitute
from agentreview.manifest.rules import resolve_binding
from agentreview.model.contracts.errors import PackLoadError
from agentreview.model.digests import manifest_sha, range_sha, sha256_hex
from agentreview.model.errors import AgentreviewError
from agentreview.model.record import record
from agentreview.packs.confine import read_confined, read_pack_file
from agentreview.packs.resolve import ResolvedCheck, ResolvedReview, resolve_review
from agentreview.plugins.deferred import DeferredRegistry

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.policy_tree import PolicyTree
    from agentreview.model.contracts.lanes import DeltaRange, LaneExecutor
    from agentreview.model.manifest import Binding, ReviewManifest
    from agentreview.plugins.registry import Registry
    from agentreview.store.ledger import LedgerKey


@dataclass
class LanePlan:
    """One lane or prepare step as it will run: the resolved check and what the plan bound for it."""

    check: Any  # CommandCheck | AgentCheck | a plugin's check (resolved)
    command: str | None = None
    rubric_path: Path | None = None
    delta: DeltaRange | None = None


@record
class HostFacts:
    """This host's side of a run: never part of an attestation."""

    home: Path  # AGENTREVIEW_HOME: ledger, keys, presets, config
    pid: int  # advertised to concurrent runs (supersede sends it SIGTERM)
    session_id: str | None  # the requesting agent session, recorded as requester.sessionId


@record
class RunFlags:
    """The caller's choices that shape the run but not what is reviewed."""

    headless: bool = False
    no_cache: bool = False
    no_compose: bool = False
    supersede: bool = False
    export: bool = False
    export_to: Path | None = None  # --export-to joined to the caller's directory; resolved when written
    pr: dict[str, Any] | None = None
    join_timeout_s: float | None = None
    authored_by: frozenset[str] = frozenset()  # --authored-by: families no agent lane may review with
    pushed: bool = False  # the head is a commit being pushed: its review never tests the checkout's changes

    @property
    def exports(self) -> bool:
        return self.export or self.export_to is not None


@record
class RunPlan:
    """One review run, decided: what is reviewed, against what, with which plugins."""

    run_id: str
    host: HostFacts
    flags: RunFlags
    repo_root: Path
    repo_remote: str
    manifest_path: Path
    manifest_sha: str
    resolved: ResolvedReview
    binding_name: str
    binding: Binding
    base_sha: str
    head_ref: str  # re-resolved after prepare: a prepare step may commit
    pre_head_sha: str  # the head before prepare; names the ledger key below
    key: LedgerKey  # (repoRemote, manifestSha, binding, rangeSha(base, pre-prepare head))
    rubrics: tuple[dict[str, str], ...]  # {check, path, sha256} of every readable agent rubric
    rubric_paths: Mapping[str, Path]  # check id -> the rubric file read for its digest
    packs: tuple[dict[str, Any], ...]  # {ref, id, version, alg, sha256} of every resolved pack
    host_values: Mapping[str, str]  # {base}, {changed}: bound in prepare steps and lanes
    prepare: tuple[LanePlan, ...]  # the binding's prepare steps, commands substituted
    plugins: DeferredRegistry  # loaded when a pack, a lane or a signature first needs it
    checkout: git.CheckoutStatus  # whether the checkout is dirty, asked of git once per run
    refs: tuple[ResolvedRef, ...] = ()  # the base and head names as resolved (exactly), for the report
    policy_from: ResolvedRef | None = None  # --policy-from: the commit whose policy the run reviews under
    recorded_manifest: Path | None = None  # the checkout's manifest path, when the policy was read from REF
    export_commit: str | None = None  # the head asked for, when it only adds exports and its parent is reviewed

    @property
    def isolated(self) -> bool:
        """Whether the lanes run in a worktree of the head even when the checkout holds it: a pushed commit
        under a checkout with uncommitted changes to tracked files (what is pushed is what is reviewed)."""
        return self.flags.pushed and self.checkout.dirty()

    @property
    def ledger_manifest_path(self) -> Path:
        """The manifest path the ledger records (the checkout's, never a temporary copy of REF's)."""
        return self.recorded_manifest or self.manifest_path

    @property
    def registry(self) -> Registry:
        return self.plugins.loaded

    @property
    def executors(self) -> Mapping[str, LaneExecutor]:
        return self.registry.objects("lane_executors")

    @property
    def manifest(self) -> ReviewManifest:
        return self.resolved.parsed.manifest

    @property
    def review_id(self) -> str:
        return self.manifest.id

    @property
    def export_dir(self) -> str | None:
        return self.manifest.verdict.exportDir

    @property
    def wants_reviewers(self) -> bool:
        """Agent lanes will run here, so reviewer providers and presets are needed."""
        return not self.flags.headless and any(
            self.resolved.checks[ref].check.kind == "agent" for ref in self.binding.checks
        )

    def rubric_sha256(self, check_id: str) -> str | None:
        return next((r["sha256"] for r in self.rubrics if r["check"] == check_id), None)

    def pack_digest(self, rc: ResolvedCheck) -> dict[str, Any] | None:
        """The digest record of the pack ``rc`` comes from (None for a local check)."""
        if not rc.namespace:
            return None
        return next((p.digest for p in self.resolved.packs if p.entry.as_ == rc.namespace), None)

    @property
    def join_key(self) -> str | None:
        """The key identical in-flight requests share (the ledger key and ``--no-cache``); None
        for a headless run, which records into a ledger of its own and so never joins nor is joined."""
        return None if self.flags.headless else join_key(self.key, no_cache=self.flags.no_cache)

    def inflight_run(self) -> InflightRun:
        """How this run advertises itself to concurrent runs of the repository."""
        return InflightRun(
            self.run_id,
            self.host.pid,
            str(self.repo_root),
            self.binding_name,
            self.base_sha,
            self.pre_head_sha,
            self.join_key or "",
        )


def build_plan(
    run_id: str, options: RunOptions, registry: Registry | None = None, *, policy: PolicyTree | None = None
) -> RunPlan:
    """Steps 1–5 and 7; raises :class:`AgentreviewError` (or ``git.GitError``) when the run cannot happen.

    With ``policy`` (``--policy-from``) the manifest, rubrics and path packs are REF's, the rest the checkout's."""
    from agentreview.store.ledger import LedgerKey

    home = options.home or home_dir()
    cwd = options.cwd.resolve()
    # 1. repository
    head_ref = options.head or "HEAD"
    # the head is reported at step 5; a name other than HEAD is resolved exactly there
    root, pre_head_or_none = git.root_and_commit(cwd, head_ref) if head_ref == "HEAD" else (git.repo_root(cwd), None)
    remote = git.repo_remote(root)
    # 2. manifest
    manifest_path = (cwd / options.manifest).resolve() if options.manifest else root / "REVIEW.md"
    recorded_manifest = None
    if policy is not None:
        recorded_manifest, manifest_path = manifest_path, policy.manifest_path
        source = policy.source
    else:
        source = read_manifest_bytes(manifest_path)
    # through the parse memo under the home; loads plugins for a plugin's check kind
    parsed = parse_review(source, manifest_path, registry=registry, home=home)
    if policy is not None:
        policy.fill(parsed)  # REF's rubrics and path packs, beside REF's manifest
    # 3. packs (every run)
    plugins = DeferredRegistry(registry or parsed.registry)
    if parsed.manifest.uses:
        from agentreview.model.contracts.packs import PackLoadContext

        pack_root = policy.root if policy is not None else root
        ctx = PackLoadContext(repo_root=pack_root, manifest_dir=manifest_path.parent, home=home)
        resolved = resolve_review(parsed, registry=plugins.loaded, ctx=ctx)
    else:
        resolved = resolve_review(parsed)
    manifest = parsed.manifest
    # 4. binding
    binding_name, binding = resolve_binding(manifest.id, resolved.bindings, options.binding)
    problems = compile_checks(binding, {cid: rc.check for cid, rc in resolved.checks.items()})
    if problems:
        raise AgentreviewError(f"{manifest_path}: " + "; ".join(str(p) for p in problems))
    if options.export and not options.export_to:
        check_export_dir(root, manifest.verdict.exportDir)
    # 5. base and the pre-prepare head, every name resolved to exactly one full ref or commit
    head = refs.head_ref(root, head_ref, pre_head_or_none)
    export_commit = None
    checkout = git.CheckoutStatus(root)
    if _follows_export_commit(root, options, manifest.verdict.exportDir, head.commit, checkout):
        export_commit = head.commit
        head = refs.head_ref(root, f"{head.commit}^")
    try:
        span = refs.resolve_range(root, head, options.base, manifest.target.base)
    except git.GitError:
        if options.base is not None or options.pushed_over is None or export_commit is not None:
            raise
        # the remote already holds pushed_over: what the push adds is pushed_over..head
        span = refs.resolve_range(root, head, options.pushed_over, manifest.target.base)
    pre_head, base_sha = head.commit, span.base_sha
    msha = manifest_sha(source)
    # 7. rubric digests (before prepare)
    rubrics, rubric_paths = _rubric_digests(resolved, binding.checks)
    values = host_values(base_sha)
    prepare = _prepare_steps(resolved, binding, values)
    return RunPlan(
        run_id=run_id,
        host=HostFacts(home=home, pid=os.getpid(), session_id=options.session_id),
        flags=RunFlags(
            headless=options.headless,
            no_cache=options.no_cache or bool(options.authored_by),
            no_compose=options.no_compose or bool(options.authored_by),
            supersede=options.supersede,
            export=options.export,
            export_to=options.cwd / options.export_to if options.export_to else None,
            pr=options.pr,
            join_timeout_s=options.join_timeout_s,
            authored_by=frozenset(options.authored_by),
            pushed=options.pushed,
        ),
        repo_root=root,
        repo_remote=remote,
        manifest_path=manifest_path,
        manifest_sha=msha,
        resolved=resolved,
        binding_name=binding_name,
        binding=binding,
        base_sha=base_sha,
        head_ref=head.exact,
        pre_head_sha=pre_head,
        key=LedgerKey(remote, msha, binding_name, range_sha(base_sha, pre_head)),
        rubrics=tuple(rubrics),
        rubric_paths=rubric_paths,
        packs=tuple(resolved.pack_digests()),
        host_values=values,
        prepare=prepare,
        plugins=plugins,
        checkout=checkout,
        refs=span.refs,
        policy_from=policy.resolved if policy is not None else None,
        recorded_manifest=recorded_manifest,
        export_commit=export_commit,
    )


def _follows_export_commit(
    root: Path, options: RunOptions, export_dir: str | None, head_sha: str, checkout: git.CheckoutStatus
) -> bool:
    """Whether the review is the one of the head's parent: the head only adds exports (as ``verify``
    reads it), the base is not named, and the head is the clean checkout's ``HEAD`` or a pushed commit."""
    from agentreview.store.exportcommit import head_only_touches_exports, repository_folder

    if options.base is not None or not export_dir or (options.head is not None and not options.pushed):
        return False
    if options.head is None and checkout.dirty():
        return False
    return head_only_touches_exports(root, repository_folder(export_dir), head_sha)


def check_export_dir(root: Path, export_dir: str | None) -> Path:
    """Where ``--export`` writes: verdict.exportDir, which must stay inside the repository.

    Checked when planning (so a bad exportDir fails before any lane runs) and again when
    writing (a prepare step may have planted a symlink since)."""
    from agentreview.store.export import confined_export_dir

    if not export_dir:
        raise AgentreviewError("--export needs verdict.exportDir in REVIEW.md (or use --export-to PATH)")
    try:
        return confined_export_dir(root, export_dir)
    except ValueError as exc:
        raise AgentreviewError(f"{exc} — fix verdict.exportDir in REVIEW.md or use --export-to PATH") from exc


def _prepare_steps(resolved: ResolvedReview, binding: Binding, values: Mapping[str, str]) -> tuple[LanePlan, ...]:
    """The binding's prepare steps with ``{base}``/``{changed}`` substituted (compile_checks and the
    binding rules make neither error below expected)."""
    from agentreview.model.manifest import CommandCheck

    steps: list[LanePlan] = []
    for ref in binding.prepare:
        check = resolved.checks[ref].check
        if not isinstance(check, CommandCheck):
            raise AgentreviewError(f"prepare check '{ref}' is a '{check.kind}' check; prepare runs command checks only")
        steps.append(LanePlan(check=check, command=substitute(check.run, values, label=f"prepare check '{ref}'")))
    return tuple(steps)


def _rubric_digests(resolved: ResolvedReview, check_ids: list[str]) -> tuple[list[dict[str, str]], dict[str, Path]]:
    from agentreview.model.manifest import AgentCheck

    rubrics: list[dict[str, str]] = []
    paths: dict[str, Path] = {}
    for check_id in check_ids:
        rc = resolved.checks[check_id]
        check = rc.check
        path = rc.rubric_path()
        if not isinstance(check, AgentCheck) or path is None:
            continue
        try:
            # A pack rubric is read through the confined reader again: a prepare step or a
            # local process must not swap it for a link out of the pack between resolution and now.
            # A consumer's own rubric is not confined (spec), but it is still read as a bounded
            # regular file: `rubric: /dev/zero` or a FIFO must not exhaust memory or hang the run.
            data = read_confined(rc.rubric_base, check.rubric) if rc.namespace else read_pack_file(path)
        except (OSError, PackLoadError):
            continue  # the lane is skipped at execution: "rubric not found"
        rubrics.append({"check": check_id, "path": check.rubric, "sha256": sha256_hex(data)})
        paths[check_id] = path.resolve()
    return rubrics, paths
