"""agentreview-command: the ``command`` lane executor (``sh -c`` in its own process group).

The executor lives in :mod:`agentreview_command.executor`; the process group, its
bounds and the watchdog that kills it with a dying host are the core's
(``agentreview.api.run_process_group``). The plugin hook is in
:mod:`agentreview_command.plugin`.
"""
