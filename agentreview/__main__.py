import sys

from agentreview.cli.entry import main

sys.exit(main())
