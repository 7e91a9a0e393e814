"""agentreview-command plugin."""
