"""agentreview-packs-git plugin."""
