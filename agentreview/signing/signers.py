"""Signing an attestation after it is built, and checking a recorded signature.

Signing never fails a review: any problem becomes a ``signingError`` and the attestation stays
unsigned. Verifying is keyed by the signature's ``alg``, not by this host's configured signer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.contracts.errors import SignatureInvalidError, SigningError
from agentreview.model.contracts.signing import SignerContext
from agentreview.model.digests import CanonicalJsonError, signed_bytes_of

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.model.contracts.signing import Signer
    from agentreview.plugins.registry import Registry

DEFAULT_SIGNER = "ssh"


def configured_signer(registry: Registry, home: Path) -> Signer:
    """The signer named by ``[signing].signer`` (default ``ssh``); SigningError when it is not installed."""
    from agentreview.host.home import load_config

    try:
        name = load_config(home).get("signing", {}).get("signer", DEFAULT_SIGNER)
    except Exception as exc:  # an unreadable config.toml names itself in the message
        raise SigningError(f"could not sign the attestation: {exc}") from exc
    signer = registry.get("signers", name) if isinstance(name, str) else None
    if signer is None:
        known = ", ".join(sorted(registry.objects("signers"))) or "none"
        raise SigningError(
            f"could not sign the attestation: no signer named {name!r} is installed (installed: {known}) "
            f"— fix [signing].signer in {home / 'config.toml'}"
        )
    return signer


def sign_attestation(
    att: Attestation, *, registry: Registry, home: Path, repo_root: Path | None, principal: str | None = None
) -> tuple[Attestation, str | None]:
    """Return the signed attestation, or the attestation unchanged and why it is unsigned. Never raises."""
    try:
        signer = configured_signer(registry, home)
        signature = signer.sign(att.signed_bytes(), SignerContext(home=home, repo_root=repo_root, principal=principal))
        _check_written_alg(signer, signature)
        return att.with_signature(signature), None
    except SigningError as exc:
        return att, str(exc)
    except Exception as exc:  # a plugin's bug or a malformed signature member must not fail the review
        return att, f"could not sign the attestation: {type(exc).__name__}: {exc}"


def _check_written_alg(signer: Signer, signature: Mapping[str, Any]) -> None:
    """A signer must write an alg it declares, or no verifier would be found for its signatures."""
    declared = tuple(getattr(signer, "algorithms", ()) or ())
    alg = signature.get("alg") if isinstance(signature, Mapping) else None
    if declared and alg not in declared:
        raise SigningError(
            f"could not sign the attestation: signer '{signer.name}' wrote signature alg {alg!r}, "
            f"which is not among the algorithms it declares ({', '.join(declared)})"
        )


def verify_signature(att_raw: Mapping[str, Any], allowed_signers: Path, registry: Registry) -> str:
    """Check ``attestor.signature`` of an attestation exactly as read; the principal, or
    :class:`SignatureInvalidError`. The payload comes from the raw document, so a newer host's members stay covered."""
    attestor = att_raw.get("attestor")
    signature = attestor.get("signature") if isinstance(attestor, Mapping) else None
    if not signature:
        raise SignatureInvalidError("attestation is not signed")
    if not isinstance(signature, Mapping):
        raise SignatureInvalidError("attestor.signature is not an object")
    alg = signature.get("alg")
    verifier = registry.signer_for_alg(alg) if isinstance(alg, str) else None
    if verifier is None:
        known = ", ".join(sorted(registry.signature_algs)) or "none"
        raise SignatureInvalidError(
            f"no installed signer can check signature alg {alg!r} (installed signers check: {known}) — install "
            f"or enable the agentreview plugin whose signer declares {alg!r} (`agentreview plugins` lists them)"
        )
    try:
        payload = signed_bytes_of(att_raw)
    except CanonicalJsonError as exc:
        raise SignatureInvalidError(f"signature does not verify: {exc}") from exc
    return verifier.verify(payload, signature, Path(allowed_signers))
