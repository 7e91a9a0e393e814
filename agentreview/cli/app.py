"""The Typer application: one module per command, every error one line on stderr.

Usage errors exit 64, an AgentreviewError its own code; never a traceback (``AGENTREVIEW_DEBUG=1`` shows one).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import typer

try:  # typer 0.24 (pinned, see pyproject.toml) depends on click; typer >= 0.25 vendors it.
    from click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from typer._click import exceptions as click_exc  # type: ignore[no-redef,import-not-found,unused-ignore]

from agentreview import __version__
from agentreview.cli.helptext import epilog, keep_argument_help
from agentreview.model.errors import EXIT_ERROR, EXIT_USAGE, AgentreviewError

# In the order a user meets them, as docs/cli.md lists them; the help lists them so.
COMMAND_MODULES = [
    "agentreview.cli.init_cmd",
    "agentreview.cli.check_cmd",
    "agentreview.cli.run_cmd",
    "agentreview.cli.status_cmd",
    "agentreview.cli.cancel_cmd",
    "agentreview.cli.verify_cmd",
    "agentreview.cli.ledger_cmd",
    "agentreview.cli.export_cmd",
    "agentreview.cli.publish_cmd",
    "agentreview.cli.fetch_cmd",
    "agentreview.cli.pr_cmd",
    "agentreview.cli.key_cmd",
    "agentreview.cli.presets_cmd",
    "agentreview.cli.pack_cmd",
    "agentreview.cli.schema_cmd",
    "agentreview.cli.plugins_cmd",
    "agentreview.cli.demo_cmd",
    "agentreview.cli.mcp_cmd",
]


class _InOrder(typer.core.TyperGroup):
    """Lists the commands in ``COMMAND_MODULES``' order (typer would list a group, ``pack``, last)."""

    def list_commands(self, ctx: Any) -> list[str]:
        order = [module.rsplit(".", 1)[1].removesuffix("_cmd") for module in COMMAND_MODULES]
        return sorted(self.commands, key=lambda name: order.index(name) if name in order else len(order))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentreview {__version__}")
        raise typer.Exit(0)


def _module_of(command: str) -> str | None:
    """The module that registers ``command``, by the naming rule ``agentreview.cli.<command>_cmd``."""
    module = f"agentreview.cli.{command}_cmd"
    return module if module in COMMAND_MODULES else None


def build_app(only: str | None = None) -> typer.Typer:
    """The app with every command, or with only ``only``: registering one spares importing and converting the rest."""
    keep_argument_help()
    app = typer.Typer(
        name="agentreview",
        cls=_InOrder,
        epilog=epilog(
            ["agentreview init", "agentreview run"],
            [
                (0, "pass, verified, success"),
                (1, "block; verify: invalid"),
                (2, "incomplete, cancelled or interrupted"),
                3,
                4,
                5,
                6,
                64,
            ],
        ),
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

    module = _module_of(only) if only else None
    for name in [module] if module else COMMAND_MODULES:
        importlib.import_module(name).register(app)
    return app


def _fail(command: str, message: str, code: int) -> int:
    from agentreview.report.neutral import neutralize  # a message may quote the change's text

    prefix = f"agentreview {command}" if command else "agentreview"
    sys.stderr.write(neutralize(f"{prefix}: {message}") + "\n")
    return code


def _command_for(sub: str) -> Any:
    """The click command to run: narrowed to ``sub`` when its module is known, else every command
    (help, and an unknown command reported with the full list)."""
    if _module_of(sub):
        narrow = typer.main.get_command(build_app(only=sub))
        if sub in getattr(narrow, "commands", {}):
            return narrow
    return typer.main.get_command(build_app())


def _command_path(command: object, args: list[str], sub: str) -> str:
    """``pack check`` rather than ``pack`` when the command is a group, so messages name what ran."""
    group = getattr(command, "commands", {}).get(sub)
    words = [a for a in args if not a.startswith("-")]
    if group is not None and hasattr(group, "commands") and len(words) > 1 and words[1] in group.commands:
        return f"{sub} {words[1]}"
    return sub


def run_app(args: list[str]) -> int:
    # The root takes no option with a value, so the first word is the command.
    sub = next((a for a in args if not a.startswith("-")), "")
    try:
        # Inside the try, so a broken command module is one line, not a traceback. Narrow only
        # `agentreview <command> ...`: `agentreview --help <command>` shows the full root help.
        command = _command_for(sub if args[:1] == [sub] else "")
        sub = _command_path(command, args, sub)
        result = command.main(args=args, prog_name="agentreview", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as exc:
        sys.stdout.write((exc.ctx.get_help() if exc.ctx else "") + "\n")
        return 0
    except click_exc.UsageError as exc:
        # One line, as every error: click lists a missing choice argument's choices on lines of their own.
        message = " ".join(line.strip() for line in exc.format_message().splitlines() if line.strip())
        known = sub.split(" ")[0] in getattr(command, "commands", {})
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
