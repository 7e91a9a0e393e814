"""Test-wide guards and helpers for every test folder (tests/ and each plugin's tests/).

* Every test runs with its own ``AGENTREVIEW_HOME``, and module- or session-scoped fixtures with
  a session-wide one, so nothing touches the real ``~/.agentproto`` (ledger, signing key, pack
  cache, presets, plugin discovery cache).
* A test after which ``~/.agentproto`` appears (when it was absent at the start) fails,
  so the leak is named by the test that made it, and the session fails too.
* ``install_example(name)`` installs a distribution of ``docs/examples/`` on a fresh folder
  for ``PYTHONPATH``, so tests exercise the examples as installed plugins without touching
  the shared virtual environment.
* Hypothesis runs without its per-example deadline and its too-slow health check: both time an
  example by the wall clock, which a loaded CI machine stretches past any fixed limit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("agentreview", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentreview")

EXAMPLES = Path(__file__).resolve().parent / "docs" / "examples"

REAL_HOME_STATE = Path.home() / ".agentproto"


@pytest.fixture(autouse=True)
def agentreview_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("agentreview-home")
    monkeypatch.setenv("AGENTREVIEW_HOME", str(home))
    return home


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_existed] = REAL_HOME_STATE.exists()
    # Module- and session-scoped fixtures run before the per-test home above is set: they get a
    # session-wide one, so none of them reaches the real ~/.agentproto either.
    if "AGENTREVIEW_HOME" not in os.environ:
        session.config.stash[_session_home] = os.environ["AGENTREVIEW_HOME"] = tempfile.mkdtemp(
            prefix="agentreview-session-home-"
        )


@pytest.fixture(autouse=True)
def real_home_untouched(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test after which the real ``~/.agentproto`` first appears."""
    yield
    blamed = request.config.stash.get(_blamed, False)
    if not blamed and not request.config.stash.get(_existed, True) and REAL_HOME_STATE.exists():
        request.config.stash[_blamed] = True  # name only the first test, not every later one
        pytest.fail(f"this test (or a concurrent one) created the real {REAL_HOME_STATE}: set AGENTREVIEW_HOME")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if (made := session.config.stash.get(_session_home, None)) is not None:
        shutil.rmtree(made, ignore_errors=True)
    if not session.config.stash.get(_existed, True) and REAL_HOME_STATE.exists():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"a test wrote to the real {REAL_HOME_STATE}: isolate it with AGENTREVIEW_HOME", red=True)


_existed = pytest.StashKey[bool]()
_blamed = pytest.StashKey[bool]()
_session_home = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def install_example(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``install_example("agentreview-signer-example")`` -> a folder to put on ``PYTHONPATH``.

    It holds the example's package and a dist-info whose METADATA and entry_points.txt are
    generated from the example's own pyproject.toml: to ``importlib.metadata`` (and so to
    plugin discovery) the example is an installed distribution.
    """

    def install(name: str) -> Path:
        example = EXAMPLES / name
        target = tmp_path_factory.mktemp(f"site-{name}")
        project = tomllib.loads((example / "pyproject.toml").read_text())["project"]
        (package,) = [p for p in example.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
        shutil.copytree(package, target / package.name, ignore=shutil.ignore_patterns("__pycache__"))
        dist_info = target / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
        )
        groups = project["entry-points"]
        (dist_info / "entry_points.txt").write_text(
            "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in groups.items())
        )
        return target

    return install
