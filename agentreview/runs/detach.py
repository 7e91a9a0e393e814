"""``run --detach``: start a review in a background process that outlives the caller's terminal.

The child runs as ``python -P`` in the home (nothing of the checkout on its import path), in a session of its
own; its lock is taken here and inherited, so the run is ``running`` at once and ``failed`` once it dies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

from agentreview.host.home import ENV_HOME, home_dir
from agentreview.runs.registry import ENV_LOCK_FD, RunRegistry


def new_run_id() -> str:
    return f"review-{uuid.uuid4()}"


def agentreview_argv() -> list[str]:
    """How the host starts agentreview in a child Python: this interpreter, ``-P`` so that the
    child's working folder is never on its import path (see the module doc)."""
    if not sys.executable:
        raise OSError("no Python interpreter path (sys.executable is empty) to start agentreview with")
    return [sys.executable, "-P", "-m", "agentreview"]


def start_detached(
    args: list[str],
    *,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    repo_root: Path | None = None,
    repo_remote: str | None = None,
    requester_session_id: str | None = None,
) -> str:
    """Start ``agentreview run <args>`` detached; return its runId once its record says ``running``.

    ``args`` names the repository (``--cwd``, absolute); what the caller knows of it is recorded at once."""
    child_env = dict(os.environ if env is None else env)
    home = home or (Path(child_env[ENV_HOME]).expanduser().resolve() if child_env.get(ENV_HOME) else home_dir())
    child_env[ENV_HOME] = str(home)
    registry = RunRegistry(home)
    run_id = new_run_id()
    # running, under a lock that the child inherits: readable at once, failed the moment the child dies
    registry.begin(
        run_id, pid=None, repo_root=repo_root, repo_remote=repo_remote, binding=None, base_sha=None, head_sha=None,
        requester_session_id=requester_session_id,
    )
    fd = registry.hold_lock(run_id)
    try:
        os.set_inheritable(fd, True)
        child_env[ENV_LOCK_FD] = str(fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        log = os.open(registry.log_path(run_id), flags, 0o600)
        try:
            subprocess.Popen(
                [*agentreview_argv(), "run", *args, "--run-id", run_id],
                cwd=registry.dir,  # made by begin(); never the checkout
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                pass_fds=(fd,),
                close_fds=True,
            )
        finally:
            os.close(log)
    except BaseException as exc:
        registry.finish(run_id, status="failed", error=f"could not start the run: {exc}")
        raise
    # The child holds the lock now (its inherited descriptor); this process lets go of its own.
    registry.release_lock(run_id)
    return run_id
