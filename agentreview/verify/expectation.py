"""AIP-62 verification step 2: what the attestation must say about this checkout; each name resolves to
exactly one full ref or commit. ``--ci-binding`` pins the policy's CI binding (:func:`ci_binding`): a gate
naming none would accept a quick local binding's attestation."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.model.errors import EXIT_ERROR, AgentreviewError
from agentreview.model.record import record
from agentreview.verify.result import VerifyStop

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.host.refs import RangeRefs
    from agentreview.manifest.parse import ParsedReview

CI_BINDING = "ci"


@record
class Expectation:
    """What the attestation must say about this checkout."""

    manifest_sha: str
    base_sha: str
    head_sha: str
    repo_remote: str
    binding: str | None = None
    verdict: str = "pass"


def resolve_expectation(
    root: Path, manifest_base: str, base: str | None, head_ref: str, head_commit: str | None = None
) -> RangeRefs:
    """The range: ``head_ref`` as a commit, and ``base`` or else ``merge-base(manifest_base, head)``, each name
    resolved exactly (an ambiguous one is refused, never guessed). Raises ``GitError``."""
    from agentreview.host.refs import head_ref as resolve_head
    from agentreview.host.refs import resolve_range

    return resolve_range(root, resolve_head(root, head_ref, head_commit), base, manifest_base)


def ci_binding(parsed: ParsedReview) -> str:
    """The policy's binding meant for CI (``verify --ci-binding``): the binding named ``ci``, else the
    one ``run`` takes when none is named (the only binding, else ``default``). Several bindings and
    none of them ``ci`` is a could-not-run error (exit 3) naming them: the gate must be told which."""
    from agentreview.manifest.rules import resolve_binding

    if CI_BINDING in parsed.bindings:
        return CI_BINDING
    try:
        name, _ = resolve_binding(parsed.manifest.id, parsed.bindings, None)
    except AgentreviewError:
        names = ", ".join(parsed.bindings) or "(none)"
        raise VerifyStop(
            EXIT_ERROR,
            "error",
            f"--ci-binding: review '{parsed.manifest.id}' declares several bindings ({names}) and none named "
            f"'{CI_BINDING}' — add a '{CI_BINDING}' binding to REVIEW.md or name the one the gate requires with "
            "--binding",
        ) from None
    return name
