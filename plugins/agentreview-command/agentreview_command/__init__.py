"""agentreview-command: the ``command`` lane executor (``sh -c`` in its own process group).

The executor lives in :mod:`agentreview_command.executor` (its docstring explains
how no lane process outlives the host, even a SIGKILLed one); the plugin hook in
:mod:`agentreview_command.plugin`. This module stays empty on purpose: the lane
watchdog imports the package and must start in milliseconds.
"""
