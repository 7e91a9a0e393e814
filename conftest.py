"""Test-wide guards for every test folder (tests/ and each plugin's tests/).

* Every test runs with its own ``AGENTREVIEW_HOME``, so nothing touches the real
  ``~/.agentproto`` (ledger, signing key, pack cache, presets).
* A session that creates ``~/.agentproto`` anyway fails, naming the leak.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REAL_HOME_STATE = Path.home() / ".agentproto"


@pytest.fixture(autouse=True)
def agentreview_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("agentreview-home")
    monkeypatch.setenv("AGENTREVIEW_HOME", str(home))
    return home


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_existed] = REAL_HOME_STATE.exists()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not session.config.stash.get(_existed, True) and REAL_HOME_STATE.exists():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"a test wrote to the real {REAL_HOME_STATE}: isolate it with AGENTREVIEW_HOME", red=True)


_existed = pytest.StashKey[bool]()
