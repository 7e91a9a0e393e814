"""The four extension points of agentreview, as pluggy hook specifications.

Every hook follows the *register callback* pattern: the plugin calls ``register(obj)`` once per object, and the
core calls each plugin separately, so it knows which distribution registered what and two claims on one name
are an error naming both. docs/plugins.md documents each hook, generated from this file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.contracts import LaneExecutor, PackLoader, ReviewerProvider, Signer

hookspec = pluggy.HookspecMarker("agentreview")


@hookspec
def agentreview_register_lane_executors(register: Callable[[LaneExecutor], None]) -> None:
    """Register lane executors, one per check ``kind``.

    An executor may contribute a new check kind: its ``kind`` is the new name
    (lowercase letters, digits and ``-``) and its ``check_model`` attribute is a
    subclass of ``agentreview.api.CheckModel`` with ``kind: Literal["<kind>"]`` and
    the kind's own fields. The parser validates such checks in a REVIEW.md with that
    model (loading plugins only when a manifest uses a kind that is not built in);
    ``request.check`` is then an instance of it. ``command`` and ``agent`` keep the
    spec's models. A manifest that uses a kind no installed plugin provides is
    invalid (exit 3, naming the kind).

    ``LaneRequest`` carries the resolved check (``check``, with the pack namespace
    applied), ``review_id``, ``repo_root``, ``base_sha``, ``head_sha``, ``placeholders``,
    ``run_dir``, a ``cancel`` event, the bound ``command`` line for command lanes,
    ``rubric_path``, ``delta`` (a ``DeltaRange`` when a composed agent lane reviews
    only ``prior_head..head``), the host's ``presets`` and ``providers``,
    ``requester_session_id`` and ``home``. The executor returns
    ``LaneOutcome.exited(exit_code, output)``, ``LaneOutcome.reported(findings, ...)``
    (``ReportedFinding`` values), ``LaneOutcome.timeout(error, output)`` or
    ``LaneOutcome.skipped(error)``: it reports what happened, and the core alone turns
    that into the lane's status, so no plugin can declare a lane ``pass``. Processes
    belong in ``agentreview.api.run_process_group``, which ends them with the host.

    A check whose kind has no executor at run time becomes a ``skipped`` lane that
    says which plugin to install.
    """


@hookspec
def agentreview_register_pack_loaders(register: Callable[[PackLoader], None]) -> None:
    """Register pack loaders, one per reference form.

    The core classifies a reference into its form, parses the pack, confines its rubrics
    and computes its digest; the loader only fetches bytes and decides trust, raising
    ``PackUnavailableError`` when the pack cannot be obtained here.

    ``PackLoadContext`` gives ``repo_root``, ``manifest_dir``, ``home``, ``timeout_s``
    and ``offline``. ``LoadedPack`` holds ``root`` (a real path), ``source`` (the
    pack's REVIEW.md bytes as read, e.g. with ``agentreview.api.read_pack_manifest``),
    ``trusted`` and ``origin``. ``PackUnavailableError`` is what ``verify`` reports
    as a note rather than a failure.
    """


@hookspec
def agentreview_register_reviewer_providers(register: Callable[[ReviewerProvider], None]) -> None:
    """Register reviewer-session providers, one per provider ``name``.

    ``review`` runs one read-only, isolated reviewer attempt and leaves the verdict
    file at ``request.verdict_path``. A provider's name is also a built-in preset name.

    ``ReviewerRequest`` holds the ``preset`` (``PresetSpec``), the ``prompt``,
    ``check_id``, ``repo_root``, ``base_sha``, ``head_sha``, ``rubric_path``,
    ``verdict_path``, ``work_dir``, one ``deadline`` (a ``time.monotonic()`` value
    shared by retries and fallbacks), ``cancel`` and ``home``. ``ReviewerResult.end``
    is ``verdict``, ``unavailable`` (a fallback preset may be tried), ``timeout``,
    ``boundary_violation``, ``malformed`` or ``cancelled``. A provider that audits
    its reviewer's output names what it found in ``ReviewerResult.unknown_fields``
    (a shape it could not verify: drift, with ``unavailable``) and
    ``ReviewerResult.unsafe_values`` (a breached boundary, with
    ``boundary_violation``); the lane records both (``unknownFields``,
    ``unsafeValues``). Subclassing ``agentreview.api.ReviewerBase`` gives the
    allow-listed environment, a private HOME, the process group bound to the
    deadline and cancel, and the validation of the preset options the provider
    declares (``validate_options``).
    """


@hookspec
def agentreview_register_signers(register: Callable[[Signer], None]) -> None:
    """Register attestation signers, one per ``name`` (the built-in one is ``"ssh"``).

    ``algorithms`` are the ``attestor.signature.alg`` values a signer writes and
    verifies, e.g. ``("ssh-ed25519",)``.
    ``[signing].signer`` in config.toml picks the signer a host signs with; a
    verifier picks the signer that declares the signature's ``alg``, so two
    signers declaring one alg are a conflict, and an alg no installed signer
    declares fails verification naming it. Signing never fails a review: a
    ``SigningError`` leaves the attestation unsigned.
    """
