from agentreview.cli.entry import console

console()
