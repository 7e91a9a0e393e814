"""AIP-62 verification step 7: the signature, checked by the signer that handles its ``alg``.

Stricter than the reference: a signed export is checked whenever an allowed_signers file
is known, with or without ``--require-signed``; an invalid signature is always a problem
of the signature class (exit 6). Which file is trusted is :mod:`agentreview.verify.trust`'s
decision; which signer checks it is the installed signer that declares the attestation's
``attestor.signature.alg`` (:func:`agentreview.signing.signers.verify_signature`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.verify.result import CheckLine, short
from agentreview.verify.trust import UNNAMED_BASE, in_repo_note, in_repo_signers_at_base, untrusted_message

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.plugins.registry import Registry
    from agentreview.verify.trust import SignersFile


@dataclass
class SignatureCheck:
    """What step 7 found. ``problems`` are of the signature class (exit 6 when nothing else failed)."""

    checks: list[CheckLine] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    principal: str | None = None


def signature_checks(
    raw: dict[str, Any],
    signers: SignersFile | None,
    *,
    require_signed: bool,
    base_named: bool,
    root: Path,
    base_sha: str,
    registry: Callable[[], Registry],
) -> SignatureCheck:
    """Step 7 for ``raw`` against ``signers`` (``None``: no allowed_signers file is known)."""
    out = SignatureCheck()
    attestor = raw.get("attestor")
    signature = attestor.get("signature") if isinstance(attestor, dict) else None
    if signature is None:
        if require_signed:
            out.problems.append("attestation is not signed")
            out.checks.append(CheckLine("signature", False, "signed", "not signed"))
        else:
            out.notes.append("attestation is not signed (pass --require-signed to refuse that)")
        return out
    if not isinstance(signature, dict):
        out.problems.append("attestor.signature is not an object")
        out.checks.append(CheckLine("signature", False, "an object", short(signature)))
        return out
    if signers is None:
        if require_signed:
            out.problems.append("no --allowed-signers file to verify the signature against")
            out.checks.append(CheckLine("signature", False, "verified", "no allowed_signers file"))
        else:
            out.notes.append(
                f"attestation is signed (claimed principal '{signature.get('principal')}') but no allowed_signers "
                "file is known, so the signature was not checked"
            )
        return out
    trusted: bytes | None = None
    if signers.in_repo and require_signed and not base_named:
        # Without --base the base comes from the checkout's own REVIEW.md (target.base), which
        # the change controls: it could name its own commit as the base, where its key is trusted.
        out.problems.append(UNNAMED_BASE)
        out.checks.append(CheckLine("signature", False, "a trusted base", "base chosen by the checkout"))
        return out
    if signers.in_repo:
        trusted, why = in_repo_signers_at_base(root, signers.path, base_sha)
        if why is not None:
            (out.problems if require_signed else out.notes).append(untrusted_message(why))
    if trusted is not None:
        # Verify against a private copy of the bytes just checked, never the path again.
        import tempfile

        with tempfile.TemporaryDirectory(prefix="agentreview-signers-") as tmp:
            copy = Path(tmp) / "allowed_signers"
            copy.write_bytes(trusted)
            _verify(raw, copy, signers.path, registry, out)
    else:
        _verify(raw, signers.path, signers.path, registry, out)
    if out.principal is not None:
        out.checks.append(CheckLine("signature", True, f"a key in {signers.path}", f"signed by {out.principal}"))
    if signers.in_repo:
        out.notes.append(in_repo_note(signers.path))
    return out


def _verify(
    raw: dict[str, Any], signers: Path, shown: Path, registry: Callable[[], Registry], out: SignatureCheck
) -> None:
    """Ask the signer for the alg; a failure names ``shown`` (the file the user knows), not a private copy."""
    from agentreview.model.contracts import SignatureInvalidError
    from agentreview.signing.signers import verify_signature

    try:
        out.principal = verify_signature(raw, signers, registry())
    except SignatureInvalidError as exc:
        out.problems.append(str(exc).replace(str(signers), str(shown)))
        out.checks.append(CheckLine("signature", False, f"a key in {shown}", "does not verify"))
