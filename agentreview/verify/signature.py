"""AIP-62 verification step 7: the signature, checked by the signer of its ``alg`` whenever an
allowed_signers file is known, required or not; an invalid signature is always exit 6."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.verify.result import CheckLine, StepCheck, short
from agentreview.verify.trust import decide_trust, in_repo_note, read_untrusted

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.plugins.registry import Registry
    from agentreview.verify.trust import PolicyCommit, SignersFile


@dataclass
class SignatureCheck(StepCheck):
    """What step 7 found. ``problems`` are of the signature class (exit 6 when nothing else failed)."""

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
    policy: PolicyCommit | None = None,
) -> SignatureCheck:
    """Step 7 for ``raw`` against ``signers`` (``None``: no allowed_signers file is known), trusted as
    :func:`agentreview.verify.trust.decide_trust` decides (``policy``: ``--policy-from``)."""
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
    trust = decide_trust(signers, root=root, base_sha=base_sha, base_named=base_named, policy=policy)
    if not trust.trusted:
        # A file the change could have edited names no principal, required or not; without
        # --require-signed the signature is still checked against it, only to report one that
        # does not verify.
        (out.problems if require_signed else out.notes).append(trust.why or "allowed_signers is not trusted")
        untrusted = None if require_signed else read_untrusted(signers)
        if untrusted is not None:
            _verify_bytes(raw, untrusted, signers.path, registry, out)
        if not out.checks:
            claimed = f"signed by {out.principal}, but" if out.principal else "not checked:"
            out.checks.append(CheckLine("signature", False, "a trusted allowed_signers", f"{claimed} not trusted"))
        out.principal = None
    elif trust.data is not None:
        # Verify against a private copy of the bytes just checked, never the path again.
        _verify_bytes(raw, trust.data, Path(trust.source), registry, out)
    else:
        _verify(raw, signers.path, signers.path, registry, out)
    if out.principal is not None:
        out.checks.append(CheckLine("signature", True, f"a key in {trust.source}", f"signed by {out.principal}"))
    if signers.in_repo and policy is None:
        out.notes.append(in_repo_note(trust.source or str(signers.path)))
    return out


def _verify_bytes(
    raw: dict[str, Any], data: bytes, shown: Path, registry: Callable[[], Registry], out: SignatureCheck
) -> None:
    """:func:`_verify` against a private copy of ``data``."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="agentreview-signers-") as tmp:
        copy = Path(tmp) / "allowed_signers"
        copy.write_bytes(data)
        _verify(raw, copy, shown, registry, out)


def _verify(
    raw: dict[str, Any], signers: Path, shown: Path, registry: Callable[[], Registry], out: SignatureCheck
) -> None:
    """Ask the signer for the alg; a failure names ``shown`` (the file the user knows), not a private copy."""
    from agentreview.model.contracts.errors import SignatureInvalidError
    from agentreview.signing.signers import verify_signature

    try:
        out.principal = verify_signature(raw, signers, registry())
    except SignatureInvalidError as exc:
        out.problems.append(str(exc).replace(str(signers), str(shown)))
        out.checks.append(CheckLine("signature", False, f"a key in {shown}", "does not verify"))
