"""Source of a tiny installable plugin, shared by the plugin loading and discovery tests."""

# A lane executor for one check kind (``.format(kind=...)``) that is never asked to run.
EXECUTOR_PLUGIN = """
from agentreview import hookimpl


class Executor:
    kind = {kind!r}

    def run_lane(self, request):
        raise NotImplementedError


@hookimpl
def agentreview_register_lane_executors(register):
    register(Executor())
"""
