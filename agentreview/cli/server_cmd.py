"""``agentreview server start|stop|status``: the opt-in warm server (see :mod:`agentreview.server.serve`).

These commands always run in-process (the client never hands ``server ...`` to a server).
``start`` launches ``python -m agentreview.server.serve`` in its own session, logging to
``$AGENTREVIEW_HOME/server/server.log``, and returns once the server answers.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
import time
from typing import Annotated, Any

import typer

from agentreview.model.errors import AgentreviewError

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
POLL_S = 0.05


def _gone(lock_path: str) -> bool:
    """Whether the server has exited: it holds an exclusive flock on its lock file for its whole life.

    Unlike probing its pid, this cannot be fooled by a zombie nobody reaped or by a recycled pid.
    A FIFO or symlink planted in its place is never waited on: there is no lock to ask, so gone.
    """
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _last_line(path: os.PathLike[str] | str) -> str:
    """The log's last line, or "" (never blocking on a FIFO in the log's place)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        data = os.pread(fd, 4096, max(0, info.st_size - 4096))
    except OSError:
        return ""
    finally:
        os.close(fd)
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def start(idle_timeout: int) -> dict[str, Any]:
    """Start a server for ``$AGENTREVIEW_HOME`` unless one answers; its status either way."""
    from agentreview.host.home import home_dir
    from agentreview.server import client, protocol
    from agentreview.server.directory import open_regular, prepare_dir

    home = home_dir()
    directory = prepare_dir(home)
    running = client.request(os.environ, "status")
    if running is not None and running.get("current"):
        return {**running, "started": False}
    if running is not None:
        stop()  # a server of other code (an upgrade, an edit): replace it
    log_path = directory / protocol.LOG_NAME
    log_fd = open_regular(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "log")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "agentreview.server.serve", "--home", str(home),
             "--idle-timeout", str(idle_timeout)],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log_fd)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        status = client.request(os.environ, "status")
        if status is not None and status.get("pid") == proc.pid:
            return {**status, "started": True}
        if proc.poll() is not None:
            raise AgentreviewError(f"the server exited ({proc.returncode}): {_last_line(log_path) or 'no output'}")
        time.sleep(POLL_S)
    raise AgentreviewError(f"the server did not answer within {START_TIMEOUT_S:g} s (see {log_path})")


def stop() -> dict[str, Any] | None:
    """Ask the server to stop and wait until it has (it first lets running commands finish)."""
    from agentreview.server import client, protocol

    reply = client.request(os.environ, "stop")
    if reply is None:
        return None
    pid = int(reply.get("pid", 0))
    lock_path = os.path.join(protocol.server_dir(os.environ), protocol.LOCK_NAME)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while not _gone(lock_path):
        if time.monotonic() >= deadline:
            raise AgentreviewError(f"the server (pid {pid}) is still finishing commands after {STOP_TIMEOUT_S:g} s")
        time.sleep(POLL_S)
    return reply


def _refusal(status: dict[str, Any]) -> str:
    """The note that a running server will not run this shell's commands (another process context), and why."""
    why = status.get("refused")
    return f"\n  it does not run commands from this process, which run in-process: {why}" if why else ""


def register(app: typer.Typer) -> None:
    server_app = typer.Typer(
        help="An opt-in warm server that keeps agentreview loaded so commands start fast.", no_args_is_help=True
    )

    @server_app.command("start")
    def start_cmd(
        idle_timeout: Annotated[
            int,
            typer.Option("--idle-timeout", min=1, metavar="SECONDS", help="Exit after this long without a command."),
        ] = 900,
    ) -> int:
        """Start the warm server for $AGENTREVIEW_HOME (nothing if one is running)."""
        status = start(idle_timeout)
        verb = "started" if status["started"] else "already running"
        typer.echo(f"agentreview server {verb} (pid {status['pid']}, {status['socket']}){_refusal(status)}")
        return 0

    @server_app.command("stop")
    def stop_cmd() -> int:
        """Stop the warm server once its running commands have finished."""
        reply = stop()
        text = "not running" if reply is None else f"stopped (pid {reply['pid']})"
        typer.echo(f"agentreview server: {text}")
        return 0

    @server_app.command("status")
    def status_cmd(as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False) -> int:
        """Whether a warm server runs for $AGENTREVIEW_HOME, and what it has done."""
        from agentreview.server import client, protocol

        status = client.request(os.environ, "status") or {"running": False, "socket": protocol.socket_path(os.environ)}
        if as_json:
            typer.echo(json.dumps(status, indent=2))
        elif not status["running"]:
            typer.echo("agentreview server: not running")
        else:
            stale = "" if status["current"] else "; stale: its code differs from this install, commands run in-process"
            typer.echo(
                f"agentreview server: running (pid {status['pid']}, {status['socket']}, "
                f"up {status['uptimeSeconds']:.0f} s, idle timeout {status['idleTimeoutSeconds']:g} s, "
                f"{status['served']} served, {status['active']} active"
                f"{stale}){_refusal(status)}"
            )
        return 0

    app.add_typer(server_app, name="server")
