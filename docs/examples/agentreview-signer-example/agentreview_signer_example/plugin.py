"""The ``openssl-example`` signer: Ed25519 attestation signatures through the ``openssl`` CLI.

A complete, minimal third-party signer. It writes and verifies the signature alg
``openssl-ed25519``, so an attestation it signed is checked by it on any host that has
it installed, whichever signer that host signs with. What makes it a correct signer is
the contract around the cryptography:

* it registers through ``agentreview_register_signers`` and declares ``algorithms``;
  the first is the alg :meth:`OpensslSigner.sign` writes;
* the host key lives under ``<AGENTREVIEW_HOME>/keys/`` (``example-ed25519.pem``, mode
  0600, created on first use under a lock, so concurrent first uses make one key);
* ``sign`` raises only ``SigningError`` (the core then records the run unsigned);
  ``verify`` raises only ``SignatureInvalidError`` with the reason;
* every ``openssl`` call has a timeout and no terminal, so nothing can hang a review;
* the signed message is ``agentproto-review\\0`` followed by the canonical payload: a
  signature made for another purpose with the same key can never pass as an attestation's
  (the role the ssh signer's namespace plays).

Its allowed-signers file has one trusted key per line, ``<principal> <base64 DER public
key>`` (``#`` starts a comment); ``agentreview key`` prints this host's line when this
signer is configured (``[signing] signer = "openssl-example"`` in config.toml).
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import re
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentreview.api import (
    FileLock,
    KeyInfo,
    LockTimeout,
    SignatureInvalidError,
    SignerContext,
    SigningError,
    UnreadableFileError,
    atomic_write_bytes,
    find_program,
    hookimpl,
    load_config,
    read_regular_file,
)

ALG = "openssl-ed25519"
KEY_NAME = "example-ed25519.pem"
PUBLIC_NAME = "example-ed25519.pub.pem"
DOMAIN = b"agentproto-review\0"
# An Ed25519 SubjectPublicKeyInfo in DER: this fixed prefix, then the 32-byte key.
ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")
SIGNATURE_BYTES = 64
PRINCIPAL = re.compile(r"^[^\s#\x00-\x1f\x7f]{1,256}$")  # one word: the file's first column
MAX_ALLOWED_SIGNERS_BYTES = 1024 * 1024
VERIFY_TIMEOUT_S = 30.0


def _openssl(args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Run openssl by its absolute path (verify runs in the reviewed repository, where an empty or
    relative PATH entry would name the change's ``./openssl``); FileNotFoundError when it is
    missing, TimeoutExpired past the deadline."""
    executable = find_program("openssl")
    if executable is None:
        raise FileNotFoundError(errno.ENOENT, "openssl not found on PATH", "openssl")
    return subprocess.run(
        [executable, *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
    )


def _err(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else f"openssl exited with {proc.returncode}"


def fingerprint(der: bytes) -> str:
    """``SHA256:<unpadded base64>`` of the DER public key, the form ``keyFingerprint`` requires."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class OpensslSigner:
    """Signs with the host's Ed25519 key through ``openssl pkeyutl``; verifies against its allowed-signers file."""

    name = "openssl-example"
    algorithms = (ALG,)

    # ------------------------------------------------------------------ the key

    def _paths(self, home: Path) -> tuple[Path, Path]:
        keys = home / "keys"
        return keys / KEY_NAME, keys / PUBLIC_NAME

    def _ensure_key(self, ctx: SignerContext) -> tuple[Path, bytes]:
        """The private key's path and the DER public key, generating the key on first use."""
        key, public = self._paths(ctx.home)
        if find_program("openssl") is None:
            raise SigningError("could not prepare the example signing key: openssl not found on PATH")
        try:
            key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with FileLock(key.parent / f"{KEY_NAME}.lock", timeout=ctx.timeout_s):
                if not key.is_file():
                    self._generate(key, ctx.timeout_s)
                der = self._public_der(key, ctx.timeout_s)
                pem = b"-----BEGIN PUBLIC KEY-----\n" + base64.encodebytes(der) + b"-----END PUBLIC KEY-----\n"
                if not public.is_file() or public.read_bytes() != pem:
                    atomic_write_bytes(public, pem, mode=0o644)
        except LockTimeout as exc:
            raise SigningError(f"could not prepare the example signing key: {exc}") from exc
        except subprocess.TimeoutExpired as exc:
            raise SigningError("could not prepare the example signing key: openssl did not finish in time") from exc
        except OSError as exc:
            raise SigningError(f"could not prepare the example signing key: {exc}") from exc
        return key, der

    def _generate(self, key: Path, timeout: float) -> None:
        # Generated in a private directory, then written 0600 in one atomic step: the key is never
        # readable by others, and a reader never sees half a key.
        with tempfile.TemporaryDirectory(prefix="agentreview-keygen-") as tmp:
            fresh = Path(tmp) / "key.pem"
            proc = _openssl(["genpkey", "-algorithm", "ed25519", "-out", str(fresh)], timeout)
            if proc.returncode != 0:
                raise SigningError(f"could not prepare the example signing key: {_err(proc)}")
            atomic_write_bytes(key, fresh.read_bytes(), mode=0o600)

    def _public_der(self, key: Path, timeout: float) -> bytes:
        proc = _openssl(["pkey", "-in", str(key), "-pubout", "-outform", "DER"], timeout)
        der = proc.stdout
        if proc.returncode != 0 or not (der.startswith(ED25519_SPKI_PREFIX) and len(der) == 44):
            raise SigningError(f"could not prepare the example signing key: {key}: {_err(proc)}")
        return der

    def _principal(self, ctx: SignerContext) -> str:
        """``ctx.principal``, else ``[signing].principal``, else the repo's git user.email, else
        ``agentproto-review@<hostname>``: the order the built-in signer uses."""
        principal = ctx.principal
        if not principal:
            try:
                configured = load_config(ctx.home).get("signing", {}).get("principal")
            except Exception as exc:  # an unreadable config.toml names itself in the message
                raise SigningError(f"could not prepare the example signing key: {exc}") from exc
            principal = configured if isinstance(configured, str) else None
        if not principal and ctx.repo_root is not None:
            try:
                proc = subprocess.run(
                    ["git", "config", "user.email"], cwd=ctx.repo_root, stdin=subprocess.DEVNULL,
                    capture_output=True, text=True, timeout=10, check=False,
                )  # fmt: skip
                principal = proc.stdout.strip() if proc.returncode == 0 else None
            except (OSError, subprocess.TimeoutExpired):
                principal = None
        principal = principal or f"agentproto-review@{socket.gethostname()}"
        if not PRINCIPAL.match(principal):
            raise SigningError(f"principal {principal!r} cannot be one word of an allowed-signers line")
        return principal

    def key_info(self, ctx: SignerContext) -> KeyInfo:
        _, der = self._ensure_key(ctx)
        principal = self._principal(ctx)
        line = f"{principal} {base64.b64encode(der).decode()}"
        return KeyInfo(
            fingerprint=fingerprint(der),
            principal=principal,
            public_key_path=self._paths(ctx.home)[1],
            allowed_signers_line=line,
        )

    # ------------------------------------------------------------------ signing

    def sign(self, payload: bytes, ctx: SignerContext) -> dict[str, str]:
        key, der = self._ensure_key(ctx)
        principal = self._principal(ctx)
        with tempfile.TemporaryDirectory(prefix="agentreview-sign-") as tmp:
            message, sig = Path(tmp) / "message", Path(tmp) / "sig"
            message.write_bytes(DOMAIN + payload)
            try:
                proc = _openssl(
                    ["pkeyutl", "-sign", "-inkey", str(key), "-rawin", "-in", str(message), "-out", str(sig)],
                    ctx.timeout_s,
                )
                raw = sig.read_bytes() if proc.returncode == 0 else b""
            except FileNotFoundError as exc:
                raise SigningError("could not sign the attestation: openssl not found on PATH") from exc
            except subprocess.TimeoutExpired as exc:
                raise SigningError("could not sign the attestation: openssl did not finish in time") from exc
            except OSError as exc:
                raise SigningError(f"could not sign the attestation: {exc}") from exc
        if len(raw) != SIGNATURE_BYTES:
            raise SigningError(f"could not sign the attestation: {_err(proc)}")
        return {
            "alg": ALG,
            "keyFingerprint": fingerprint(der),
            "principal": principal,
            "signedAt": _now(),
            "sig": base64.b64encode(raw).decode(),
        }

    # ------------------------------------------------------------------ verifying

    def _trusted_keys(self, allowed_signers: Path, principal: str) -> list[bytes]:
        """The DER keys the file trusts for ``principal``; a malformed line is an error naming it."""
        try:
            text = read_regular_file(allowed_signers, limit=MAX_ALLOWED_SIGNERS_BYTES).decode("utf-8")
        except (UnreadableFileError, UnicodeDecodeError) as exc:
            raise SignatureInvalidError(f"allowed-signers file {allowed_signers}: {exc}") from exc
        keys = []
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                if len(fields) != 2:
                    raise ValueError("expected '<principal> <base64 DER public key>'")
                der = base64.b64decode(fields[1], validate=True)
                if not (der.startswith(ED25519_SPKI_PREFIX) and len(der) == 44):
                    raise ValueError("not an Ed25519 public key")
            except (ValueError, binascii.Error) as exc:
                raise SignatureInvalidError(f"{allowed_signers}:{number}: {exc}") from exc
            if fields[0] == principal:
                keys.append(der)
        return keys

    def verify(self, payload: bytes, signature: Mapping[str, Any], allowed_signers: Path) -> str:
        principal, sig, claimed = (signature.get(k) for k in ("principal", "sig", "keyFingerprint"))
        if signature.get("alg") != ALG:
            raise SignatureInvalidError(f"signature alg {signature.get('alg')!r} is not {ALG!r}")
        if not isinstance(principal, str) or not principal or not isinstance(sig, str):
            raise SignatureInvalidError("signature has no principal or no sig")
        try:
            raw = base64.b64decode(sig, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise SignatureInvalidError("signature does not verify: sig is not base64") from exc
        if len(raw) != SIGNATURE_BYTES:
            raise SignatureInvalidError("signature does not verify: sig is not an Ed25519 signature")
        # keyFingerprint sits outside the signed bytes: it only selects the key, which must be
        # one the file trusts for the claimed principal, and which must then verify the bytes.
        key = next((der for der in self._trusted_keys(allowed_signers, principal) if fingerprint(der) == claimed), None)
        if key is None:
            raise SignatureInvalidError(
                f"no key with fingerprint {claimed} is trusted for principal '{principal}' in {allowed_signers}"
            )
        if find_program("openssl") is None:
            raise SignatureInvalidError("openssl is not available — cannot verify openssl-ed25519 signatures")
        with tempfile.TemporaryDirectory(prefix="agentreview-verify-") as tmp:
            message, sig_path, pub = Path(tmp) / "message", Path(tmp) / "sig", Path(tmp) / "key.der"
            message.write_bytes(DOMAIN + payload)
            sig_path.write_bytes(raw)
            pub.write_bytes(key)
            args = ["pkeyutl", "-verify", "-pubin", "-keyform", "DER", "-inkey", str(pub), "-rawin",
                    "-in", str(message), "-sigfile", str(sig_path)]  # fmt: skip
            try:
                proc = _openssl(args, VERIFY_TIMEOUT_S)
            except FileNotFoundError as exc:
                raise SignatureInvalidError("openssl is not available — cannot verify signatures") from exc
            except subprocess.TimeoutExpired as exc:
                raise SignatureInvalidError("signature does not verify: openssl did not finish in time") from exc
        if proc.returncode != 0:
            raise SignatureInvalidError(f"signature does not verify: {_err(proc)}")
        return principal


@hookimpl
def agentreview_register_signers(register: Any) -> None:
    register(OpensslSigner())

