"""The plain data that crosses the boundary between the core and its plugins.

A plugin receives everything it needs as arguments and returns plain results; it
never reaches into the core's internals, and the core never imports a plugin.
These dataclasses and protocols are that boundary. They are deliberately free of
pydantic so a plugin module can be imported cheaply, and split by plugin kind
(:mod:`.lanes`, :mod:`.packs`, :mod:`.reviewers`, :mod:`.signing`, and the shared
:mod:`.errors`) so a command imports only the contracts it uses: a run answered from the
cache imports none. Every name is importable from this package (on first access).

Who decides what:

* A lane executor returns a :class:`LaneOutcome` (what happened). The core alone
  turns it into a ``LaneResult`` status (``agentreview.model.lanes.to_lane_result``),
  so no plugin can declare a lane ``pass``: an agent lane passes only when the
  core finds no finding at or above ``blockOn``.
* A pack loader returns the bytes and the trust decision for one reference form.
  The core computes the digest and confines rubrics.
* A reviewer-session provider runs one reviewer attempt and reports how it ended.
* A signer signs canonical bytes and verifies a signature against allowed_signers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.contracts.errors import (
        PackLoadError,
        PackUnavailableError,
        SignatureInvalidError,
        SigningError,
    )
    from agentreview.model.contracts.lanes import (
        DeltaRange,
        FallbackAttempt,
        LaneExecutor,
        LaneOutcome,
        LaneRequest,
        OutcomeKind,
        ReportedFinding,
    )
    from agentreview.model.contracts.packs import LoadedPack, PackLoadContext, PackLoader
    from agentreview.model.contracts.reviewers import (
        PresetSpec,
        ProviderStatus,
        ReviewerEnd,
        ReviewerProvider,
        ReviewerRequest,
        ReviewerResult,
    )
    from agentreview.model.contracts.signing import KeyInfo, Signer, SignerContext

_HOME = {
    "DeltaRange": "lanes",
    "FallbackAttempt": "lanes",
    "KeyInfo": "signing",
    "LaneExecutor": "lanes",
    "LaneOutcome": "lanes",
    "LaneRequest": "lanes",
    "LoadedPack": "packs",
    "OutcomeKind": "lanes",
    "PackLoadContext": "packs",
    "PackLoadError": "errors",
    "PackLoader": "packs",
    "PackUnavailableError": "errors",
    "PresetSpec": "reviewers",
    "ProviderStatus": "reviewers",
    "ReportedFinding": "lanes",
    "ReviewerEnd": "reviewers",
    "ReviewerProvider": "reviewers",
    "ReviewerRequest": "reviewers",
    "ReviewerResult": "reviewers",
    "SignatureInvalidError": "errors",
    "Signer": "signing",
    "SignerContext": "signing",
    "SigningError": "errors",
}

__all__ = [
    "DeltaRange",
    "FallbackAttempt",
    "KeyInfo",
    "LaneExecutor",
    "LaneOutcome",
    "LaneRequest",
    "LoadedPack",
    "OutcomeKind",
    "PackLoadContext",
    "PackLoadError",
    "PackLoader",
    "PackUnavailableError",
    "PresetSpec",
    "ProviderStatus",
    "ReportedFinding",
    "ReviewerEnd",
    "ReviewerProvider",
    "ReviewerRequest",
    "ReviewerResult",
    "SignatureInvalidError",
    "Signer",
    "SignerContext",
    "SigningError",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
