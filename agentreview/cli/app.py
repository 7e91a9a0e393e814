"""The Typer application: one module per command group, errors as one line on stderr.

Each command module exposes ``register(app)``. Usage errors exit 64, an
:class:`~agentreview.errors.AgentreviewError` exits with its own code, and no
traceback ever reaches the user (set ``AGENTREVIEW_DEBUG=1`` to see one).
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

try:  # typer >= 0.25 vendors click; older releases depend on it.
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc  # type: ignore[no-redef]

from agentreview import __version__
from agentreview.errors import EXIT_ERROR, EXIT_USAGE, AgentreviewError

COMMAND_MODULES = [
    "agentreview.cli.ledger_cmd",
    "agentreview.cli.key_cmd",
    "agentreview.cli.export_cmd",
    "agentreview.cli.check_cmd",
    "agentreview.cli.pack_cmd",
    "agentreview.cli.plugins_cmd",
    "agentreview.cli.schema_cmd",
    "agentreview.cli.verify_cmd",
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentreview {__version__}")
        raise typer.Exit(0)


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="agentreview",
        help="Attested code reviews over a frozen git range (agentreview/v1).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ) -> None:
        """Attested code reviews over a frozen git range (agentreview/v1)."""

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
    return app


def _fail(command: str, message: str, code: int) -> int:
    prefix = f"agentreview {command}" if command else "agentreview"
    sys.stderr.write(f"{prefix}: {message}\n")
    return code


def run_app(args: list[str]) -> int:
    app = build_app()
    command = typer.main.get_command(app)
    sub = next((a for a in args if not a.startswith("-")), "")
    try:
        result = command.main(args=args, prog_name="agentreview", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as exc:
        sys.stdout.write((exc.ctx.get_help() if exc.ctx else "") + "\n")
        return 0
    except click_exc.UsageError as exc:
        message = exc.format_message()
        known = sub in getattr(command, "commands", {})
        hint = f" (see 'agentreview {sub} --help')" if known else " (see 'agentreview --help')"
        return _fail(sub, message + hint, EXIT_USAGE)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return _fail(sub, "aborted", 2)
    except AgentreviewError as exc:
        return _fail(sub, str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return _fail(sub, "interrupted", 2)
    except Exception as exc:  # never a traceback for the user
        if os.environ.get("AGENTREVIEW_DEBUG"):
            raise
        return _fail(sub, f"internal error: {type(exc).__name__}: {exc}", EXIT_ERROR)
    return result if isinstance(result, int) else 0
