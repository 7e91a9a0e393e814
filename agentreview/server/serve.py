"""The warm server: import everything heavy once, then fork a child per command.

Run as ``python -m agentreview.server.serve --home DIR --idle-timeout S`` (``agentreview
server start`` does that). The parts, one job each:

* :mod:`~agentreview.server.directory` — ``$AGENTREVIEW_HOME/server``, private (0700, ours) or refused;
* :mod:`~agentreview.server.warmup` — import and exercise the heavy modules before any fork;
* :mod:`~agentreview.server.stamp` — what a client compares to know the server runs its code;
* :mod:`~agentreview.server.loop` — the accept loop, one forked child per command, exit relay;
* :mod:`~agentreview.server.child` — the child becoming the caller's command (and dying with us);
* :mod:`~agentreview.server.context` — the process context both ends compare before a hand-over;
* :mod:`~agentreview.server.signals` — stop signals, relayed signals, the child's dispositions.

Security: the socket is 0600 inside that directory, every connection's peer uid
(SO_PEERCRED, from the kernel) must be ours, and a command is run only for a client whose
process context (credentials, namespaces, privileges, limits, cgroup) is ours.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentreview.model.errors import AgentreviewError

DEFAULT_IDLE_TIMEOUT_S = 15 * 60


def serve(home: Path, idle_timeout: float) -> int:
    """Check the directory, take the lock, warm up, bind, loop. The exit code of the server process."""
    from agentreview.server.child import prepare
    from agentreview.server.directory import prepare_dir
    from agentreview.server.loop import Server
    from agentreview.server.stamp import build_stamp
    from agentreview.server.warmup import warm

    directory = prepare_dir(home)
    server = Server(directory, idle_timeout)
    server.lock()
    for problem in warm():
        server.log(problem)
    prepare()
    server.stamp = build_stamp()
    server.install_signals()
    server.bind()
    server.log(f"listening on {server.path} (idle timeout {idle_timeout:g} s)")
    return server.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentreview.server.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    args = parser.parse_args(argv)
    try:
        return serve(args.home.resolve(), args.idle_timeout)
    except AgentreviewError as exc:
        sys.stderr.write(f"agentreview server: {exc}\n")
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
