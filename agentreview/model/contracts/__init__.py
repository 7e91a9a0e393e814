"""The plain data that crosses the boundary between the core and its plugins.

Free of pydantic and split by plugin kind, so a command imports only the contracts it uses (every name is
importable from this package on first access). Plugins report what happened; the core alone decides a lane's
status (:mod:`agentreview.model.lanes`), computes pack digests and confines rubrics.
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
