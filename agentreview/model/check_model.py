"""The base of a check kind a plugin contributes (``agentreview.api.CheckModel``): a pydantic model.

The parser checks that a subclass is as strict as the built-in kinds before reading a check with it; only a
manifest using a plugin's check kind, or a plugin declaring one, imports pydantic.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agentreview.model.manifest import DEFAULT_COMMAND_TIMEOUT_MS, ID_PATTERN, MAX_TIMEOUT_MS

__all__ = ["CheckModel"]


class CheckModel(BaseModel):
    """The base of a check kind a plugin contributes (``agentreview.api.CheckModel``).

    A lane executor for a new kind declares ``check_model``: a subclass that narrows ``kind``
    to its own literal and adds its own fields, for example::

        class NotebookCheck(CheckModel):
            kind: Literal["notebook"]
            path: str

    The parser validates such a check with that model, as strictly as the built-in kinds
    (unknown keys are errors, YAML ``"true"`` is not a boolean), and reports its errors with
    location and line like the rest. ``command`` and ``agent`` are the spec's kinds and keep
    their own records; a plugin cannot replace them. A plugin check never has ``effects``: only
    a command check may run in ``prepare``.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    id: Annotated[str, Field(pattern=ID_PATTERN, max_length=64)]
    kind: str
    description: str | None = None
    blocking: bool = True
    timeoutMs: Annotated[int, Field(gt=0, le=MAX_TIMEOUT_MS)] = DEFAULT_COMMAND_TIMEOUT_MS
