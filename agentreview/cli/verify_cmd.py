"""``agentreview verify``: decide, in CI, whether a range carries a valid attestation.

The report lists every check with its expected and actual value, so a failing gate says exactly what differed.
"""

# No `from __future__ import annotations` here: typer reads the command's parameters from their
# annotations, and written as strings each would be compiled again on every start (docs/performance.md).

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentreview import __version__
from agentreview.cli.helptext import SummaryOption, choice, epilog

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.verify.result import VerifyResult


def register(app: typer.Typer) -> None:
    @app.command(
        "verify",
        epilog=epilog(
            ["agentreview verify", "agentreview verify --policy-from refs/remotes/origin/main --require-signed"],
            [(0, "verified"), (1, "invalid"), 4, (5, "not exported (--if-exported)"), 6],
        ),
    )
    def verify_command(
        path: Annotated[
            Path | None,
            typer.Argument(
                help="An attestation .json file, or a directory of exports.", show_default="verdict.exportDir"
            ),
        ] = None,
        cwd: Annotated[
            Path, typer.Option("--cwd", help="Repository to verify; relative paths are resolved against it.")
        ] = Path("."),
        manifest: Annotated[
            Path | None, typer.Option("--manifest", help="REVIEW.md.", show_default="<root>/REVIEW.md")
        ] = None,
        base: Annotated[
            str | None, typer.Option("--base", help="Base ref.", show_default="merge-base(target.base, head)")
        ] = None,
        head: Annotated[str | None, typer.Option("--head", help="Head ref.", show_default="HEAD")] = None,
        binding: Annotated[str | None, typer.Option("--binding", help="Require this binding.")] = None,
        ci_binding: Annotated[
            bool,
            typer.Option(
                "--ci-binding",
                help="Require the policy's binding meant for CI: 'ci', else the only binding, else 'default'.",
            ),
        ] = False,
        verdict: Annotated[
            str, typer.Option(
                "--verdict", click_type=choice("pass", "block", "incomplete", "any"), help="Expected verdict."
            )
        ] = "pass",
        if_exported: Annotated[
            bool, typer.Option("--if-exported", help="No verdict.exportDir is 'not exported' (exit 5), not an error.")
        ] = False,
        allowed_signers: Annotated[
            Path | None,
            typer.Option(
                "--allowed-signers",
                help="allowed_signers file: OpenSSH format for ssh-ed25519 signatures, a signer plugin's own "
                "for its alg. A file inside the repository is trusted only "
                "as at --policy-from, or when unchanged since --base.",
                show_default=".agentproto/allowed_signers",
            ),
        ] = None,
        policy_from: Annotated[
            str | None,
            typer.Option(
                "--policy-from",
                metavar="REF",
                help="Read the review policy from commit REF (a full ref such as refs/remotes/origin/main; a short "
                "name two refs match is refused), never the working tree: the "
                "manifest at the same path (target.base, bindings, checks, exportDir, packs) and "
                ".agentproto/allowed_signers. A checkout whose manifest differs from REF's fails (exit 1).",
            ),
        ] = None,
        require_signed: Annotated[
            bool, typer.Option("--require-signed", help="Refuse an unsigned attestation or one that cannot be checked.")
        ] = False,
        full_chain: Annotated[
            bool,
            typer.Option(
                "--full-chain",
                help="Follow composedFrom to the end of the chain (every prior's own priors must be exported and "
                "valid), not one level deep as the spec's step 5.",
            ),
        ] = False,
        notes: Annotated[
            bool,
            typer.Option(
                "--notes",
                help="Find the attestation in the refs/notes/agentreview note of the head commit (see "
                "'agentreview publish'), not in export files: no export commit, no HEAD^ rule.",
            ),
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
        sarif: Annotated[
            Path | None,
            typer.Option(
                "--sarif",
                help="Also write a SARIF 2.1.0 log to PATH: each failed verification step, and the attestation's "
                "findings (on their lines only when its signature verified).",
            ),
        ] = None,
        summary_to: SummaryOption = None,
    ) -> int:
        """Verify an exported attestation against this checkout (no lane is re-run)."""
        from agentreview.report.neutral import neutralize, printable
        from agentreview.verify.gate import VerifyOptions, verify
        from agentreview.verify.report import json_text, render_text

        base_dir = cwd if cwd.is_absolute() else Path.cwd() / cwd
        result = verify(
            VerifyOptions(
                cwd=base_dir,
                path=path,
                manifest=manifest,
                base=base,
                head=head,
                binding=binding,
                ci_binding=ci_binding,
                verdict=verdict,
                if_exported=if_exported,
                allowed_signers=allowed_signers,
                policy_from=policy_from,
                require_signed=require_signed,
                full_chain=full_chain,
                notes=notes,
            )
        )
        if result.error:
            sys.stderr.write(printable(neutralize(f"agentreview verify: {result.error}")) + "\n")
        if as_json:
            typer.echo(json_text(result))
        elif result.reason not in ("error", "usage"):
            typer.echo(render_text(result))
        return _write_reports(result, base_dir, sarif, summary_to)


def _write_reports(result: "VerifyResult", base_dir: Path, sarif: Path | None, summary: Path | None) -> int:
    """``--sarif`` and the job summary (``--summary``, else ``$GITHUB_STEP_SUMMARY``). The exit
    code stays the verification's unless a named report could not be written after a pass (3)."""
    from agentreview.report.outputs import ReportTargets, write_reports

    targets = ReportTargets.resolve(sarif, summary, base=base_dir)
    if not targets.any:
        return result.exit_code
    from agentreview.report.sarif import verify_sarif
    from agentreview.report.summary import verify_summary
    from agentreview.verify.report import result_json

    report = result_json(result)
    return write_reports(
        targets,
        result.exit_code,
        sarif=lambda: verify_sarif(
            report, version=__version__, anchor=_anchor(result, base_dir), attestation=result.attestation
        ),
        summary=lambda: verify_summary(report, result.attestation),
        command="verify",
    )


def _anchor(result: "VerifyResult", base_dir: Path) -> str | None:
    """Where code scanning shows verify's results: the export, when it lies in the repository
    (else REVIEW.md, the policy that asked for it)."""
    if result.path is not None and not result.path.as_posix().startswith("refs/notes/"):
        try:
            return result.path.resolve().relative_to(base_dir.resolve()).as_posix()
        except ValueError:
            pass
    return "REVIEW.md"
