"""The plain data that crosses the boundary between the core and its plugins, one module per plugin kind.

Plugins report what happened; the core alone decides a lane's status, computes pack digests and confines rubrics.
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

# submodule -> the names it defines, importable from this package on first access.
_MODULES = {
    "errors": "PackLoadError PackUnavailableError SignatureInvalidError SigningError",
    "lanes": "DeltaRange FallbackAttempt LaneExecutor LaneOutcome LaneRequest OutcomeKind ReportedFinding",
    "packs": "LoadedPack PackLoadContext PackLoader",
    "reviewers": "PresetSpec ProviderStatus ReviewerEnd ReviewerProvider ReviewerRequest ReviewerResult",
    "signing": "KeyInfo Signer SignerContext",
}
_HOME = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
