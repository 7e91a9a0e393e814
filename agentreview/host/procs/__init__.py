"""Child processes of the host: each in its own process group, bounded, and never outliving the host.

One module runs every child the host starts for a lane — a command lane's shell, a
reviewer CLI, a reviewer's ``--help`` probe — so each gets the same guarantees:

* :mod:`.group` — :func:`~agentreview.host.procs.group.run_process_group` starts the
  child in a new session (its own process group), feeds its stdin, keeps a bounded
  head or tail of its output, and ends the whole group (SIGTERM, then SIGKILL after
  a grace period) at the deadline, on cancel, or as soon as the leader exits;
* :mod:`.watchdog` and :mod:`.watchdog_main` — one small watchdog process per host
  holds a pipe from the host and kills every registered group when the host dies,
  even by SIGKILL;
* :mod:`.table` — the ``/proc`` scan that finds what is still alive of a group (and
  of processes that left it but carry the host's marker);
* :mod:`.buffers` — the bounded output buffers.

This file stays empty on purpose: the watchdog process imports the package and must
start in milliseconds.
"""
