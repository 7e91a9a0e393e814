"""``agentreview check``: validate a REVIEW.md (or a review pack) and show what each binding would run.

Side-effect free; an invalid manifest exits 3 with every problem on stderr. Plugins load only when needed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.errors import EXIT_ERROR, EXIT_OK, UsageError
from agentreview.report.neutral import neutralize

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.model.manifest import Binding, ReviewPack
    from agentreview.packs.resolve import ResolvedReview


def register(app: typer.Typer) -> None:
    @app.command(
        "check",
        epilog=epilog(
            ["agentreview check", "agentreview check --binding ci --json"],
            [(0, "valid"), (3, "invalid (one line per problem) or could not run")],
        ),
    )
    def check(
        manifest: Annotated[
            Path | None,
            typer.Option("--manifest", "-m", help="The REVIEW.md to check.", show_default="<root>/REVIEW.md"),
        ] = None,
        cwd: Annotated[
            Path | None, typer.Option("--cwd", help="Run as if started in this directory.", show_default="here")
        ] = None,
        binding: Annotated[str | None, typer.Option("--binding", "-b", help="Show only this binding.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> int:
        """Validate a REVIEW.md and show its bindings, lanes and packs."""
        return run_check(manifest=manifest, cwd=cwd, binding=binding, as_json=as_json)


def run_check(*, manifest: Path | None, cwd: Path | None, binding: str | None, as_json: bool) -> int:
    from agentreview.host.home import home_dir
    from agentreview.manifest.parse import (
        ManifestError,
        load_frontmatter,
        parse_pack,
        parse_review,
        read_manifest_bytes,
    )

    base = (cwd or Path.cwd()).absolute()
    if not base.is_dir():
        raise UsageError(f"--cwd {base} is not a directory")
    root = _repo_root(base)
    if manifest is None:
        if root is None:
            raise UsageError(f"{base} is not inside a git repository; pass --manifest PATH")
        path = root / "REVIEW.md"
    else:
        path = manifest if manifest.is_absolute() else base / manifest
    path = path.absolute()
    try:
        source = read_manifest_bytes(path)
        try:
            parsed = parse_review(source, path, home=home_dir())  # a memo hit answers without YAML or pydantic
        except ManifestError:
            if load_frontmatter(source, path).data.get("kind") != "review-pack":
                raise
            if binding is not None:
                raise UsageError("--binding applies to a review manifest; this file is a review pack") from None
            return _emit(_pack_view(parse_pack(source, path, home=home_dir()), path), as_json)
        resolved = _resolve(parsed, root)
        view = _review_view(parsed, resolved, root, binding)
    except ManifestError as exc:
        for line in exc.lines():
            sys.stderr.write(neutralize(line) + "\n")  # compiler style, `path:line: ...`, which editors link
        if as_json:
            problems = [
                {"location": p.location, "line": p.line, "message": p.message, "fix": p.fix} for p in exc.problems
            ]
            sys.stdout.write(json.dumps({"valid": False, "path": str(path), "problems": problems}, indent=2) + "\n")
        return EXIT_ERROR
    view["warnings"] = [*resolved.warnings, *_warnings(view, resolved)]
    for warning in view["warnings"]:
        sys.stderr.write(neutralize(f"agentreview check: warning: {warning}") + "\n")
    return _emit(view, as_json)


def _warnings(view: dict[str, Any], resolved: ResolvedReview) -> list[str]:
    """What the shown bindings' lanes need that this host lacks (see ``setup.readiness``)."""
    from agentreview.host.home import home_dir
    from agentreview.host.presets import presets_path
    from agentreview.setup.readiness import lane_warnings

    refs = dict.fromkeys(step["id"] for b in view["bindings"] for step in [*b["prepare"], *b["lanes"]])
    checks = [resolved.checks[ref].check for ref in refs]

    def presets() -> tuple[Any, Any]:
        from agentreview.host.presets import load_presets
        from agentreview.plugins.registry import load_registry

        registry = resolved.parsed.registry or load_registry()
        providers = registry.objects("providers")
        return load_presets(home_dir(), providers), providers

    return lane_warnings(checks, presets, str(presets_path(home_dir())))


def _repo_root(base: Path) -> Path | None:
    from agentreview.host.git import GitError, repo_root

    try:
        return repo_root(base)
    except GitError:
        return None


def _resolve(parsed: ParsedReview, root: Path | None) -> ResolvedReview:
    """Resolve packs exactly as a run does; a pack that cannot load is a one-line error (exit 3)."""
    from agentreview.packs.resolve import resolve_review

    if not parsed.manifest.uses:
        return resolve_review(parsed)
    from agentreview.host.home import home_dir
    from agentreview.model.contracts import PackLoadContext
    from agentreview.plugins.registry import load_registry

    manifest_dir = parsed.path.parent if parsed.path else Path.cwd()
    ctx = PackLoadContext(repo_root=root or manifest_dir, manifest_dir=manifest_dir, home=home_dir())
    return resolve_review(parsed, registry=parsed.registry or load_registry(), ctx=ctx)


def _review_view(parsed: ParsedReview, resolved: ResolvedReview, root: Path | None, only: str | None) -> dict[str, Any]:
    from agentreview.manifest.rules import resolve_binding

    manifest = parsed.manifest
    bindings = resolved.bindings
    if only is not None:
        name, chosen = resolve_binding(manifest.id, bindings, only)
        bindings = {name: chosen}
    checks = {cid: (rc.check, rc.rubric_path()) for cid, rc in resolved.checks.items()}
    registry = parsed.registry  # set only when a plugin's check kind is used: which plugin provides each kind
    providers = {kind: entry.plugin for kind, entry in registry.lane_executors.items()} if registry is not None else {}
    return {
        "valid": True,
        "kind": "review",
        "path": str(parsed.path) if parsed.path else None,
        "root": str(root) if root else None,
        "id": manifest.id,
        "manifestSha": parsed.manifest_sha,
        "target": {"kind": manifest.target.kind, "base": manifest.target.base},
        "exportDir": manifest.verdict.exportDir,
        "bindings": [_binding_view(name, b, checks, providers) for name, b in bindings.items()],
        "packs": [_pack_digest_view(p) for p in resolved.packs],
    }


def _binding_view(
    name: str, binding: Binding, checks: dict[str, tuple[Any, Path | None]], providers: dict[str, str]
) -> dict[str, Any]:
    def step(ref: str) -> dict[str, Any]:
        check, rubric_path = checks[ref]
        out: dict[str, Any] = {
            "id": ref,
            "kind": check.kind,
            "blocking": check.blocking,
            "timeoutMs": check.timeoutMs,
        }
        if check.kind == "command":
            out["run"] = check.run
            if check.cwd:
                out["cwd"] = check.cwd
        elif check.kind != "agent":  # a kind a plugin contributes: its own fields, and who provides it
            own = check.model_dump(mode="json", exclude={"id", "kind", "description", "blocking", "timeoutMs"})
            out.update(plugin=providers.get(check.kind), fields=own)
        else:
            out.update(
                preset=check.preset,
                fallbackPresets=list(check.fallbackPresets),
                blockOn=check.blockOn,
                rubric=check.rubric,
                rubricPath=str(rubric_path) if rubric_path else None,
            )
        return out

    return {
        "name": name,
        "on": binding.on,
        "quorum": binding.quorum,
        "prepare": [step(ref) for ref in binding.prepare],
        "lanes": [step(ref) for ref in binding.checks],
    }


def _pack_digest_view(pack: Any) -> dict[str, Any]:
    return {
        "ref": pack.entry.pack,
        "as": pack.entry.as_,
        "id": pack.pack.id,
        "version": pack.pack.version,
        "form": pack.form,
        "trusted": pack.loaded.trusted,
        "alg": pack.digest.get("alg"),
        "sha256": pack.digest.get("sha256"),
    }


def _pack_view(pack: ReviewPack, path: Path) -> dict[str, Any]:
    return {
        "valid": True,
        "kind": "review-pack",
        "path": str(path),
        "id": pack.id,
        "version": pack.version,
        "checks": [
            {
                "id": c.id,
                "kind": c.kind,
                "blocking": c.blocking,
                "timeoutMs": c.timeoutMs,
                **({"run": c.run} if c.kind == "command" else {"preset": c.preset, "blockOn": c.blockOn}),
                **({"rubric": c.rubric} if c.kind == "agent" else {}),
            }
            for c in pack.checks
        ],
    }


def _emit(view: dict[str, Any], as_json: bool) -> int:
    if as_json:
        typer.echo(json.dumps(view, indent=2))
    else:
        # a check's `run` is the change's text: none of its lines may read as a CI workflow command
        typer.echo(neutralize("\n".join(_pack_text(view) if view["kind"] == "review-pack" else _review_text(view))))
    return EXIT_OK


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g}s"


def _lane_text(lane: dict[str, Any]) -> str:
    role = "blocking" if lane["blocking"] else "advisory"
    text = f"    {lane['id']}  {lane['kind']}  {role}  timeout {_seconds(lane['timeoutMs'])}"
    if lane["kind"] == "agent":
        fallbacks = ", ".join(lane["fallbackPresets"]) or "-"
        text += (
            f"  preset {lane['preset']}  fallbacks {fallbacks}  blockOn {lane['blockOn']}"
            f"  rubric {lane['rubricPath'] or lane['rubric']}"
        )
    elif "fields" in lane:
        own = "".join(f"  {key} {json.dumps(value)}" for key, value in lane["fields"].items())
        text += f"  plugin {lane['plugin'] or '-'}{own}"
    else:
        text += f"  run: {lane['run']}"
    return text


def _review_text(view: dict[str, Any]) -> list[str]:
    out = [
        f"review {view['id']}: valid",
        f"  manifest     {view['path']}",
        f"  manifestSha  {view['manifestSha']}",
        f"  repo root    {view['root'] or '(not a git repository)'}",
        f"  target       {view['target']['kind']}, base {view['target']['base']}",
    ]
    if view["exportDir"]:
        out.append(f"  exportDir    {view['exportDir']}")
    for b in view["bindings"]:
        out.append(f"binding {b['name']}  (on: {b['on'] or '-'}, quorum {b['quorum']})")
        out.append("  prepare:" + ("" if b["prepare"] else " (none)"))
        out += [_lane_text(step) for step in b["prepare"]]
        out.append("  lanes:")
        out += [_lane_text(lane) for lane in b["lanes"]]
    if view["packs"]:
        out.append("packs:")
        for p in view["packs"]:
            trust = "trusted" if p["trusted"] else "untrusted"
            out.append(f"  {p['ref']} as {p['as']}: {p['id']}@{p['version']}  {trust}  {p['alg']} {p['sha256']}")
    else:
        out.append("packs: (none)")
    return out


def _pack_text(view: dict[str, Any]) -> list[str]:
    out = [f"review-pack {view['id']}@{view['version']}: valid", f"  manifest  {view['path']}", "checks:"]
    for c in view["checks"]:
        role = "blocking" if c["blocking"] else "advisory"
        extra = f"run: {c['run']}" if c["kind"] == "command" else f"preset {c['preset'] or '-'}  rubric {c['rubric']}"
        out.append(f"  {c['id']}  {c['kind']}  {role}  timeout {_seconds(c['timeoutMs'])}  {extra}")
    return out
