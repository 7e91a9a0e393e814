"""No install instruction of the project resolves to the unrelated PyPI project named ``agentreview``.

``agentreview`` on PyPI is someone else's ("Generate LLM-friendly code review payloads from git
diffs", with its own ``agentreview`` command): a gate that ran ``pip install agentreview`` would run
a stranger's code on the checkout. This project's core is ``agentreview-core``. The scan covers
every place a person or a machine takes an install line from: README, docs (and the example
distributions), action.yml, the pre-commit hooks file, scripts, the core's own hints, what
``agentreview init --ci github`` writes in a real repository, and every pyproject's dependencies.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import agentreview
from agentreview import DISTRIBUTION, PROJECT_HOME

ROOT = Path(__file__).resolve().parents[1]
# `agentreview` as a requirement: after `pip install` (options and other names may come between),
# or with a version or extras (`agentreview==`, `agentreview[`, `agentreview>=` ...). A name that
# goes on (`agentreview-core`, `agentreview_agent`, `agentreview.api`) is another name.
NAME = r"(?<![\w./-])agentreview(?![\w.-])"
PIP_INSTALL = re.compile(r"pip3?\s+install\b[^\n;&|`]*?" + NAME + r"(?!\s*(?:run|verify|init|check|demo)\b)")
PINNED = re.compile(NAME + r"(?:\s*(?:==|>=|<=|~=|!=)|\[)")
SCANNED = ["README.md", "action.yml", ".pre-commit-hooks.yaml", "mkdocs.yml", "pyproject.toml"]


def offending(text: str) -> list[str]:
    """The install instructions in ``text`` that name the unrelated distribution."""
    return [m.group(0) for pattern in (PIP_INSTALL, PINNED) for m in pattern.finditer(text)]


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED if (ROOT / name).exists()]
    files += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "docs" / "examples").rglob("*.toml"))
    files += [*sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file()), ROOT / ".ci" / "run"]
    files += sorted((ROOT / "plugins").glob("*/pyproject.toml"))
    files += sorted(p for p in (ROOT / "agentreview").rglob("*.py") if "demo" not in p.relative_to(ROOT).parts)
    return files


def test_the_scan_finds_the_unrelated_distribution_however_it_is_written() -> None:
    for line in (
        "pip install agentreview",
        'python -m pip install "agentreview==0.1.0"',
        "pip install -q --upgrade agentreview",
        "pip install 'agentreview[mcp]'",
        'dependencies = ["agentreview>=0.1.0"]',
        "pip install pytest agentreview",
    ):
        assert offending(line), line
    for line in (
        "pip install agentreview-core",
        "pip install 'agentreview-core[mcp]'",
        'dependencies = ["agentreview-core>=0.1.0"]',
        "pip install agentreview-command",
        "pip install ./plugins/agentreview-agent",
        "import agentreview.api",
        "pip install -e . && agentreview verify",
    ):
        assert not offending(line), line


def test_no_install_instruction_in_the_repository_names_the_unrelated_distribution() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in scanned_files()
        if (hits := offending(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_every_distribution_depends_on_the_core_by_its_name() -> None:
    projects = [ROOT / "pyproject.toml", *(ROOT / "plugins").glob("*/pyproject.toml")]
    projects += (ROOT / "docs" / "examples").glob("*/pyproject.toml")
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert core["name"] == DISTRIBUTION == "agentreview-core"
    assert core["urls"] == {"Homepage": PROJECT_HOME}
    dependents = 0
    for path in projects:
        project = tomllib.loads(path.read_text())["project"]
        requirements = [*project.get("dependencies", [])]
        for extra in project.get("optional-dependencies", {}).values():
            requirements += extra
        names = {re.split(r"[\s\[<>=!~;@]", req, maxsplit=1)[0].lower().replace("_", "-") for req in requirements}
        assert "agentreview" not in names, path
        dependents += DISTRIBUTION in names
    assert dependents == len(projects) - 1  # every plugin and example, all but the core itself


def test_the_projects_home_is_named_once_and_used_where_a_url_is_needed() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert f"repo: {PROJECT_HOME}" in hooks and "<owner>" not in hooks
    assert PROJECT_HOME.startswith("https://github.com/") and agentreview.PROJECT_NAME == "agentreview"


def test_the_mcp_hint_installs_the_projects_extra() -> None:
    from agentreview.mcp import INSTALL_HINT

    assert INSTALL_HINT.endswith(f"pip install '{DISTRIBUTION}[mcp]'") and not offending(INSTALL_HINT)


def _init_files(tmp_path: Path) -> dict[str, str]:
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "GIT_"))}
    env.update(AGENTREVIEW_HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "a@example.test"],
        ["config", "user.name", "A"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=30, env=env)
    (repo / "Makefile").write_text("test:\n\ttrue\n")
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "init", "--ci", "github", "--hook", "none"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return {
        str(p.relative_to(repo)): p.read_text()
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }


def test_what_init_writes_installs_this_project(tmp_path: Path) -> None:
    written = _init_files(tmp_path)
    assert ".github/workflows/agentreview.yml" in written and "REVIEW.md" in written
    found = {name: hits for name, text in written.items() if (hits := offending(text))}
    assert found == {}
