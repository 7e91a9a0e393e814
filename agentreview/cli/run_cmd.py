"""``agentreview run``: review a range, sign and record the attestation, optionally export it."""

# No `from __future__ import annotations` here: typer reads the command's parameters from their
# annotations, and written as strings each would be compiled again on every start (docs/performance.md).

import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentreview import __version__
from agentreview.cli.helptext import SummaryOption, choice, epilog
from agentreview.model.digests import json_text
from agentreview.model.errors import EXIT_ERROR, AgentreviewError, UsageError
from agentreview.report.neutral import neutralize

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.engine.result import RunResult

# How many last lines of a finding's detail (a command lane's output tail) the summary repeats.
DETAIL_LINES = 5
FAMILY_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}\Z")
PR_URL = re.compile(r"^(?:https?://)?github\.com/([^/]+/[^/]+)/pull/(\d+)(?:[/?#].*)?\Z")


def parse_pr_url(url: str) -> dict[str, Any]:
    match = PR_URL.match(url.strip())
    if not match or int(match.group(2)) < 1:
        raise UsageError("--pr must be https://github.com/<owner>/<repo>/pull/<n>")
    repo, number = match.group(1), int(match.group(2))
    return {"provider": "github", "repo": repo, "number": number, "url": f"https://github.com/{repo}/pull/{number}"}


def render_summary(result: "RunResult", *, lanes_shown: bool = False) -> str:
    """The final table of lanes with status and duration, and the verdict line (after a live display, only findings).

    Findings and command output are the change's words, so every line is neutralized.
    """
    lines: list[str] = []
    att = result.attestation
    if att is not None:
        width = max([len(lane.id) for lane in att.lanes] + [4])
        if not lanes_shown:
            lines.append(f"{'lane'.ljust(width)}  {'kind':7}  {'role':8}  {'status':8}  time")
        for lane in att.lanes:
            role = "blocking" if lane.blocking else "advisory"
            if not lanes_shown:
                lines.append(
                    f"{lane.id.ljust(width)}  {lane.kind:7}  {role:8}  {lane.status:8}  {lane.durationMs / 1000:.1f}s"
                    + (f"  (delta since {lane.composedFrom.headSha[:10]})" if lane.composedFrom else "")
                )
            elif lane.findings or (lane.error and lane.status in ("skipped", "timeout")):
                lines.append(f"{lane.id} ({role}, {lane.status}):")
            for finding in lane.findings:
                where = (
                    f" {finding.file}:{finding.line}"
                    if finding.file and finding.line
                    else (f" {finding.file}" if finding.file else "")
                )
                lines.append(f"  - [{finding.severity}]{where} {finding.title}")
                detail = [line for line in finding.detail.splitlines() if line.strip()]
                lines.extend(f"      {line[:200]}" for line in detail[-DETAIL_LINES:])
            if lane.error and lane.status in ("skipped", "timeout"):
                lines.append(f"  ! {lane.error.splitlines()[0]}")
        origin = " (cached)" if result.cached else (" (joined an identical run)" if result.joined else "")
        target = att.target
        signed = "signed" if att.attestor.signature else "unsigned"
        lines.append(
            f"verdict: {att.verdict}{origin} — {att.reviewId}/{att.binding} "
            f"{target.baseSha[:10]}..{target.headSha[:10]} ({signed}{', dirty' if att.dirty else ''})"
        )
        lines.extend(f"range:   {ref.line}" for ref in result.refs)
        if result.policy_from is not None:
            policy = result.policy_from
            lines.append(f"policy:  reviewed under {policy.exact}'s policy ({policy.commit[:10]})")
        if result.export_commit:
            lines.append(
                f"head:    {result.export_commit[:10]} only adds exports; this is the review of its parent "
                f"{target.headSha[:10]}"
            )
        if result.cached:
            lines.append(
                f"cached:  the review recorded at {att.createdAt} answered; nothing ran "
                "(run again with --no-cache)"
            )
        if result.cached_from:
            via = f" via {result.cached_from['remote']}" if result.cached_from.get("remote") else ""
            lines.append(f"cached from: {result.cached_from['principal']}{via} (team trust; signed by them)")
        if result.ledger_path:
            lines.append(f"ledger:  {result.ledger_path}")
        if result.export_path:
            lines.append(f"export:  {result.export_path}")
        if result.signing_error:
            lines.append(f"signing: {result.signing_error}")
    elif result.status == "cancelled":
        lines.append(f"cancelled: {result.error}" + (f" ({result.superseded_by})" if result.superseded_by else ""))
    else:
        lines.append(f"could not run: {result.error}")
    return neutralize("\n".join(lines))


def _detached_args(
    *,
    cwd: Path,
    manifest: Path | None,
    binding: str | None,
    base: str | None,
    head: str | None,
    export_to: Path | None,
    pr: str | None,
    flags: dict[str, bool],
    authored_by: list[str] | None = None,
    policy_from: str | None = None,
) -> list[str]:
    """The background run's arguments: the same review, with paths made absolute (it runs elsewhere)."""
    here = cwd.resolve()
    args = ["--cwd", str(here)]
    if manifest is not None:
        args += ["--manifest", str(here / manifest)]
    if export_to is not None:
        args += ["--export-to", str(here / export_to)]
    named = (("--binding", binding), ("--base", base), ("--head", head), ("--pr", pr), ("--policy-from", policy_from))
    for option, value in named:
        if value is not None:
            args += [option, value]
    for family in authored_by or []:
        args += ["--authored-by", family]
    return args + [flag for flag, on in flags.items() if on]


def _detach(args: list[str], cwd: Path, as_json: bool) -> int:
    """Start the review in its own session and print its runId at once (exit 0)."""
    from agentreview.runs.detach import start_detached

    if not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    run_id = start_detached(args, env=None)
    if as_json:
        sys.stdout.write(json.dumps({"runId": run_id, "status": "running"}) + "\n")
    else:
        sys.stdout.write(f"{run_id} running in the background — agentreview status {run_id}\n")
    return 0


def register(app: typer.Typer) -> None:
    @app.command(
        "run",
        epilog=epilog(
            ["agentreview run", "agentreview run --binding ci --export --json"],
            [(0, "pass"), 1, (2, "incomplete, cancelled or interrupted")],
        ),
    )
    def run(
        cwd: Annotated[Path, typer.Option("--cwd", help="Repository to review.")] = Path("."),
        manifest: Annotated[
            Path | None, typer.Option("--manifest", help="REVIEW.md path.", show_default="<root>/REVIEW.md")
        ] = None,
        binding: Annotated[
            str | None, typer.Option("--binding", help="Binding to run.", show_default="the only one, else 'default'")
        ] = None,
        base: Annotated[
            str | None, typer.Option("--base", help="Base ref.", show_default="merge-base with target.base")
        ] = None,
        head: Annotated[
            str | None,
            typer.Option(
                "--head", help="Head ref; another commit runs in a worktree of it.", show_default="HEAD"
            ),
        ] = None,
        no_cache: Annotated[
            bool, typer.Option("--no-cache", help="Ignore the verdict cache (and composition).")
        ] = False,
        no_compose: Annotated[bool, typer.Option("--no-compose", help="Never reuse a prior agent verdict.")] = False,
        headless: Annotated[
            bool, typer.Option("--headless", help="No reviewer host: agent lanes are skipped.")
        ] = False,
        supersede: Annotated[
            bool, typer.Option("--supersede", help="Cancel older in-flight runs of this line.")
        ] = False,
        export: Annotated[bool, typer.Option("--export", help="Write the export to verdict.exportDir.")] = False,
        export_to: Annotated[Path | None, typer.Option("--export-to", help="Write the export to PATH.")] = None,
        publish: Annotated[
            bool,
            typer.Option("--publish", help="Then add the attestation to refs/notes/agentreview and push it to origin."),
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON result object on stdout.")] = False,
        annotate: Annotated[
            str | None, typer.Option("--annotate", click_type=choice("github"), help="Emit CI annotations.")
        ] = None,
        pr: Annotated[str | None, typer.Option("--pr", help="Pull request URL known at review time.")] = None,
        detach: Annotated[
            bool, typer.Option("--detach", help="Start the review in the background; print its runId and return.")
        ] = False,
        run_id: Annotated[
            str | None, typer.Option("--run-id", hidden=True, help="The runId announced by --detach (internal).")
        ] = None,
        sarif: Annotated[
            Path | None, typer.Option("--sarif", help="Also write the findings as a SARIF 2.1.0 log to PATH.")
        ] = None,
        summary_to: SummaryOption = None,
        pre_push: Annotated[
            bool,
            typer.Option(
                "--pre-push",
                help="Review what a git push sends: each ref of the pre-push hook's stdin (or pre-commit's "
                "PRE_COMMIT_TO_REF), reviewed at its pushed commit; deletions and tags are not reviewed.",
            ),
        ] = False,
        authored_by: Annotated[
            list[str] | None,
            typer.Option(
                "--authored-by",
                metavar="FAMILY",
                help="A model family that wrote the change (anthropic, openai, moonshot, ...; repeatable): agent "
                "lanes run no reviewer of it, and no cached or composed verdict is reused.",
            ),
        ] = None,
        policy_from: Annotated[
            str | None,
            typer.Option(
                "--policy-from",
                metavar="REF",
                help="Review under REF's policy (e.g. refs/remotes/origin/main): the manifest, rubrics and path packs "
                "are read from REF's tree, so a change that edits them can pass 'verify --policy-from REF'.",
            ),
        ] = None,
    ) -> int:
        """Review base..head: prepare, freeze, run every lane in parallel, fold, sign, record."""
        from agentreview.engine.options import RunOptions, requester_from_env
        from agentreview.engine.run import run_review
        from agentreview.report.progress import make_reporter

        if annotate and as_json:
            raise UsageError("--annotate writes workflow commands to stdout; it cannot be combined with --json")
        pr_ref = parse_pr_url(pr) if pr else None
        families = [family.strip().lower() for family in authored_by or []]
        for family in families:
            if not FAMILY_NAME.match(family):
                raise UsageError(
                    f"--authored-by {family!r} is not a model family name (letters, digits and '-', e.g. anthropic)"
                )
        if run_id is not None:
            from agentreview.runs.registry import RUN_ID

            if not RUN_ID.match(run_id):
                raise UsageError(f"--run-id {run_id!r} must be review-<id>")
        if pre_push:
            given = {"--base": base, "--head": head, "--export": export or None, "--export-to": export_to,
                     "--publish": publish or None, "--json": as_json or None, "--annotate": annotate, "--pr": pr,
                     "--detach": detach or None, "--run-id": run_id, "--sarif": sarif, "--summary": summary_to}
            clash = [name for name, value in given.items() if value is not None]
            if clash:
                raise UsageError(f"--pre-push reviews each pushed commit; it cannot be combined with {clash[0]}")
        if detach:
            if annotate:
                raise UsageError("--detach cannot be combined with --annotate (the review's output goes to a log)")
            if sarif is not None or summary_to is not None:
                raise UsageError("--detach cannot be combined with --sarif or --summary (the review ends later)")
            args = _detached_args(
                cwd=cwd, manifest=manifest, binding=binding, base=base, head=head, export_to=export_to, pr=pr,
                flags={"--no-cache": no_cache, "--no-compose": no_compose, "--headless": headless,
                       "--supersede": supersede, "--export": export, "--publish": publish},
                authored_by=families,
                policy_from=policy_from,
            )
            return _detach(args, cwd, as_json)
        options = RunOptions(
            cwd=cwd,
            manifest=manifest,
            binding=binding,
            base=base,
            head=head,
            no_cache=no_cache,
            no_compose=no_compose,
            headless=headless,
            supersede=supersede,
            export=export,
            export_to=export_to,
            pr=pr_ref,
            session_id=requester_from_env(),
            run_id=run_id,
            authored_by=tuple(families),
            policy_from=policy_from,
        )
        if pre_push:  # each pushed ref reviewed at its commit; --pre-push refuses --base, --head and the rest
            from agentreview.cli.prepush import PushedRef, review_pushed

            def review_ref(ref: PushedRef, over: str | None) -> int:
                reporter = make_reporter(quiet=False)
                pushed = replace(options, head=ref.local_sha, pushed=True, pushed_over=over)
                return _report(run_review(pushed, reporter), reporter)

            stdin_text = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read(1 << 20)
            return review_pushed(cwd, review_ref, stdin_text=stdin_text, environ=os.environ)
        reporter = make_reporter(quiet=as_json)
        result = run_review(options, reporter)
        published, publish_error = _publish(result, cwd) if publish else (None, None)
        if annotate == "github":
            from agentreview.report.annotate import github_annotations

            for line in github_annotations(result):
                sys.stdout.write(line + "\n")
        if as_json:
            body = result.to_json()
            if publish:
                body["published"] = published
            sys.stdout.write(json_text(body) + "\n")
        else:
            _report(result, reporter)
            if published is not None:
                sys.stdout.write(f"published: the note of {str(published['commit'])[:12]} ({published['pushed']})\n")
        if publish_error is not None:
            sys.stderr.write(f"agentreview run: {publish_error}\n")
        code = _write_reports(result, cwd, sarif, summary_to, background=run_id is not None)
        return EXIT_ERROR if publish_error is not None and code == 0 else code


def _report(result: "RunResult", reporter: object) -> int:
    """Print the summary of one run (the error line to stderr when it could not run); its exit code."""
    from agentreview.report.progress import LiveReporter

    live = isinstance(reporter, LiveReporter) and not (result.cached or result.joined)
    if result.status == "failed":
        sys.stderr.write(neutralize(f"agentreview run: {result.error}") + "\n")
    else:
        sys.stdout.write(render_summary(result, lanes_shown=live) + "\n")
    return result.exit_code


def _publish(result: "RunResult", cwd: Path) -> tuple[dict[str, object] | None, str | None]:
    """``--publish``: share the attestation through git notes; ``(report, error)``.

    A failure turns a passing run's exit into 3; the attestation stays recorded for ``agentreview publish``.
    """
    if result.attestation is None or result.ledger_path is None:
        return None, None
    from agentreview.cli.publish_cmd import publish_attestation
    from agentreview.host.git import GitError, repo_root

    try:
        return publish_attestation(result.attestation, repo_root(cwd), "origin"), None
    except (AgentreviewError, GitError) as exc:
        return None, f"{exc} — the attestation is recorded; publish it later with 'agentreview publish'"


def _write_reports(
    result: "RunResult", cwd: Path, sarif: Path | None, summary: Path | None, *, background: bool
) -> int:
    """``--sarif`` and the job summary (``$GITHUB_STEP_SUMMARY`` not for a ``--detach`` run: its step is over);
    the verdict's exit, or 3 when a named report could not be written after a pass."""
    from agentreview.report.outputs import ReportTargets, write_reports

    targets = ReportTargets.resolve(sarif, summary, base=cwd, environ={} if background else None)
    if not targets.any:
        return result.exit_code
    from agentreview.report.sarif import run_sarif
    from agentreview.report.summary import run_summary

    att = result.attestation.to_json_dict() if result.attestation is not None else None
    return write_reports(
        targets,
        result.exit_code,
        sarif=lambda: run_sarif(att, version=__version__, error=result.error, status=result.status),
        summary=lambda: run_summary(att, status=result.status, error=result.error),
        command="run",
    )
