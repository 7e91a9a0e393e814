"""The ``notebook`` check kind: a lane fails when a committed notebook holds a cell that raised.

A Jupyter notebook saved after a run keeps each code cell's outputs; a cell that raised keeps
an output of type ``error``. Committing such a notebook ships a broken example. This lane
reads the notebook named by the check's ``path`` and reports one finding per failing cell.

What makes it a correct check kind is the contract around that:

* the executor registers through ``agentreview_register_lane_executors`` with a new ``kind``
  and declares ``check_model`` (a subclass of ``agentreview.api.CheckModel``), so the parser
  validates ``kind: notebook`` checks before anything runs;
* ``run_lane`` never raises, reads only a bounded regular file inside the repository
  (``read_regular_file`` refuses FIFOs, devices and files too large) and starts no process;
* it reports findings and never decides pass or fail: the core fails the lane when a finding
  is reported (this model declares no ``blockOn``) and records the lane as ``kind: notebook``.

Only ``agentreview.api`` is imported from agentreview, and the model module (pydantic) only
when the parser asks for it, so plugin discovery stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agentreview.api import (
    LaneExecutor,
    LaneOutcome,
    LaneRequest,
    ReportedFinding,
    UnreadableFileError,
    hookimpl,
    loads_strict,
    read_regular_file,
)

MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024


class NotebookExecutor:
    kind = "notebook"

    @property
    def check_model(self) -> type[Any]:
        from agentreview_checkkind_example.model import NotebookCheck

        return NotebookCheck

    def run_lane(self, request: LaneRequest) -> LaneOutcome:
        from agentreview_checkkind_example.model import NotebookCheck

        if request.cancel.is_set():
            return LaneOutcome.skipped("cancelled before it started")
        if not isinstance(request.check, NotebookCheck):
            return LaneOutcome.skipped(f"expected a notebook check, got kind '{request.check.kind}'")
        rel = request.check.path
        root = os.path.realpath(request.repo_root)
        path = os.path.realpath(os.path.join(root, rel))
        if os.path.commonpath([root, path]) != root:  # a symlink out of the repository
            return LaneOutcome.skipped(f"{rel} resolves outside the repository — refusing to read it")
        try:
            notebook = loads_strict(read_regular_file(path, limit=MAX_NOTEBOOK_BYTES))
        except UnreadableFileError as exc:
            return LaneOutcome.skipped(f"{rel} {exc}")
        except (ValueError, RecursionError) as exc:
            return LaneOutcome.skipped(f"{rel} is not a notebook (invalid JSON: {exc})")
        cells = notebook.get("cells") if isinstance(notebook, dict) else None
        if not isinstance(cells, list):
            return LaneOutcome.skipped(f"{rel} is not a notebook (no 'cells' list)")
        code = [(n, c) for n, c in enumerate(cells, 1) if isinstance(c, dict) and c.get("cell_type") == "code"]
        findings = [_finding(rel, number, error) for number, cell in code for error in _errors(cell)]
        summary = f"{len(code)} code cells, {len(findings)} error output(s)"
        return LaneOutcome.reported(findings, summary=summary)


def _errors(cell: dict[str, Any]) -> list[dict[str, Any]]:
    outputs = cell.get("outputs")
    if not isinstance(outputs, list):
        return []
    return [o for o in outputs if isinstance(o, dict) and o.get("output_type") == "error"]


def _finding(rel: str, number: int, error: dict[str, Any]) -> ReportedFinding:
    name, value = str(error.get("ename") or "Error"), str(error.get("evalue") or "")
    return ReportedFinding(
        severity="high",
        title=f"cell {number} raised {name}",
        detail=value[:2000],
        file=rel,
    )


@hookimpl
def agentreview_register_lane_executors(register: Callable[[LaneExecutor], None]) -> None:
    register(NotebookExecutor())
