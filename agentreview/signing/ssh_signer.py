"""The built-in ``ssh`` signer: ssh-ed25519 signatures made and checked with ``ssh-keygen -Y``.

One key per host install, generated on first use (AIP-62 §Signing). Every ``ssh-keygen`` call has a timeout
and reads no terminal, so a prompt can never hang a review; loaded for every command, it imports nothing heavy.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentreview import hookimpl
from agentreview.host.files import atomic_write_bytes, read_regular_file
from agentreview.host.home import hostname, keys_dir, load_config
from agentreview.host.procs import spawn
from agentreview.host.programs import find_program
from agentreview.model.contracts.errors import SignatureInvalidError, SigningError
from agentreview.model.contracts.signing import KeyInfo, SignerContext

NAMESPACE = "agentproto-review"
ALG = "ssh-ed25519"
KEY_NAME = "review_ed25519"
# The principal this host signs as must be one literal identity in an allowed_signers line:
# no whitespace (it ends the field), no quotes, no ',' (a list) and no '*', '?', '!' (patterns).
PRINCIPAL = re.compile(r'^[^\s"\x00-\x1f\x7f,*?!]{1,256}$')
VERIFY_TIMEOUT_S = 30.0
NOT_FOUND = "ssh-keygen not found on PATH"


def _run(args: Sequence[str], *, timeout: float, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ssh-keygen; FileNotFoundError when it is not installed, TimeoutExpired past the deadline."""
    executable = find_program("ssh-keygen")
    if executable is None:
        raise FileNotFoundError(errno.ENOENT, NOT_FOUND, "ssh-keygen")
    return spawn.run(
        [executable, *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=timeout,
    )


def _err(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"ssh-keygen exited with {proc.returncode}"


def _resolve_principal(ctx: SignerContext) -> str:
    """The configured principal, else the repo's git user.email, else agentproto-review@<hostname>."""
    source = "--principal"
    principal = ctx.principal
    if not principal:
        try:
            configured = load_config(ctx.home).get("signing", {}).get("principal")
        except Exception as exc:  # an unreadable config.toml names itself in the message
            raise SigningError(f"could not prepare the review signing key: {exc}") from exc
        if configured is not None and not isinstance(configured, str):
            raise SigningError(f"{ctx.home / 'config.toml'}: [signing].principal must be a string")
        principal, source = configured, f"{ctx.home / 'config.toml'} [signing].principal"
    if not principal:
        from agentreview.host.git import GitError, user_email

        try:
            principal, source = user_email(ctx.repo_root), "git config user.email"
        except GitError:
            principal = None
    if not principal:
        principal, source = f"agentproto-review@{hostname()}", "the host name"
    if not PRINCIPAL.match(principal):
        raise SigningError(
            f"principal {principal!r} (from {source}) cannot be written in allowed_signers: "
            "use one word without spaces or quotes, e.g. an email address"
        )
    return principal


def _refuse_non_regular(path: Path) -> None:
    """A key file that exists but is not a regular file (a FIFO, a device, a symlink planted in the
    keys directory) is refused: reading or writing it could hang or leak the key elsewhere."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise SigningError(
            f"could not prepare the review signing key: {path} is not a regular file — remove it and run again"
        )


def _read_public(public: Path) -> str:
    """The public key file's text, read through the bounded reader (never blocks on a FIFO)."""
    return read_regular_file(public, limit=64 * 1024, follow_symlinks=False).decode("utf-8")


ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
NOT_ONE_BLOCK = "signature sig is not exactly one armored SSH signature block"
_BASE64_LINE = re.compile(r"^[A-Za-z0-9+/]+={0,2}\Z")


def sshsig_blob(armored: str) -> bytes | None:
    """The SSHSIG blob of ``armored`` when it is exactly one armored block (whitespace aside), else ``None``.

    ssh-keygen reads the first block only and the ``keyFingerprint`` tie the whole text: so that the two
    readings never differ, anything beyond one block is refused before either runs."""
    import base64
    import binascii

    if not armored.isascii():
        return None
    lines = [line.rstrip("\r") for line in armored.strip().split("\n")]
    if len(lines) < 3 or lines[0] != ARMOR_BEGIN or lines[-1] != ARMOR_END:
        return None
    body = lines[1:-1]
    text = "".join(body)
    if not all(_BASE64_LINE.match(line) for line in body) or "=" in text.rstrip("="):
        return None  # padding only at the very end: base64 decoders disagree about data past it
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return blob if _sshsig_fields(blob) is not None else None


def _sshsig_fields(blob: bytes) -> list[bytes] | None:
    """The six fields after the magic and version of an SSHSIG blob (public key, namespace,
    reserved, hash algorithm, signature), ``None`` unless the blob is exactly those."""
    import struct

    if blob[:6] != b"SSHSIG" or len(blob) < 10:
        return None
    fields: list[bytes] = []
    at = 10
    for _ in range(5):
        if at + 4 > len(blob):
            return None
        (length,) = struct.unpack(">I", blob[at : at + 4])
        at += 4
        if at + length > len(blob):
            return None
        fields.append(blob[at : at + length])
        at += length
    return fields if at == len(blob) else None


def sshsig_key_fingerprint(armored: str) -> str | None:
    """``SHA256:...`` of the key an armored SSHSIG carries; ``None`` for anything but one block, or a certificate.

    ``keyFingerprint`` is outside the signed bytes, so a verifier ties it to the key that signed."""
    blob = sshsig_blob(armored)
    return _key_fingerprint(blob) if blob is not None else None


def _key_fingerprint(blob: bytes) -> str | None:
    """The fingerprint of the key in a blob :func:`sshsig_blob` accepted; ``None`` for a certificate."""
    import base64
    import hashlib
    import struct

    fields = _sshsig_fields(blob)
    key = fields[0] if fields is not None else b""
    if len(key) < 4:
        return None
    (type_len,) = struct.unpack(">I", key[:4])
    if key[4 : 4 + type_len].endswith(b"-cert-v01@openssh.com"):
        return None
    return "SHA256:" + base64.b64encode(hashlib.sha256(key).digest()).decode().rstrip("=")


class SshSigner:
    """Signs with the host's ed25519 key through ssh-keygen; verifies against allowed_signers."""

    name = "ssh"
    algorithms = (ALG,)

    # ------------------------------------------------------------------ the key

    def key_path(self, home: Path) -> Path:
        return keys_dir(home) / KEY_NAME

    def _ensure_key(self, ctx: SignerContext) -> Path:
        """Create the key on first use; concurrent first uses create exactly one key."""
        from agentreview.host.locks import FileLock, Timeout

        key = self.key_path(ctx.home)
        directory = key.parent
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(directory, 0o700)
            with FileLock(str(directory / f"{KEY_NAME}.lock"), timeout=ctx.timeout_s):
                _refuse_non_regular(key)
                _refuse_non_regular(key.with_suffix(".pub"))
                if key.is_file() and key.with_suffix(".pub").is_file():
                    if key.stat().st_mode & 0o077:
                        os.chmod(key, 0o600)
                    return key
                if key.is_file():
                    self._restore_public(key, ctx.timeout_s)
                    return key
                self._generate(key, ctx.timeout_s)
        except Timeout as exc:
            raise SigningError(
                f"could not prepare the review signing key: another process holds {directory}/{KEY_NAME}.lock"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise SigningError(
                f"could not prepare the review signing key: ssh-keygen did not finish within {ctx.timeout_s:.0f}s"
            ) from exc
        except OSError as exc:
            missing = isinstance(exc, FileNotFoundError) and exc.filename == "ssh-keygen"
            raise SigningError(f"could not prepare the review signing key: {NOT_FOUND if missing else exc}") from exc
        return key

    def _generate(self, key: Path, timeout: float) -> None:
        # Generated under a temporary name and renamed into place, public key first, so a
        # reader that does not take the lock never sees a private key without its .pub.
        tmp = key.with_name(f".{KEY_NAME}.tmp.{os.getpid()}")
        for stale in (tmp, tmp.with_name(tmp.name + ".pub")):
            stale.unlink(missing_ok=True)
        proc = _run(
            ["-q", "-t", "ed25519", "-N", "", "-C", f"{NAMESPACE}@{hostname()}", "-f", str(tmp)], timeout=timeout
        )
        if proc.returncode != 0:
            raise SigningError(f"could not prepare the review signing key: {_err(proc)}")
        os.chmod(tmp, 0o600)
        os.replace(tmp.with_name(tmp.name + ".pub"), key.with_suffix(".pub"))
        os.replace(tmp, key)

    def _restore_public(self, key: Path, timeout: float) -> None:
        os.chmod(key, 0o600)
        proc = _run(["-y", "-f", str(key)], timeout=timeout)
        if proc.returncode != 0:
            raise SigningError(f"could not prepare the review signing key: {key}: {_err(proc)}")
        atomic_write_bytes(key.with_suffix(".pub"), proc.stdout, mode=0o644)

    def _fingerprint(self, public: Path, timeout: float) -> str:
        """What ``ssh-keygen -lf`` prints, computed here; ssh-keygen is asked only when the public key
        file cannot be read as ``<algo> <base64 blob>``."""
        import base64
        import binascii
        import hashlib

        try:
            blob = base64.b64decode(_read_public(public).split()[1], validate=True)
        except (OSError, IndexError, ValueError, binascii.Error):
            blob = b""
        if blob:
            return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
        proc = _run(["-l", "-f", str(public)], timeout=timeout)
        fields = proc.stdout.decode("utf-8", "replace").split()
        if proc.returncode != 0 or len(fields) < 2 or not fields[1].startswith("SHA256:"):
            raise SigningError(f"could not prepare the review signing key: {public}: {_err(proc)}")
        return fields[1]

    def key_info(self, ctx: SignerContext) -> KeyInfo:
        if find_program("ssh-keygen") is None:
            raise SigningError(f"could not prepare the review signing key: {NOT_FOUND}")
        key = self._ensure_key(ctx)
        public = key.with_suffix(".pub")
        principal = _resolve_principal(ctx)
        try:
            fingerprint = self._fingerprint(public, ctx.timeout_s)
            algo, blob = _read_public(public).split()[:2]
        except (OSError, ValueError) as exc:
            raise SigningError(f"could not prepare the review signing key: {public}: {exc}") from exc
        except subprocess.TimeoutExpired as exc:
            raise SigningError("could not prepare the review signing key: ssh-keygen -l timed out") from exc
        line = f'{principal} namespaces="{NAMESPACE}" {algo} {blob}'
        return KeyInfo(fingerprint=fingerprint, principal=principal, public_key_path=public, allowed_signers_line=line)

    # ------------------------------------------------------------------ signing

    def sign(self, payload: bytes, ctx: SignerContext) -> dict[str, str]:
        from agentreview.model.attestation import now_iso

        if find_program("ssh-keygen") is None:
            raise SigningError(f"could not sign the attestation: {NOT_FOUND}")
        info = self.key_info(ctx)
        key = self.key_path(ctx.home)
        with tempfile.TemporaryDirectory(prefix="agentreview-sign-") as tmp:
            target = Path(tmp) / "attestation.json"
            target.write_bytes(payload)
            try:
                proc = _run(["-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(target)], timeout=ctx.timeout_s)
            except FileNotFoundError as exc:
                raise SigningError(f"could not sign the attestation: {NOT_FOUND}") from exc
            except subprocess.TimeoutExpired as exc:
                raise SigningError(
                    f"could not sign the attestation: ssh-keygen did not finish within {ctx.timeout_s:.0f}s"
                ) from exc
            if proc.returncode != 0:
                raise SigningError(f"could not sign the attestation: {_err(proc)}")
            try:
                sig = target.with_name("attestation.json.sig").read_text(encoding="ascii")
            except (OSError, UnicodeDecodeError) as exc:
                raise SigningError(f"could not sign the attestation: no readable signature ({exc})") from exc
        return {
            "alg": ALG,
            "keyFingerprint": info.fingerprint,
            "principal": info.principal,
            "signedAt": now_iso(),
            "sig": sig,
        }

    # ------------------------------------------------------------------ verifying

    def verify(self, payload: bytes, signature: Mapping[str, Any], allowed_signers: Path) -> str:
        if not signature:
            raise SignatureInvalidError("attestation is not signed")
        principal, sig, fingerprint = (signature.get(k) for k in ("principal", "sig", "keyFingerprint"))
        if signature.get("alg") != ALG:
            raise SignatureInvalidError(f"signature alg {signature.get('alg')!r} is not {ALG!r}")
        if not isinstance(principal, str) or not isinstance(sig, str) or not principal or not sig:
            raise SignatureInvalidError("signature has no principal or no sig")
        blob = sshsig_blob(sig)
        if blob is None:
            # Checked first: ssh-keygen would verify the first block of several, and the
            # keyFingerprint tie below must read the very block ssh-keygen checked.
            raise SignatureInvalidError(NOT_ONE_BLOCK)
        if not Path(allowed_signers).is_file():
            raise SignatureInvalidError(f"allowed_signers file not found: {allowed_signers}")
        if find_program("ssh-keygen") is None:
            raise SignatureInvalidError("ssh-keygen is not available — cannot verify signatures")
        with tempfile.TemporaryDirectory(prefix="agentreview-verify-") as tmp:
            sig_path = Path(tmp) / "attestation.sig"
            sig_path.write_text(sig if sig.endswith("\n") else sig + "\n", encoding="utf-8")
            try:
                found = _run(
                    ["-Y", "find-principals", "-f", str(allowed_signers), "-s", str(sig_path)], timeout=VERIFY_TIMEOUT_S
                )
                listed = found.stdout.decode("utf-8", "replace").splitlines() if found.returncode == 0 else []
                if principal not in listed:
                    raise SignatureInvalidError(
                        f"no principal '{principal}' maps to the signing key ({fingerprint}) in {allowed_signers}"
                    )
                checked = _run(
                    ["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig_path)],
                    timeout=VERIFY_TIMEOUT_S,
                    stdin=payload,
                )
            except FileNotFoundError as exc:
                raise SignatureInvalidError("ssh-keygen is not available — cannot verify signatures") from exc
            except subprocess.TimeoutExpired as exc:
                raise SignatureInvalidError("signature does not verify: ssh-keygen did not finish in time") from exc
        if checked.returncode != 0:
            raise SignatureInvalidError(f"signature does not verify: {_err(checked)}")
        signed_by = _key_fingerprint(blob)  # None only for a certificate key
        if signed_by is not None and signed_by != fingerprint:
            raise SignatureInvalidError(
                f"signature keyFingerprint {fingerprint!r} is not the key that signed ({signed_by})"
            )
        return principal


@hookimpl
def agentreview_register_signers(register: Any) -> None:
    register(SshSigner())
