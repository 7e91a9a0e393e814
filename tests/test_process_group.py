"""agentreview.api.run_process_group, the one runner for every child the host starts: real processes,
real pipes, real signals."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from reviewrepo import processes_matching, wait_for

from agentreview.api import run_process_group


def _run(argv: list[str], tmp_path: Path, **options):
    options.setdefault("deadline", time.monotonic() + 120)
    return run_process_group(argv, cwd=tmp_path, env=dict(os.environ), **options)


def test_a_large_stdin_and_a_large_output_do_not_deadlock(tmp_path: Path) -> None:
    # Four times a pipe's capacity each way: the runner must feed stdin while it drains stdout.
    data = os.urandom(128 * 1024).hex().encode()
    result = _run(["cat"], tmp_path, stdin=data)
    assert (result.returncode, result.stdout, result.truncated) == (0, data, False)


def test_stdout_and_stderr_are_kept_apart_or_merged(tmp_path: Path) -> None:
    script = ["sh", "-c", "echo out; echo err >&2; exit 3"]
    apart = _run(script, tmp_path)
    assert (apart.returncode, apart.stdout_text(), apart.stderr_text()) == (3, "out\n", "err\n")
    merged = _run(script, tmp_path, merge_stderr=True)
    assert (merged.stdout_text(), merged.stderr) == ("out\nerr\n", b"")


def test_head_keeps_the_start_and_tail_keeps_the_end(tmp_path: Path) -> None:
    script = [sys.executable, "-c", "import sys; sys.stdout.write(''.join(f'{i:05d}' for i in range(20000)))"]
    head = _run(script, tmp_path, max_output=10)
    tail = _run(script, tmp_path, max_output=10, keep="tail")
    assert (head.stdout, head.truncated) == (b"0000000001", True)
    assert (tail.stdout, tail.truncated) == (b"1999819999", True)


def test_the_leaders_exit_ends_what_it_left_in_its_group(tmp_path: Path) -> None:
    result = _run(["sh", "-c", "sleep 300 & echo $! > straggler; echo done"], tmp_path)
    straggler = int((tmp_path / "straggler").read_text())
    assert (result.returncode, result.stdout_text()) == (0, "done\n")
    assert not result.timed_out and result.elapsed_s < 120, "the runner waited for the straggler's 300 s"
    assert not Path(f"/proc/{straggler}").exists() or b") Z" in Path(f"/proc/{straggler}/stat").read_bytes()


def test_deadline_and_cancel_end_the_group(tmp_path: Path) -> None:
    # the bounds are far above any load's delay and far below the 300 s the sleep would run
    timed = _run(["sleep", "300"], tmp_path, deadline=time.monotonic() + 0.3)
    assert timed.timed_out and not timed.cancelled and timed.elapsed_s < 120
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    stopped = _run(["sleep", "300"], tmp_path, cancel=cancel)
    assert stopped.cancelled and not stopped.timed_out and stopped.elapsed_s < 120
    assert _run(["true"], tmp_path, cancel=cancel) == type(stopped)(cancelled=True)  # never started


def test_a_spawn_failure_is_a_result_not_an_exception(tmp_path: Path) -> None:
    result = _run([str(tmp_path / "no-such-program")], tmp_path)
    assert result.returncode is None and "No such file or directory" in (result.spawn_error or "")


def test_a_marked_child_carries_the_hosts_marker_and_an_unmarked_one_does_not(tmp_path: Path) -> None:
    from agentreview.host.procs import watchdog

    marker = watchdog.get().marker
    marked = _run(["sh", "-c", f'echo "${{{marker}:-none}}"'], tmp_path, mark=True)
    plain = _run(["sh", "-c", f'echo "${{{marker}:-none}}"'], tmp_path)
    assert marked.stdout_text().strip().isdigit() and plain.stdout_text() == "none\n"


def test_a_host_killed_as_its_first_child_starts_leaves_nothing_behind() -> None:
    """The watchdog runs before the first child is spawned: a child that SIGKILLs its host at once,
    before the host could register it, still ends with the host."""
    nap = f"301.{os.getpid()}"  # a unique sleep argument to find the child by
    host = textwrap.dedent(f"""
        import os, time
        from agentreview.api import run_process_group
        run_process_group(["sh", "-c", "kill -KILL $PPID; exec sleep {nap}"], cwd="/", env=dict(os.environ),
                          deadline=time.monotonic() + 600, mark=True)
    """)
    try:
        proc = subprocess.run([sys.executable, "-c", host], timeout=120)
        assert proc.returncode == -signal.SIGKILL
        assert wait_for(lambda: not processes_matching(nap)), "the child outlived its SIGKILLed host"
    finally:
        for pid in processes_matching(nap):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
