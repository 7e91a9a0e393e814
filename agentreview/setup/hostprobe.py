"""What this host can run: programs on PATH, interpreters that start, what an interpreter has installed.

Being on PATH is not enough (a pyenv shim of a missing version exits 127), so interpreters are asked, bounded.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentreview.host.files import UnreadableFileError, read_regular_file
from agentreview.host.procs.group import run_process_group
from agentreview.host.programs import find_program
from agentreview.model.record import record

__all__ = ["HostProbe", "Interpreter"]

PROBE_TIMEOUT_S = 20.0
_PROBE = (
    "import importlib.metadata as m, importlib.util as u, json, sys\n"
    "names = sorted({(d.metadata['Name'] or '').lower().replace('_', '-').replace('.', '-')\n"
    "                for d in m.distributions()})\n"
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'pytest': u.find_spec('pytest') is not None,"
    " 'dists': names}))\n"
)


@record
class Interpreter:
    """A Python that starts: its absolute path, version and the distributions it has installed."""

    path: str
    version: str
    has_pytest: bool
    dists: frozenset[str]


@dataclass
class HostProbe:
    """Asks this host (``path``: the PATH to search, default this process's) from ``cwd``."""

    cwd: Path
    path: str | None = None
    _interpreters: dict[str, Interpreter | None] = field(default_factory=dict)

    def program(self, name: str) -> str | None:
        """The absolute path of ``name`` on an absolute PATH entry, or None."""
        return find_program(name, self.path)

    def interpreter(self, name_or_path: str) -> Interpreter | None:
        """The Python ``name_or_path`` (a PATH name or an absolute path) when it starts, else None."""
        if name_or_path in self._interpreters:
            return self._interpreters[name_or_path]
        found = name_or_path if os.path.isabs(name_or_path) else self.program(name_or_path)
        result = self._ask(found) if found else None
        self._interpreters[name_or_path] = result
        return result

    def _ask(self, python: str) -> Interpreter | None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        if self.path is not None:
            env["PATH"] = self.path
        # cwd: a version manager's shim reads the folder's version file, as the lane's will
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        proc = run_process_group([python, "-I", "-c", _PROBE], cwd=self.cwd, env=env, deadline=deadline, kill_grace_s=0)
        try:
            data = json.loads(proc.stdout_text()) if proc.returncode == 0 else None
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        dists = frozenset(str(d) for d in data.get("dists", []) if d)
        return Interpreter(python, str(data.get("version", "")), bool(data.get("pytest")), dists)

    def script_interpreter(self, program: str) -> Interpreter | None:
        """The Python that runs the installed script ``program`` (its ``#!`` line), when it starts."""
        try:
            head = read_regular_file(Path(program), limit=1 << 16)
        except (UnreadableFileError, OSError):
            return None
        first = head.split(b"\n", 1)[0]
        if not first.startswith(b"#!"):
            return None
        words = first[2:].decode("utf-8", "replace").split()
        if not words:
            return None
        if os.path.basename(words[0]) == "env" and len(words) > 1:
            return self.interpreter(words[1])
        return self.interpreter(words[0]) if os.path.isabs(words[0]) else None
