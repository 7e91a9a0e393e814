"""The run registry: every review run's status, readable by other processes (``status``, ``cancel``, MCP).

:mod:`~agentreview.runs.registry` keeps one record per run under ``$AGENTREVIEW_HOME/runs/``;
:mod:`~agentreview.runs.detach` starts a run in a background process that outlives its terminal.
"""
