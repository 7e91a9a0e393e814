"""The exceptions that cross the plugin boundary: their own module, so code that only raises or
catches one (confined pack reads, signature checks) imports no contract dataclass."""

from __future__ import annotations


class PackLoadError(Exception):
    """A pack reference could not be loaded; the message names the reference and the fix."""


class PackUnavailableError(PackLoadError):
    """The pack cannot be obtained here (not installed, offline). Verify reports this as a note."""


class SigningError(Exception):
    """Signing was not possible; a review is still recorded, unsigned."""


class SignatureInvalidError(Exception):
    """A signature does not verify against the allowed_signers file."""
