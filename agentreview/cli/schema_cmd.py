"""``agentreview schema <document>``: print the JSON Schema of a REVIEW.md, a review pack or an attestation."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema(
        document: Annotated[str, typer.Argument(help="review, review-pack or attestation.", show_default=False)],
    ) -> int:
        """Print the JSON Schema of a document, generated from the models the parser uses."""
        from agentreview.model.errors import UsageError
        from agentreview.model.schemas import DOCUMENTS, schema_text

        if document not in DOCUMENTS:
            raise UsageError(f"unknown document '{document}': use one of {', '.join(DOCUMENTS)}")
        typer.echo(schema_text(document), nl=False)
        return 0
