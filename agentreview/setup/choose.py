"""Which detected commands run here, and what stands in for one that cannot.

A check that cannot start on day one teaches people to bypass the hook; tox without its plugins and interpreters
skips everything and exits 0, so pytest stands in and each missing piece becomes a warning.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.setup.detect import DetectedCheck, toml_of
from agentreview.setup.hostprobe import HostProbe, Interpreter
from agentreview.setup.toxconf import ToxConfig, normalize_name, read_tox_config

__all__ = ["INSTALL_HINTS", "Choice", "choose_checks", "install_hint"]

INSTALL_HINTS = {
    "tox": "python3 -m pip install tox",
    "nox": "python3 -m pip install nox",
    "pytest": "python3 -m pip install pytest",
    "ruff": "python3 -m pip install ruff",
    "npm": "install Node.js, which brings npm (https://nodejs.org)",
    "npx": "install Node.js, which brings npx (https://nodejs.org)",
    "node": "install Node.js (https://nodejs.org)",
    "pnpm": "npm install -g pnpm",
    "yarn": "npm install -g yarn",
    "go": "install Go (https://go.dev/doc/install)",
    "cargo": "install Rust with rustup (https://rustup.rs)",
    "make": "install make (apt-get install make)",
}
_TEST_GROUPS = ("test", "tests", "testing")


def install_hint(program: str) -> str:
    """How to get ``program``: a command where there is a usual one."""
    return INSTALL_HINTS.get(program, f"install {program} or add its folder to PATH")


@dataclass
class Choice:
    """The command checks to write and what the user should know (one line each)."""

    checks: list[DetectedCheck] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def programs_of(run: str) -> list[str]:
    """The programs a shell command line starts: the first word (after ``VAR=value`` words) of each
    command of a list or pipeline. A word with a substitution or a redirection is not guessed at."""
    try:
        lexer = shlex.shlex(run, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:
        return []
    out: list[str] = []
    expect = True
    for word in words:
        if word and set(word) <= set("&|;()<>"):
            expect = word not in ("<", ">", ">>", "<<", ">&", "<&")
            continue
        if not expect or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            continue
        expect = False
        if not any(ch in word for ch in "$`"):
            out.append(word)
    return out


def program_of(run: str) -> str | None:
    """The program a shell command line starts first, or None when unclear."""
    found = programs_of(run)
    return found[0] if found else None


def _names(requirements: Any) -> set[str]:
    out: set[str] = set()
    for req in requirements if isinstance(requirements, list) else []:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req) if isinstance(req, str) else None
        if match:
            out.add(normalize_name(match.group(1)))
    return out


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _test_needs(pyproject: dict[str, Any]) -> set[str]:
    """The distributions the tests import: the project's dependencies and its test group or extra."""
    project = _table(pyproject, "project")
    needs = _names(project.get("dependencies"))
    extras = _table(project, "optional-dependencies")
    groups = _table(pyproject, "dependency-groups")
    for name in _TEST_GROUPS:
        needs |= _names(extras.get(name)) | _names(groups.get(name))
    own = project.get("name")
    needs.discard(normalize_name(own) if isinstance(own, str) else "")
    return needs


def _source_dir(root: Path, pyproject: dict[str, Any]) -> str | None:
    """``src`` for a src layout the tests import from; None when the tests find the sources already."""
    if _table(_table(_table(pyproject, "tool"), "pytest"), "ini_options").get("pythonpath"):
        return None
    src = root / "src"
    if src.is_dir() and not src.is_symlink() and any((p / "__init__.py").is_file() for p in src.iterdir()):
        return "src"
    return None


class _Planner:
    def __init__(self, root: Path, probe: HostProbe, text_of: Callable[[Path], str | None]) -> None:
        self.root, self.probe, self.text_of = root, probe, text_of
        self.pyproject = toml_of(text_of(root / "pyproject.toml"))
        self.choice = Choice()

    def warn(self, text: str) -> None:
        if text not in self.choice.warnings:
            self.choice.warnings.append(text)

    def keep(self, check: DetectedCheck) -> None:
        if all(c.id != check.id for c in self.choice.checks):
            self.choice.checks.append(check)

    def pytest_runner(self) -> tuple[str, Interpreter | None, str] | None:
        """(command, the interpreter running it when known, how it was found), or None."""
        found = self.probe.program("pytest")
        if found:
            interp = self.probe.script_interpreter(found)
            if interp is not None and interp.has_pytest:
                return "pytest -q", interp, f"{found}, Python {interp.version}"
        for name in ("python3", "python"):
            interp = self.probe.interpreter(name)
            if interp is not None and interp.has_pytest:
                return f"{name} -m pytest -q", interp, f"{interp.path}, Python {interp.version}"
        if found:  # a launcher whose interpreter cannot be read (a version manager's shim): it is there
            return "pytest -q", None, found
        return None

    def python_tests(self, check_id: str, why: str) -> None:
        runner = self.pytest_runner()
        if runner is None:
            self.warn(
                f"{why}, and no pytest is installed here, so REVIEW.md runs no tests: "
                f"{install_hint('pytest')} (and the project's test dependencies), then `agentreview init --force`"
            )
            return
        command, interp, host = runner
        src = _source_dir(self.root, self.pyproject)
        run = f"PYTHONPATH={src} {command}" if src else command
        reason = f"{why}; runs the tests with pytest" + (f", importing the package from ./{src}" if src else "")
        self.keep(DetectedCheck(check_id, run, reason, host))
        missing = sorted(_test_needs(self.pyproject) - interp.dists) if interp is not None else []
        if missing:
            self.warn(
                f"check '{check_id}': the tests need {', '.join(missing)}, which {interp.path if interp else ''} "
                f"lacks: {interp.path if interp else 'python3'} -m pip install {' '.join(missing)}"
            )

    def needs_node_modules(self) -> bool:
        text = self.text_of(self.root / "package.json") or ""
        declares = '"dependencies"' in text or '"devDependencies"' in text
        return declares and not (self.root / "node_modules").is_dir()

    def tox(self, candidate: DetectedCheck) -> None:
        config = read_tox_config(self.root, self.text_of) or ToxConfig("tox.ini", ("py",), (), {"py": None})
        missing = self.tox_missing(config)
        if not missing:
            envs = ", ".join(config.envs)
            reason = f"tox is configured ({config.source}) and what it needs is here: {envs}"
            self.keep(DetectedCheck("tox", "tox", reason, self.probe.program("tox") or ""))
            return
        needs = "; ".join(text for text, _ in missing)
        fixes = "; ".join(dict.fromkeys(fix for _, fix in missing))
        self.warn(f"not running tox: {needs} — to run tox instead: {fixes}, then set the check's run: to tox")
        self.python_tests("tests", f"tox is configured ({config.source}) but {needs}")

    def tox_missing(self, config: ToxConfig) -> list[tuple[str, str]]:
        """What a bare ``tox`` needs that is not here: (what, how to get it)."""
        tox = self.probe.program("tox")
        if tox is None:
            return [("tox is not installed", install_hint("tox"))]
        out: list[tuple[str, str]] = []
        if config.plugins:
            interp = self.probe.script_interpreter(tox)
            lacking = list(config.plugins) if interp is None else [p for p in config.plugins if p not in interp.dists]
            if lacking:
                out.append(
                    (f"tox lacks the plugin{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}",
                     f"install {' '.join(lacking)} beside tox (e.g. pip install {' '.join(lacking)})")
                )  # fmt: skip
        absent = sorted({i for i in config.interpreters.values() if i and self.probe.interpreter(i) is None})
        if absent:
            versions = " ".join(sorted({re.sub(r"^(python|pypy)", "", i) for i in absent}))
            out.append(
                (f"{', '.join(absent)} (for its environments) {'is' if len(absent) == 1 else 'are'} not here",
                 f"install those interpreters (e.g. uv python install {versions})")
            )  # fmt: skip
        return out

    def eslint_missing(self) -> bool:
        """eslint is neither installed in node_modules nor declared in package.json (``npx --no-install`` fails)."""
        if (self.root / "node_modules" / ".bin" / "eslint").exists():
            return False
        try:
            package = json.loads(self.text_of(self.root / "package.json") or "{}")
        except (ValueError, RecursionError):
            return True
        declared = [package.get(k) for k in ("dependencies", "devDependencies")] if isinstance(package, dict) else []
        return not any(isinstance(d, dict) and "eslint" in d for d in declared)

    def command(self, candidate: DetectedCheck) -> None:
        if candidate.id == "eslint" and self.eslint_missing():
            self.warn(
                "not writing check 'eslint' (eslint is configured): eslint is neither in node_modules nor a "
                "dependency in package.json — npm install --save-dev eslint, then `agentreview init --force`"
            )
            return
        program = program_of(candidate.run)
        found = self.probe.program(program) if program else None
        if program is None or found is not None:
            self.keep(DetectedCheck(candidate.id, candidate.run, candidate.reason, found or ""))
            if program in ("npm", "pnpm", "yarn", "npx") and self.needs_node_modules():
                manager = "npm" if program == "npx" else program
                self.warn(
                    f"package.json declares dependencies and node_modules is not here: run {manager} install "
                    "before the first review"
                )
            return
        self.warn(
            f"not writing check '{candidate.id}' ({candidate.reason}): {program} is not on PATH — "
            f"{install_hint(program)}, then `agentreview init --force`"
        )


def choose_checks(
    root: Path, candidates: list[DetectedCheck], probe: HostProbe, text_of: Callable[[Path], str | None]
) -> Choice:
    """The candidates that run here, in their order, with tox or nox replaced by pytest when they cannot."""
    planner = _Planner(root, probe, text_of)
    for candidate in candidates:
        if candidate.id == "tox":
            planner.tox(candidate)
        elif candidate.id == "nox" and probe.program("nox") is None:
            planner.warn(
                f"not running nox: nox is not installed — {install_hint('nox')}, then set the check's run: to nox"
            )
            planner.python_tests("tests", "noxfile.py is there but nox is not installed")
        elif candidate.id == "pytest":
            planner.python_tests("pytest", candidate.reason)
        else:
            planner.command(candidate)
    return planner.choice
