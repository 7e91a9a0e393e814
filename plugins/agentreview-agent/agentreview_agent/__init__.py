"""agentreview-agent plugin."""
