"""Writing the reports ``run`` and ``verify`` are asked for: the SARIF log and the job summary.

A named report that cannot be written turns a pass into exit 3: a gate must not pass without its artifact.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentreview.host.files import FileWriteError, atomic_write_text, describe_os_error
from agentreview.model.errors import EXIT_ERROR, EXIT_OK
from agentreview.model.record import record
from agentreview.report.neutral import neutralize

__all__ = ["ENV_STEP_SUMMARY", "ReportTargets", "append_text", "write_reports"]

ENV_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


@record
class ReportTargets:
    """Where the reports go; ``summary_required`` is true when the caller named the summary file."""

    sarif: Path | None = None
    summary: Path | None = None
    summary_required: bool = False

    @classmethod
    def resolve(
        cls, sarif: Path | None, summary: Path | None, *, base: Path, environ: Mapping[str, str] | None = None
    ) -> ReportTargets:
        """Relative paths are taken against ``base`` (the command's ``--cwd``); ``--summary``
        wins over ``GITHUB_STEP_SUMMARY``."""
        env = os.environ if environ is None else environ

        def absolute(path: Path) -> Path:
            return path if path.is_absolute() else base / path

        if summary is not None:
            return cls(absolute(sarif) if sarif else None, absolute(summary), True)
        from_env = env.get(ENV_STEP_SUMMARY, "")
        return cls(absolute(sarif) if sarif else None, Path(from_env) if from_env else None, False)

    @property
    def any(self) -> bool:
        return self.sarif is not None or self.summary is not None


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to the regular file ``path`` (created 0644), never through a symlink nor into a FIFO."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise FileWriteError(path, exc) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            refused = FileWriteError(path, OSError(errno.EINVAL, "not a regular file"))
            refused.message = f"cannot write {path}: not a regular file — name a regular file or a new one"
            raise refused
        data = text.encode("utf-8", "backslashreplace")
        while data:
            written = os.write(fd, data)
            data = data[written:]
    except FileWriteError:
        raise
    except OSError as exc:
        raise FileWriteError(path, exc) from exc
    finally:
        os.close(fd)


def write_reports(
    targets: ReportTargets,
    exit_code: int,
    *,
    sarif: Callable[[], dict[str, Any]],
    summary: Callable[[], str],
    command: str,
) -> int:
    """Write the SARIF log and the summary that ``targets`` name; return the exit code to use."""
    failed_required = False
    if targets.sarif is not None:
        try:
            text = json.dumps(sarif(), indent=2, ensure_ascii=True) + "\n"
            atomic_write_text(targets.sarif, text, mode=0o644)
        except (FileWriteError, OSError) as exc:
            _warn(command, "--sarif", targets.sarif, exc)
            failed_required = True
    if targets.summary is not None:
        try:
            append_text(targets.summary, summary() + "\n")
        except (FileWriteError, OSError) as exc:
            _warn(command, "--summary" if targets.summary_required else ENV_STEP_SUMMARY, targets.summary, exc)
            failed_required = failed_required or targets.summary_required
    if failed_required and exit_code == EXIT_OK:
        return EXIT_ERROR
    return exit_code


def _warn(command: str, source: str, path: Path, exc: OSError) -> None:
    message = str(exc) if isinstance(exc, FileWriteError) else describe_os_error(exc, path)
    sys.stderr.write(neutralize(f"agentreview {command}: {source}: {message}") + "\n")
