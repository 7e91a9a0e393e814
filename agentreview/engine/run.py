"""``run_review``: the ten steps of a review run, in the spec's order.

1. repository root and ``repoRemote``; 2. manifest bytes, ``manifestSha``, strict
parse; 3. packs resolved (every run, cached ones too); 4. binding; 5. base and
pre-prepare head; 6. supersede; 7. rubric digests; 8. ledger cache (or join an
identical run in flight); 9. prepare → freeze (head, dirty) → lanes in parallel →
fold; 10. sign (best effort), record, export.

A run ends as ``done`` (an attestation with a verdict), ``failed`` (could not
run, or a prepare step failed: nothing attested) or ``cancelled`` (Ctrl-C,
SIGTERM, superseded: nothing recorded, run directory removed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.engine.coordination import InflightRegistry, InflightRun, join_lock_path
from agentreview.engine.execute import Cancelled, LaneContext, LanePlan, PrepareFailed, run_lanes, run_prepare
from agentreview.host import git
from agentreview.model.attestation import Attestation
from agentreview.model.errors import EXIT_ERROR, EXIT_INCOMPLETE, VERDICT_EXIT, AgentreviewError
from agentreview.report.progress import QuietReporter, Reporter

ENV_SESSION = "AGENTREVIEW_SESSION_ID"


@dataclass
class RunOptions:
    cwd: Path = field(default_factory=Path.cwd)
    manifest: Path | None = None
    binding: str | None = None
    base: str | None = None
    head: str | None = None
    no_cache: bool = False
    no_compose: bool = False
    headless: bool = False
    supersede: bool = False
    export: bool = False
    export_to: Path | None = None
    pr: dict[str, Any] | None = None
    session_id: str | None = None
    home: Path | None = None
    join_timeout_s: float | None = None


@dataclass
class RunResult:
    run_id: str
    status: str  # done | failed | cancelled
    verdict: str | None = None
    cached: bool = False
    joined: bool = False
    attestation: Attestation | None = None
    ledger_path: Path | None = None
    export_path: Path | None = None
    signing_error: str | None = None
    error: str | None = None
    superseded_by: str | None = None
    exit_code: int = EXIT_ERROR

    @classmethod
    def done(cls, att: Attestation, ledger_path: Path | None, **extra: Any) -> RunResult:
        """A run that ends with an attestation (fresh, cached or joined)."""
        return cls(
            run_id=att.runId,
            status="done",
            verdict=att.verdict,
            attestation=att,
            ledger_path=ledger_path,
            exit_code=VERDICT_EXIT[att.verdict],
            **extra,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runId": self.run_id,
            "status": self.status,
            "verdict": self.verdict,
            "cached": self.cached,
            "attestation": self.attestation.to_json_dict() if self.attestation else None,
            "ledgerPath": str(self.ledger_path) if self.ledger_path else None,
            "exportPath": str(self.export_path) if self.export_path else None,
            "signingError": self.signing_error,
            "exitCode": self.exit_code,
        }
        if self.joined:
            data["joined"] = True
        if self.error:
            data["error"] = self.error
        if self.superseded_by:
            data["supersededBy"] = self.superseded_by
        return data


def new_run_id() -> str:
    return f"review-{uuid.uuid4()}"


def daemon_name() -> str:
    from agentreview import __version__
    from agentreview.host.home import hostname

    return f"agentreview/{__version__}@{hostname()}"


@contextlib.contextmanager
def _cancel_on_signals(cancel: threading.Event):
    """SIGINT and SIGTERM set the cancel event (main thread only); the previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        cancel.set()

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _failed(run_id: str, error: str) -> RunResult:
    return RunResult(run_id=run_id, status="failed", error=error, exit_code=EXIT_ERROR)


def run_review(options: RunOptions, reporter: Reporter | None = None, *, registry: Any = None) -> RunResult:
    """Run one review; never raises for a run that could not happen (status ``failed``)."""
    run_id = new_run_id()
    try:
        return _run(run_id, options, reporter or QuietReporter(), registry)
    except Cancelled:
        return RunResult(run_id=run_id, status="cancelled", error="review cancelled", exit_code=EXIT_INCOMPLETE)
    except AgentreviewError as exc:
        failed = _failed(run_id, str(exc))
        failed.exit_code = exc.exit_code  # a usage error (an unknown --binding) stays 64
        return failed
    except git.GitError as exc:
        return _failed(run_id, str(exc))
    except Exception as exc:  # could-not-run, never a traceback
        if os.environ.get("AGENTREVIEW_DEBUG"):
            raise
        return _failed(run_id, f"{type(exc).__name__}: {exc}")


def _run(run_id: str, options: RunOptions, reporter: Reporter, registry: Any) -> RunResult:
    from agentreview.host.home import home_dir
    from agentreview.manifest.parse import parse_review, read_manifest_bytes
    from agentreview.manifest.placeholders import compile_checks, host_values, substitute
    from agentreview.manifest.rules import resolve_binding
    from agentreview.model.contracts import PackLoadContext
    from agentreview.packs.resolve import resolve_review
    from agentreview.plugins.registry import load_registry
    from agentreview.store.ledger import Ledger

    home = options.home or home_dir()
    cwd = options.cwd.resolve()
    # 1. repository
    root = git.repo_root(cwd)
    remote = git.repo_remote(root)
    # 2. manifest
    manifest_path = (cwd / options.manifest).resolve() if options.manifest else root / "REVIEW.md"
    source = read_manifest_bytes(manifest_path)
    parsed = parse_review(source, manifest_path)
    # 3. packs (every run)
    registry = registry or load_registry()
    resolved = resolve_review(
        parsed, registry=registry, ctx=PackLoadContext(repo_root=root, manifest_dir=manifest_path.parent, home=home)
    )
    manifest = parsed.manifest
    # 4. binding
    binding_name, binding = resolve_binding(manifest.id, resolved.bindings, options.binding)
    problems = compile_checks(binding, {cid: rc.check for cid, rc in resolved.checks.items()})
    if problems:
        raise AgentreviewError(f"{manifest_path}: " + "; ".join(str(p) for p in problems))
    if options.export and not options.export_to:
        _check_export_dir(root, manifest.verdict.exportDir)
    # 5. base and the pre-prepare head
    pre_head = git.rev_parse_commit(root, options.head or "HEAD")
    if options.base:
        base_sha = git.rev_parse_commit(root, options.base)
    else:
        base_sha = git.merge_base(root, manifest.target.base, pre_head)
    msha = _manifest_sha(source)
    ledger = Ledger(home / "reviews")
    slug_dir = ledger.root / git.repo_slug(remote)
    inflight = InflightRegistry(slug_dir)
    me = InflightRun(run_id, os.getpid(), str(root), binding_name, base_sha, pre_head)
    # 7. rubric digests (before prepare)
    rubrics, rubric_paths = _rubric_digests(resolved, binding.checks)
    packs = resolved.pack_digests()
    cancel = threading.Event()
    with _cancel_on_signals(cancel), inflight.advertise(me):
        # 6. supersede
        if options.supersede:
            for victim in inflight.supersede(me, lambda a, b: git.is_ancestor(root, a, b)):
                reporter.phase(f"superseded in-flight run {victim}")
        # 8. cache, or join an identical run in flight
        from agentreview.model.digests import range_sha

        key = (remote, msha, binding_name, range_sha(base_sha, pre_head))
        dirty_before = git.is_dirty(root)
        if not options.no_cache and not dirty_before:
            cached = ledger.lookup_cached(remote, msha, binding_name, key[3], rubrics, packs)
            if cached is not None:
                reporter.phase(f"cache hit: {cached.runId} ({cached.verdict})")
                return _finish_cached(
                    cached, ledger, key, options, root, reporter, joined=False, export_dir=manifest.verdict.exportDir
                )
        join_lock = _acquire_join_lock(join_lock_path(slug_dir, key), cancel, options, reporter)
        try:
            waited_since = join_lock.waited_since
            if waited_since is not None:
                entry = ledger.get(*key)
                if entry is not None and _created_after(entry.attestation, waited_since):
                    reporter.phase(f"joined identical run {entry.attestation.runId}")
                    return _finish_cached(
                        entry.attestation,
                        ledger,
                        key,
                        options,
                        root,
                        reporter,
                        joined=True,
                        export_dir=manifest.verdict.exportDir,
                    )
            # 9. execute
            return _execute(
                run_id=run_id,
                options=options,
                reporter=reporter,
                registry=registry,
                home=home,
                root=root,
                remote=remote,
                manifest_path=manifest_path,
                resolved=resolved,
                binding_name=binding_name,
                binding=binding,
                base_sha=base_sha,
                msha=msha,
                rubrics=rubrics,
                rubric_paths=rubric_paths,
                packs=packs,
                ledger=ledger,
                inflight=inflight,
                cancel=cancel,
                substitute=substitute,
                host_values=host_values,
            )
        finally:
            join_lock.release()


def _manifest_sha(source: bytes) -> str:
    from agentreview.model.digests import manifest_sha

    return manifest_sha(source)


def _rubric_digests(resolved: Any, check_ids: list[str]) -> tuple[list[dict[str, str]], dict[str, Path]]:
    from agentreview.model.contracts import PackLoadError
    from agentreview.model.digests import sha256_hex
    from agentreview.packs.confine import read_confined, read_pack_file

    rubrics: list[dict[str, str]] = []
    paths: dict[str, Path] = {}
    for check_id in check_ids:
        rc = resolved.checks[check_id]
        if rc.check.kind != "agent":
            continue
        path = rc.rubric_path()
        try:
            # A pack rubric is read through the confined reader again: a prepare step or a
            # local process must not swap it for a link out of the pack between resolution and now.
            # A consumer's own rubric is not confined (spec), but it is still read as a bounded
            # regular file: `rubric: /dev/zero` or a FIFO must not exhaust memory or hang the run.
            data = read_confined(rc.rubric_base, rc.check.rubric) if rc.namespace else read_pack_file(path)
        except (OSError, PackLoadError):
            continue  # the lane is skipped at execution: "rubric not found"
        rubrics.append({"check": check_id, "path": rc.check.rubric, "sha256": sha256_hex(data)})
        paths[check_id] = path.resolve()
    return rubrics, paths


def _created_after(att: Attestation, since: float) -> bool:
    from datetime import datetime

    try:
        created = datetime.fromisoformat(att.createdAt.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    return created >= since - 1.0


class _JoinLock:
    def __init__(self, lock: Any, waited_since: float | None):
        self.lock = lock
        self.waited_since = waited_since

    def release(self) -> None:
        with contextlib.suppress(Exception):
            self.lock.release()


def _acquire_join_lock(path: Path, cancel: threading.Event, options: RunOptions, reporter: Reporter) -> _JoinLock:
    """Take the per-key lock; when another run holds it, wait for it (cancellable, bounded)."""
    from agentreview.host.locks import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
        return _JoinLock(lock, None)
    except Timeout:
        pass
    started = time.time()
    reporter.phase("an identical review is in flight on this host; waiting for its result")
    limit = options.join_timeout_s if options.join_timeout_s is not None else 24 * 3600.0
    deadline = time.monotonic() + limit
    while True:
        if cancel.is_set():
            raise Cancelled()
        try:
            lock.acquire(timeout=0.2)
            return _JoinLock(lock, started)
        except Timeout:
            if time.monotonic() > deadline:
                raise AgentreviewError(
                    f"gave up waiting {limit:.0f}s for an identical review in flight (lock {path})"
                ) from None


def _finish_cached(
    att: Attestation,
    ledger: Any,
    key: tuple[str, str, str, str],
    options: RunOptions,
    root: Path,
    reporter: Reporter,
    *,
    joined: bool,
    export_dir: str | None,
) -> RunResult:
    if options.pr:
        # The attestation is never changed; a pull request learned later is an annotation.
        with contextlib.suppress(Exception):
            ledger.set_pr(*key, options.pr)
    result = RunResult.done(att, ledger.entry_path(*key), cached=not joined, joined=joined)
    _maybe_export(result, options, root, export_dir, reporter)
    return result


def _check_export_dir(root: Path, export_dir: str | None) -> Path:
    """Where ``--export`` writes: verdict.exportDir, which must stay inside the repository."""
    from agentreview.store.export import confined_export_dir

    if not export_dir:
        raise AgentreviewError("--export needs verdict.exportDir in REVIEW.md (or use --export-to PATH)")
    try:
        return confined_export_dir(root, export_dir)
    except ValueError as exc:
        raise AgentreviewError(f"{exc} — fix verdict.exportDir in REVIEW.md or use --export-to PATH") from exc


def _maybe_export(
    result: RunResult, options: RunOptions, root: Path, export_dir: str | None, reporter: Reporter
) -> None:
    if not (options.export or options.export_to) or result.attestation is None:
        return
    from agentreview.store.export import export_path, write_export

    att = result.attestation
    if options.export_to:
        target = (options.cwd / options.export_to).resolve()
    else:
        target = export_path(att, _check_export_dir(root, export_dir))
    result.export_path = write_export(att, target)
    reporter.phase(f"exported {result.export_path}")


def _execute(
    *,
    run_id: str,
    options: RunOptions,
    reporter: Reporter,
    registry: Any,
    home: Path,
    root: Path,
    remote: str,
    manifest_path: Path,
    resolved: Any,
    binding_name: str,
    binding: Any,
    base_sha: str,
    msha: str,
    rubrics: list[dict[str, str]],
    rubric_paths: dict[str, Path],
    packs: list[dict[str, Any]],
    ledger: Any,
    inflight: InflightRegistry,
    cancel: threading.Event,
    substitute: Any,
    host_values: Any,
) -> RunResult:
    from agentreview.engine.compose import find_prior

    manifest = resolved.parsed.manifest
    run_dir = ledger.run_dir(remote, run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    executors = registry.objects("lane_executors")
    try:
        host = host_values(base_sha)
        ctx = LaneContext(
            review_id=manifest.id,
            repo_root=root,
            base_sha=base_sha,
            head_sha="",
            placeholders=host,
            run_dir=run_dir,
            cancel=cancel,
            executors=executors,
            headless=options.headless,
            requester_session_id=options.session_id,
            home=home,
        )
        # prepare: before the range freezes, sequentially
        steps = []
        for ref in binding.prepare:
            check = resolved.checks[ref].check
            steps.append(LanePlan(check=check, command=substitute(check.run, host, label=f"prepare check '{ref}'")))
        if steps:
            run_prepare(steps, ctx, reporter.phase)
        # freeze
        head_sha = git.rev_parse_commit(root, options.head or "HEAD")
        dirty = git.is_dirty(root)
        if dirty:
            reporter.phase("working tree has uncommitted changes to tracked files: the attestation will be dirty")
        values = {**host, "head": head_sha}
        ctx.head_sha = head_sha
        ctx.placeholders = values
        if not options.headless and any(resolved.checks[r].check.kind == "agent" for r in binding.checks):
            ctx.providers = registry.objects("providers")
            ctx.presets = _load_presets(home, ctx.providers)
        compose = not (options.no_cache or options.no_compose) and not dirty
        candidates: list[Attestation] | None = None
        plans: list[LanePlan] = []
        for ref in binding.checks:
            rc = resolved.checks[ref]
            check = rc.check
            plan = LanePlan(check=check)
            if check.kind == "command":
                plan.command = substitute(check.run, values, label=f"check '{ref}'")
            else:
                plan.rubric_path = rubric_paths.get(ref)
                digest = next((r["sha256"] for r in rubrics if r["check"] == ref), None)
                if compose and digest is not None:
                    if candidates is None:
                        candidates = list(ledger.candidates(remote, msha, binding_name))
                    pack_digest = (
                        next((p.digest for p in resolved.packs if p.entry.as_ == rc.namespace), None)
                        if rc.namespace
                        else None
                    )
                    plan.delta = find_prior(
                        candidates,
                        base_sha=base_sha,
                        head_sha=head_sha,
                        check_id=ref,
                        rubric_sha256=digest,
                        pack_digest=pack_digest,
                        is_ancestor=lambda a, b: git.is_ancestor(root, a, b),
                    )
                    if plan.delta is not None:
                        reporter.phase(
                            f"lane {ref}: delta review over {plan.delta.prior_head_sha[:10]}..{head_sha[:10]}"
                        )
            plans.append(plan)
        reporter.lanes_started([(p.check.id, p.check.kind, p.check.blocking) for p in plans])
        try:
            lanes = run_lanes(plans, ctx, on_finished=reporter.lane_finished)
        finally:
            reporter.close()
        if cancel.is_set():
            raise Cancelled()
        # build, sign, record
        requester: dict[str, Any] = {}
        if options.session_id:
            requester["sessionId"] = options.session_id
        author = git.commit_author(root, head_sha)
        if author:
            requester["gitAuthor"] = {"name": author[0], "email": author[1]}
        att = Attestation.build(
            run_id=run_id,
            review_id=manifest.id,
            manifest_sha=msha,
            binding=binding_name,
            repo_remote=remote,
            base_sha=base_sha,
            head_sha=head_sha,
            lanes=lanes,
            daemon=daemon_name(),
            rubrics=rubrics,
            packs=packs,
            dirty=dirty,
            requester=requester or None,
            pr=options.pr,
        )
        from agentreview.signing.signers import sign_attestation

        att, signing_error = sign_attestation(att, registry=registry, home=home, repo_root=root)
        if signing_error:
            reporter.phase(f"signing: {signing_error}")
        if cancel.is_set():
            raise Cancelled()
        host_info: dict[str, Any] = {"repoRoot": str(root), "manifestPath": str(manifest_path)}
        if manifest.verdict.exportDir:
            host_info["exportDir"] = str(root / manifest.verdict.exportDir)
        ledger_path = ledger.put(att, host_info)
        if options.pr:
            with contextlib.suppress(Exception):
                ledger.set_pr(remote, msha, binding_name, att.rangeSha, options.pr)
        result = RunResult.done(att, ledger_path, signing_error=signing_error)
        _maybe_export(result, options, root, manifest.verdict.exportDir, reporter)
        return result
    except PrepareFailed as exc:
        return _failed(run_id, str(exc))
    except Cancelled:
        superseded_by = inflight.superseded_by(run_id)
        return RunResult(
            run_id=run_id,
            status="cancelled",
            error="superseded by a newer run" if superseded_by else "review cancelled",
            superseded_by=superseded_by,
            exit_code=EXIT_INCOMPLETE,
        )
    finally:
        inflight.clear_marker(run_id)
        shutil.rmtree(run_dir, ignore_errors=True)


def _load_presets(home: Path, providers: dict[str, Any]) -> dict[str, Any]:
    try:
        from agentreview.host.presets import load_presets
    except ImportError:  # pragma: no cover - the presets module ships with the core
        return {}
    return load_presets(home, providers.keys())
