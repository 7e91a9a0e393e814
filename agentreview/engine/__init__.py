"""The review engine: plan, prepare, freeze, lanes in parallel, fold, sign, record."""

from agentreview.engine.run import RunOptions, RunResult, run_review

__all__ = ["RunOptions", "RunResult", "run_review"]
