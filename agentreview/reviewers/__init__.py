"""The public base for reviewer providers: what every provider would otherwise write again.

A reviewer reads what the change's author wrote, so a prompt injection may steer it;
what keeps it harmless is how it is run, and that part is the same for every
provider. It lives here, in the core, exported through :mod:`agentreview.api`:

* :mod:`.env` — the environment allow-list: the basics, a private ``HOME``, the
  provider's model variables, the names a preset grants, the lane's facts, and
  ``PATH`` without relative entries;
* :mod:`.attempt` — per-attempt private directories and linking a credential in;
* :mod:`.options` — declaring and checking a provider's preset options;
* :mod:`.cli` — finding an installed CLI and probing its ``--help`` for flags;
* :mod:`.base` — :class:`~agentreview.reviewers.base.ReviewerBase` (environment,
  private home, option checks, running a child through the process-group runner with
  the request's deadline and cancel) and
  :class:`~agentreview.reviewers.base.CliReviewer` (a provider that drives one CLI).

Nothing here knows a particular reviewer CLI; the shipped ones live in the
``agentreview-agent`` plugin and use this base like any third-party provider.
"""
