"""``agentreview schema <document>``: print the JSON Schema of a REVIEW.md, a review pack or an attestation."""

from __future__ import annotations

from typing import Annotated

import typer

from agentreview.cli.helptext import choice, epilog
from agentreview.model.schemas import DOCUMENTS, schema_text


def register(app: typer.Typer) -> None:
    @app.command(
        "schema",
        epilog=epilog(["agentreview schema review", "agentreview schema attestation > attestation.schema.json"], [0]),
    )
    def schema(
        document: Annotated[
            str,
            typer.Argument(
                metavar="DOCUMENT",
                click_type=choice(*DOCUMENTS),
                help=f"One of: {', '.join(DOCUMENTS)}.",
                show_default=False,
            ),
        ],
    ) -> int:
        """Print the JSON Schema of a document, generated from the models the parser uses."""
        typer.echo(schema_text(document), nl=False)
        return 0
