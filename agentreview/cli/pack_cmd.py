"""``agentreview pack check DIR``: validate a review pack the way a consumer would load it.

Rubrics go through resolution's confined reader, so an escaping symlink fails here first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.errors import EXIT_ERROR, AgentreviewError


def check_pack(directory: Path) -> dict[str, Any]:
    """Validate the pack in ``directory``; its description and digest record, else an AgentreviewError (exit 3)."""
    from agentreview.manifest.parse import parse_pack
    from agentreview.model.contracts import PackLoadError
    from agentreview.model.digests import PACK_DIGEST_ALG, pack_digest_sha256
    from agentreview.packs.confine import read_confined, read_pack_manifest

    ref = str(directory)
    root = directory.resolve()
    if not root.is_dir():
        raise AgentreviewError(f"{directory}: not a directory — pass the folder holding the pack's REVIEW.md")
    try:
        source = read_pack_manifest(root, ref)
    except PackLoadError as exc:
        raise AgentreviewError(str(exc), EXIT_ERROR) from exc
    pack = parse_pack(source, root / "REVIEW.md")
    rubrics: list[tuple[str, bytes]] = []
    problems: list[str] = []
    for check in pack.checks:
        if check.kind != "agent":
            continue
        try:
            rubrics.append((check.rubric, read_confined(root, check.rubric)))
        except PackLoadError as exc:
            problems.append(f"{root / 'REVIEW.md'}: check '{check.id}' rubric '{check.rubric}' {exc}")
    if problems:
        raise AgentreviewError("; ".join(problems), EXIT_ERROR)
    checks = []
    for check in pack.checks:
        row: dict[str, Any] = {"id": check.id, "kind": check.kind, "blocking": check.blocking}
        if check.kind == "agent":
            row.update(rubric=check.rubric, blockOn=check.blockOn, preset=check.preset)
        else:
            row.update(run=check.run)
        checks.append(row)
    digest = {
        "ref": ref,
        "id": pack.id,
        "version": pack.version,
        "alg": PACK_DIGEST_ALG,
        "sha256": pack_digest_sha256(source, rubrics),
    }
    return {"id": pack.id, "version": pack.version, "root": str(root), "checks": checks, "digest": digest}


def register(app: typer.Typer) -> None:
    pack_app = typer.Typer(
        help="Work with review packs (kind: review-pack).",
        no_args_is_help=True,
        epilog=epilog(["agentreview pack check packs/security"], [0]),
    )

    @pack_app.command(
        "check",
        epilog=epilog(
            ["agentreview pack check packs/security", "agentreview pack check packs/security --json"],
            [(0, "valid"), (3, "invalid or could not run")],
        ),
    )
    def check(
        directory: Annotated[Path, typer.Argument(help="The pack folder (holding its REVIEW.md).")],
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> int:
        """Validate a pack: schema, rubric confinement, and its digest over all checks."""
        info = check_pack(directory)
        if as_json:
            typer.echo(json.dumps(info, indent=2))
            return 0
        typer.echo(f"pack {info['id']} {info['version']}  ({info['root']})")
        width = max(len(c["id"]) for c in info["checks"])
        for c in info["checks"]:
            detail = f"rubric {c['rubric']}" if c["kind"] == "agent" else f"run: {c['run']}"
            advisory = "" if c["blocking"] else "  (advisory)"
            typer.echo(f"  {c['id']:<{width}}  {c['kind']:<7}  {detail}{advisory}")
        digest = info["digest"]
        typer.echo(f"digest: {digest['alg']} {digest['sha256']}")
        return 0

    app.add_typer(pack_app, name="pack")
