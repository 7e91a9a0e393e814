"""Where composition looks for a prior: the nearest passing entries on the head's own first-parent line.

One bounded ``git rev-list --first-parent`` walk from the head, then one index query for passing entries on it,
so the cost is bounded by the walk, not the ledger; a prior further back or off that line is not used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.engine.plan import RunPlan
from agentreview.host import git
from agentreview.model.record import record

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.store.ledger import Ledger, LedgerKey

# First-parent steps walked back from the head when looking for a prior.
PRIOR_WALK = 1000


@record
class Priors:
    """The candidates for a prior, newest first, and the commits the walk reached (ancestry test)."""

    candidates: list[Attestation]
    ancestors: frozenset[str]

    def is_ancestor(self, prior_head: str, head_sha: str) -> bool:
        return prior_head != head_sha and prior_head in self.ancestors


def first_parent_walk(repo_root: Path, head_sha: str, steps: int = PRIOR_WALK) -> list[str]:
    """The commits ``steps`` first-parent steps back from ``head_sha`` (the head excluded); none
    when git cannot say (the composition then finds no prior, which is always safe)."""
    proc = git.git(
        ["rev-list", "--first-parent", f"--max-count={steps + 1}", "--end-of-options", head_sha],
        repo_root,
        check=False,
    )
    if proc.returncode != 0:
        return []
    return [sha for sha in proc.stdout.split() if sha != head_sha]


def own_priors(repo_root: Path, ledger: Ledger, key: LedgerKey, base_sha: str, head_sha: str) -> Priors:
    """This host's passing entries under ``key``'s repository, manifest and binding, on the same
    base, whose head is on the head's first-parent walk; newest first."""
    heads = first_parent_walk(repo_root, head_sha)
    if not heads:
        return Priors([], frozenset())
    found = ledger.candidates(key.repo_remote, key.manifest_sha, key.binding, base_sha=base_sha, heads=heads,
                              passing=True)
    return Priors(list(found), frozenset(heads))


def find_priors(plan: RunPlan, ledger: Ledger, head_sha: str) -> Priors:
    """The plan's own priors, then the trusted teammates' ones (team trust, off by default)."""
    own = own_priors(plan.repo_root, ledger, plan.key, plan.base_sha, head_sha)
    if not own.ancestors:
        return own
    team = _team_priors(plan, sorted(own.ancestors))
    return Priors(own.candidates + team, own.ancestors)


def _team_priors(plan: RunPlan, heads: list[str]) -> list[Attestation]:
    """Teammates' attestations whose signature verifies against the team file, narrowed by the
    index to passes on the same base with a head on the walk: find_prior applies the same rules."""
    from agentreview.share.trust import trusted_foreign

    key = plan.key

    def could_be_prior(raw: dict[str, Any]) -> bool:  # find_prior decides; this only spares signature checks
        target = raw.get("target")
        return raw.get("verdict") == "pass" and isinstance(target, dict) and target.get("baseSha") == plan.base_sha

    found = trusted_foreign(
        plan.host.home, plan.registry, key.repo_remote, key.manifest_sha, key.binding, want=could_be_prior,
        base_sha=plan.base_sha, heads=heads, passing=True,
    )
    return [f.attestation for f in found]
