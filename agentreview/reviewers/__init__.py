"""The public base for reviewer providers: how a reviewer is run so that a steered one stays harmless.

A reviewer reads what the change's author wrote, so a prompt injection may steer it; the isolation is the same
for every provider and lives here once, exported through :mod:`agentreview.api`. It knows no particular CLI.
"""
