"""How a run reports progress: a live per-lane display on a terminal, plain lines in CI.

All on stderr (stdout stays for ``--json`` and ``--annotate``), every line neutralized: it may quote a reviewer.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Protocol, TextIO

from agentreview.report.neutral import neutralize

STATUS_MARK = {"pass": "✓", "fail": "✗", "timeout": "⏱", "skipped": "–", "running": "…", "waiting": " "}


class Reporter(Protocol):
    def phase(self, message: str) -> None: ...
    def lanes_started(self, lanes: list[tuple[str, str, bool]]) -> None: ...
    def lane_finished(self, result: Any) -> None: ...
    def close(self) -> None: ...


class PlainReporter:
    """One line per event: readable in CI logs, no control characters."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()

    def _line(self, text: str) -> None:
        with self._lock:
            self.stream.write(neutralize(f"[review] {text}") + "\n")
            self.stream.flush()

    def phase(self, message: str) -> None:
        self._line(message)

    def lanes_started(self, lanes: list[tuple[str, str, bool]]) -> None:
        names = ", ".join(lane_id for lane_id, _, _ in lanes)
        self._line(f"running {len(lanes)} lane(s) in parallel: {names}")

    def lane_finished(self, result: Any) -> None:
        role = "blocking" if result.blocking else "advisory"
        extra = f" — {result.error.splitlines()[0]}" if result.error else ""
        self._line(
            f"lane {result.id} ({result.kind}, {role}): {result.status} in {result.durationMs / 1000:.1f}s{extra}"
        )

    def close(self) -> None:
        pass


class QuietReporter(PlainReporter):
    """Reports nothing: with ``--json`` only errors reach stderr."""

    def _line(self, text: str) -> None:
        pass


class LiveReporter:
    """A rich live table of lanes with their status and elapsed time (terminals only)."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self._rows: dict[str, dict[str, Any]] = {}
        self._live: Any = None
        self._lock = threading.Lock()

    def phase(self, message: str) -> None:
        if self._live is None:
            from rich.markup import escape

            self.console.print(f"[dim]\\[review][/dim] {escape(neutralize(message))}", highlight=False)

    def _render(self) -> Any:
        from rich.table import Table

        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for column in ("", "lane", "kind", "role", "status", "time"):
            table.add_column(column)
        now = time.monotonic()
        for lane_id, row in self._rows.items():
            status = row["status"]
            elapsed = row.get("duration") or (now - row["start"])
            style = {"pass": "green", "fail": "red", "timeout": "yellow", "skipped": "yellow"}.get(status, "cyan")
            table.add_row(
                STATUS_MARK.get(status, "?"),
                lane_id,
                row["kind"],
                row["role"],
                f"[{style}]{status}[/{style}]",
                f"{elapsed:.1f}s",
            )
        return table

    def lanes_started(self, lanes: list[tuple[str, str, bool]]) -> None:
        from rich.live import Live

        start = time.monotonic()
        for lane_id, kind, blocking in lanes:
            self._rows[lane_id] = {
                "kind": kind,
                "role": "blocking" if blocking else "advisory",
                "status": "running",
                "start": start,
            }
        self._live = Live(self._render(), console=self.console, refresh_per_second=8, transient=False)
        self._live.__enter__()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while self._live is not None:
            with self._lock:
                if self._live is not None:
                    self._live.update(self._render())
            time.sleep(0.125)

    def lane_finished(self, result: Any) -> None:
        with self._lock:
            row = self._rows.setdefault(result.id, {"kind": result.kind, "role": "", "start": time.monotonic()})
            row["status"] = result.status
            row["duration"] = result.durationMs / 1000

    def close(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.update(self._render())
                self._live.__exit__(None, None, None)
                self._live = None


def make_reporter(*, quiet: bool = False) -> Reporter:
    if quiet:
        return QuietReporter()
    if sys.stderr.isatty() and not os.environ.get("CI") and os.environ.get("TERM") != "dumb":
        return LiveReporter()
    return PlainReporter()
