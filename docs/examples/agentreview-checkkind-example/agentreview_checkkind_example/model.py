"""The manifest schema of a ``kind: notebook`` check.

agentreview validates every ``kind: notebook`` entry of a REVIEW.md with this model, as
strictly as its own kinds: an unknown key, a missing ``path`` or a ``path`` that leaves the
repository is a manifest error (exit 3) with its location and line, before anything runs.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from pydantic import field_validator

from agentreview.api import CheckModel


class NotebookCheck(CheckModel):
    """``id``, ``kind``, ``description``, ``blocking`` and ``timeoutMs`` come from CheckModel."""

    kind: Literal["notebook"]
    path: str  # the .ipynb file, relative to the repository root

    @field_validator("path")
    @classmethod
    def _inside_the_repository(cls, value: str) -> str:
        parts = PurePosixPath(value).parts
        if not value.endswith(".ipynb"):
            raise ValueError(f"path {value!r} is not a .ipynb notebook")
        if not parts or value.startswith("/") or ".." in parts or "\\" in value:
            raise ValueError(f"path {value!r} must be relative to the repository root, without '..'")
        return value
