"""The installed plugins, loaded only when something needs one.

A run answered from the ledger needs no plugin, and a verify needs them only for packs and signatures: both
hold this stand-in and pay for discovery only when they must. It imports nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.plugins.registry import Registry

__all__ = ["DeferredRegistry"]


class DeferredRegistry:
    """A registry given, adopted from an earlier step, or loaded on first use; then kept."""

    def __init__(self, registry: Registry | None = None) -> None:
        self._registry = registry

    @property
    def given(self) -> Registry | None:
        """The registry held so far, without loading one (a parse loads it only for a plugin's check kind)."""
        return self._registry

    def adopt(self, registry: Registry | None) -> None:
        """Keep ``registry`` (one a step had to load, say for a plugin's check kind) when none is held yet."""
        self._registry = self._registry or registry

    @property
    def loaded(self) -> Registry:
        if self._registry is None:
            from agentreview.plugins.registry import load_registry

            self._registry = load_registry()
        return self._registry
