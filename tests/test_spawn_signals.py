"""A signal that raises while a child is being started never loses the child.

The run's handler raises :class:`Interrupted` wherever the main thread stands. To land it in the one
place that used to leak (inside ``subprocess.Popen``, after the fork), ``Popen`` is wrapped so that,
once the real child exists, it sends the real SIGTERM to this process and runs Python code, where
the handler fires. The child must be gone once the exception reaches the caller.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from reviewrepo import processes_matching, wait_for

from agentreview.engine.interrupt import Interrupted, armed, handle_signals
from agentreview.host.procs import group, spawn


def signalled(base: type[subprocess.Popen[Any]]) -> type[subprocess.Popen[Any]]:
    """``base``, then SIGTERM to this process before ``__init__`` returns."""

    class Signalled(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # Python code after the signal: the handler runs here
                time.sleep(0)

    return Signalled


@pytest.fixture(name="signalled")
def signalled_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(spawn, "_Popen", signalled(spawn._Popen))  # spawn.run's
    monkeypatch.setattr(subprocess, "Popen", signalled(subprocess.Popen))  # the process group's
    with handle_signals(threading.Event()), armed():
        yield


def unique_sleep() -> tuple[list[str], str]:
    nap = f"300.{os.getpid()}{time.monotonic_ns() % 100000}"
    return ["sleep", nap], nap


def test_run_kills_a_child_whose_start_a_signal_interrupted(signalled: None) -> None:
    argv, nap = unique_sleep()
    with pytest.raises(Interrupted):
        spawn.run(argv, timeout=120, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_for(lambda: not processes_matching(nap)), "the child outlived the interrupted start"


def test_a_process_group_whose_start_a_signal_interrupted_is_ended(signalled: None) -> None:
    argv, nap = unique_sleep()
    with pytest.raises(Interrupted):
        group.run_process_group(argv, cwd=".", env=dict(os.environ), deadline=time.monotonic() + 600)
    assert wait_for(lambda: not processes_matching(nap)), "the group outlived the interrupted start"


def test_a_signal_outside_a_start_raises_at_once() -> None:
    with handle_signals(threading.Event()), armed(), pytest.raises(Interrupted):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            time.sleep(0)
    spawn.end()  # nothing waits: ending an unbegun start raises nothing
