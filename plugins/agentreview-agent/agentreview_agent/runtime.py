"""The Node.js a CLI's shebang will run, resolved as the kernel will (absolute ``PATH`` entries only, never
one in the repository) and version-checked first: Kimi Code under a too-old Node dies with a stack trace."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from agentreview.api import find_program, reviewer_env, run_process_group

VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
PROBE_TIMEOUT_S = 60.0  # `node --version` on a loaded machine; once per interpreter


def shebang_interpreter(script: str, path: str) -> str | None:
    """The interpreter ``script``'s ``#!`` line names, as an absolute path (``env NAME`` resolved on the
    absolute entries of ``path``); None for a native binary, a relative interpreter or one not found."""
    try:
        with open(os.path.realpath(script), "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        names = [w for w in words[1:] if not w.startswith("-")]
        return find_program(names[0], path) if names else None
    return words[0] if os.path.isabs(words[0]) else None


def node_version(interpreter: str) -> tuple[int, int, int] | str:
    """``interpreter --version`` as numbers, or what it printed when that is no version."""
    proc = run_process_group(
        [interpreter, "--version"],
        cwd="/",
        env=reviewer_env({"NO_COLOR": "1"}),
        deadline=time.monotonic() + PROBE_TIMEOUT_S,
        kill_grace_s=1.0,
    )
    text = (proc.stdout_text() or proc.stderr_text()).strip()
    match = VERSION.search(text)
    if proc.returncode != 0 or not match:
        return text[:80] or f"no version (exit {proc.returncode})"
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def node_problem(binary: str, path: str, who: str, minimum: tuple[int, int]) -> str | None:
    """Why the Node that runs ``binary`` is too old for ``who`` (e.g. "Kimi Code"); None when fine or native."""
    interpreter = shebang_interpreter(binary, path)
    if interpreter is None or "node" not in Path(interpreter).name:
        return None
    found = node_version(interpreter)
    need = f"{who} needs Node ≥ {minimum[0]}.{minimum[1]}"
    if isinstance(found, str):
        return f"{need} ({interpreter} --version printed {found!r})"
    if found[:2] < minimum:
        return f"{need} (found v{found[0]}.{found[1]}.{found[2]} at {interpreter})"
    return None
