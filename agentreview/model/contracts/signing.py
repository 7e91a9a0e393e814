"""Signers: sign canonical bytes, verify a signature against an allowed_signers file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentreview.model.contracts.errors import SignatureInvalidError, SigningError
from agentreview.model.record import record

__all__ = ["KeyInfo", "SignatureInvalidError", "Signer", "SignerContext", "SigningError"]


@record
class SignerContext:
    """What a signer is given: the home its keys live in, the repository and principal if known, a time bound."""

    home: Path
    repo_root: Path | None = None
    principal: str | None = None
    timeout_s: float = 30.0


@record
class KeyInfo:
    """A signing key as ``agentreview key`` shows it: fingerprint, principal, public key file, allowed_signers line."""

    fingerprint: str
    principal: str
    public_key_path: Path
    allowed_signers_line: str


@runtime_checkable
class Signer(Protocol):
    """Signs the canonical attestation bytes; verifies a recorded signature.

    ``name`` is what ``[signing].signer`` in config.toml selects for signing. ``algorithms``
    are the ``attestor.signature.alg`` values this signer writes and verifies, the first being
    the one :meth:`sign` writes (the built-in ``ssh`` signer: ``("ssh-ed25519",)``). A verifier
    hands a signature to the installed signer that declares its alg, whichever signer the host
    signs with; two installed signers declaring one alg is a conflict.
    """

    name: str
    algorithms: tuple[str, ...]

    def sign(self, payload: bytes, ctx: SignerContext) -> dict[str, str]:
        """Return the ``attestor.signature`` member (its ``alg`` is ``algorithms[0]``), or raise
        :class:`SigningError`."""
        ...

    def verify(self, payload: bytes, signature: Mapping[str, Any], allowed_signers: Path) -> str:
        """Return the verified principal, or raise :class:`SignatureInvalidError`.

        Called only for a signature whose ``alg`` is one of :attr:`algorithms`; the format of
        the ``allowed_signers`` file is the signer's own."""
        ...

    def key_info(self, ctx: SignerContext) -> KeyInfo:
        """Describe (creating on first use) the host key."""
        ...
