"""Signing with the built-in ssh signer and a real ssh-keygen: the key, the round trip, and the attacks."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentreview.model.attestation import Attestation
from agentreview.model.contracts import SignatureInvalidError, SignerContext, SigningError
from agentreview.plugins.registry import load_registry
from agentreview.signing.signers import sign_attestation, verify_signature
from agentreview.signing.ssh_signer import SshSigner


def make_att(**extra: Any) -> Attestation:
    att = Attestation.build(
        run_id="review-0001",
        review_id="widgets",
        manifest_sha="a" * 64,
        binding="default",
        repo_remote="github.com/acme/widgets",
        base_sha="1" * 40,
        head_sha="2" * 40,
        lanes=[{"id": "types", "kind": "command", "status": "pass", "blocking": True, "findings": [],
                "durationMs": 12.5, "exitCode": 0}],
        daemon="agentreview-test@host",
        rubrics=[],
    )
    return Attestation.read({**att.to_json_dict(), **extra}) if extra else att


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTREVIEW_HOME", str(home))
    # no global or system git identity leaks into the principal
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


@pytest.fixture(scope="module")
def registry() -> Any:
    return load_registry(only=["builtin-ssh-signer"])


def allowed_signers(tmp_path: Path, home: Path, principal: str, name: str = "allowed_signers") -> Path:
    info = SshSigner().key_info(SignerContext(home=home, principal=principal))
    path = tmp_path / name
    path.write_text(info.allowed_signers_line + "\n")
    return path


def signed(home: Path, registry: Any, principal: str = "ci@acme.example", att: Attestation | None = None) -> dict:
    result, error = sign_attestation(att or make_att(), registry=registry, home=home, repo_root=None,
                                     principal=principal)
    assert error is None
    return json.loads(result.export_text())  # exactly what a verifier reads from an export file


# --------------------------------------------------------------------------- the key


def test_key_is_created_private_on_first_use(home: Path) -> None:
    info = SshSigner().key_info(SignerContext(home=home, principal="ci@acme.example"))
    key = home / "keys" / "review_ed25519"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert info.public_key_path == key.with_suffix(".pub")
    comment = info.public_key_path.read_text().split()[2]
    assert comment.startswith("agentproto-review@")
    assert info.fingerprint.startswith("SHA256:")
    algo, blob = info.public_key_path.read_text().split()[:2]
    assert info.allowed_signers_line == f'ci@acme.example namespaces="agentproto-review" {algo} {blob}'
    fp = subprocess.run(["ssh-keygen", "-lf", str(info.public_key_path)], capture_output=True, text=True, check=True)
    assert fp.stdout.split()[1] == info.fingerprint
    again = SshSigner().key_info(SignerContext(home=home, principal="ci@acme.example"))
    assert again.fingerprint == info.fingerprint  # reused, not regenerated


def test_concurrent_first_use_creates_one_key(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "first_use.py"
    script.write_text(textwrap.dedent(f"""
        from pathlib import Path
        from agentreview.signing.ssh_signer import SshSigner
        from agentreview.model.contracts import SignerContext
        print(SshSigner().key_info(SignerContext(home=Path({str(home)!r}), principal="p@x")).fingerprint)
    """))
    procs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True) for _ in range(5)]
    prints = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(prints) == 1 and next(iter(prints)).startswith("SHA256:")
    assert sorted(os.listdir(home / "keys")) == ["review_ed25519", "review_ed25519.lock", "review_ed25519.pub"]


def test_principal_sources_in_order(home: Path, tmp_path: Path) -> None:
    signer = SshSigner()
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "dev@acme.example"], check=True)
    host = signer.key_info(SignerContext(home=home)).principal
    assert host.startswith("agentproto-review@")
    assert signer.key_info(SignerContext(home=home, repo_root=repo)).principal == "dev@acme.example"
    (home / "config.toml").write_text('[signing]\nprincipal = "ci@acme.example"\n')
    assert signer.key_info(SignerContext(home=home, repo_root=repo)).principal == "ci@acme.example"
    assert signer.key_info(SignerContext(home=home, repo_root=repo, principal="me@x")).principal == "me@x"


@pytest.mark.parametrize("bad", ["two words", 'quo"te', "a,b", "*@acme.example", "line\nbreak"])
def test_a_principal_that_cannot_be_one_allowed_signers_identity_is_refused(home: Path, bad: str) -> None:
    with pytest.raises(SigningError, match="cannot be written in allowed_signers"):
        SshSigner().key_info(SignerContext(home=home, principal=bad))


# --------------------------------------------------------------------------- sign and verify


def test_sign_then_verify_round_trip(home: Path, tmp_path: Path, registry: Any) -> None:
    raw = signed(home, registry)
    sig = raw["attestor"]["signature"]
    assert sig["alg"] == "ssh-ed25519" and sig["principal"] == "ci@acme.example"
    assert sig["sig"].startswith("-----BEGIN SSH SIGNATURE-----")
    assert sig["keyFingerprint"].startswith("SHA256:") and sig["signedAt"].endswith("Z")
    Attestation.read(raw)  # the signature member has the attestation's shape
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    assert verify_signature(raw, signers, registry) == "ci@acme.example"
    # the signature does not cover itself: the key order of the file does not matter either
    reordered = json.loads(json.dumps(raw, sort_keys=True))
    assert verify_signature(reordered, signers, registry) == "ci@acme.example"


def test_the_signed_bytes_are_the_canonical_attestation_without_the_signature(
    home: Path, tmp_path: Path, registry: Any
) -> None:
    att = make_att()
    raw = signed(home, registry, att=att)
    payload = tmp_path / "payload"
    payload.write_bytes(att.signed_bytes())
    sig = tmp_path / "payload.sig"
    sig.write_text(raw["attestor"]["signature"]["sig"])
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    with payload.open("rb") as fh:
        proc = subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", "ci@acme.example", "-n", "agentproto-review",
             "-s", str(sig)], stdin=fh, capture_output=True, text=True, timeout=30,
        )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "tamper",
    [
        lambda a: a.update(verdict="block"),
        lambda a: a["lanes"][0].update(durationMs=13),
        lambda a: a["target"].update(headSha="3" * 40),
        lambda a: a.update(requester={"sessionId": "someone-else"}),
        lambda a: a["attestor"].update(daemon="other@host"),
    ],
)
def test_a_tampered_payload_does_not_verify(home: Path, tmp_path: Path, registry: Any, tamper: Any) -> None:
    raw = signed(home, registry)
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    forged = copy.deepcopy(raw)
    tamper(forged)
    with pytest.raises(SignatureInvalidError, match=r"^signature does not verify: "):
        verify_signature(forged, signers, registry)


def test_members_a_newer_host_added_stay_covered(home: Path, tmp_path: Path, registry: Any) -> None:
    raw = signed(home, registry, att=make_att(reviewNotes={"tool": "future"}))
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    assert verify_signature(raw, signers, registry) == "ci@acme.example"
    stripped = copy.deepcopy(raw)
    del stripped["reviewNotes"]
    with pytest.raises(SignatureInvalidError, match="does not verify"):
        verify_signature(stripped, signers, registry)


def test_a_claimed_principal_the_key_is_not_trusted_for_is_refused(home: Path, tmp_path: Path, registry: Any) -> None:
    raw = signed(home, registry)
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    forged = copy.deepcopy(raw)
    forged["attestor"]["signature"]["principal"] = "release-bot@acme.example"
    fp = raw["attestor"]["signature"]["keyFingerprint"]
    with pytest.raises(SignatureInvalidError) as err:
        verify_signature(forged, signers, registry)
    assert str(err.value) == f"no principal 'release-bot@acme.example' maps to the signing key ({fp}) in {signers}"


def test_a_signature_by_another_key_is_refused(home: Path, tmp_path: Path, registry: Any) -> None:
    raw = signed(home, registry)
    other_home = tmp_path / "other-home"
    signers = allowed_signers(tmp_path, other_home, "ci@acme.example")  # same principal, another host's key
    with pytest.raises(SignatureInvalidError, match=r"^no principal 'ci@acme\.example' maps to the signing key"):
        verify_signature(raw, signers, registry)


def test_a_key_trusted_for_another_namespace_is_refused(home: Path, tmp_path: Path, registry: Any) -> None:
    raw = signed(home, registry)
    line = SshSigner().key_info(SignerContext(home=home, principal="ci@acme.example")).allowed_signers_line
    signers = tmp_path / "git_signers"
    signers.write_text(line.replace('namespaces="agentproto-review"', 'namespaces="git"') + "\n")
    with pytest.raises(SignatureInvalidError):
        verify_signature(raw, signers, registry)


def test_a_signature_made_for_another_namespace_is_refused(home: Path, tmp_path: Path, registry: Any) -> None:
    att = make_att()
    raw = signed(home, registry, att=att)
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    payload = tmp_path / "payload"
    payload.write_bytes(att.signed_bytes())
    key = home / "keys" / "review_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "git", str(payload)], check=True,
                   capture_output=True, timeout=30)
    forged = copy.deepcopy(raw)
    forged["attestor"]["signature"]["sig"] = (tmp_path / "payload.sig").read_text()
    with pytest.raises(SignatureInvalidError):
        verify_signature(forged, signers, registry)


def test_missing_allowed_signers_and_unsigned_attestations(home: Path, tmp_path: Path, registry: Any) -> None:
    raw = signed(home, registry)
    missing = tmp_path / "nope" / "allowed_signers"
    with pytest.raises(SignatureInvalidError) as err:
        verify_signature(raw, missing, registry)
    assert str(err.value) == f"allowed_signers file not found: {missing}"
    unsigned = make_att().to_json_dict()
    with pytest.raises(SignatureInvalidError, match=r"^attestation is not signed$"):
        verify_signature(unsigned, missing, registry)
    odd = copy.deepcopy(raw)
    odd["attestor"]["signature"]["alg"] = "x509"
    with pytest.raises(SignatureInvalidError, match="no installed signer can check signature alg 'x509'"):
        verify_signature(odd, missing, registry)


def test_without_ssh_keygen_signing_is_an_error_string_and_verify_says_why(
    home: Path, tmp_path: Path, registry: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = signed(home, registry)
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    att = make_att()
    result, error = sign_attestation(att, registry=registry, home=home, repo_root=None, principal="ci@acme.example")
    assert error == "could not sign the attestation: ssh-keygen not found on PATH"
    assert result.attestor.signature is None
    with pytest.raises(SignatureInvalidError, match=r"^ssh-keygen is not available — cannot verify signatures$"):
        verify_signature(raw, signers, registry)


def test_signing_never_raises(home: Path, registry: Any) -> None:
    att = make_att()
    home.mkdir(parents=True)
    (home / "config.toml").write_text('[signing]\nsigner = "gpg"\n')
    result, error = sign_attestation(att, registry=registry, home=home, repo_root=None)
    assert result is att and error is not None and "no signer named 'gpg'" in error
    (home / "config.toml").write_text("[signing\n")
    result, error = sign_attestation(att, registry=registry, home=home, repo_root=None)
    assert result is att and error is not None and "config.toml" in error
    (home / "config.toml").unlink()
    (home / "keys").mkdir()
    (home / "keys" / "review_ed25519").write_text("not a key\n")
    result, error = sign_attestation(att, registry=registry, home=home, repo_root=None, principal="p@x")
    assert result is att and error is not None and error.startswith("could not prepare the review signing key: ")


def test_fingerprint_matches_ssh_keygen(tmp_path: Path) -> None:
    """The fingerprint is computed in-process; it must equal what ssh-keygen -lf prints."""
    key = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    expected = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(key) + ".pub"], check=True, capture_output=True, text=True, timeout=30
    ).stdout.split()[1]
    assert SshSigner()._fingerprint(Path(str(key) + ".pub"), 30) == expected
    # an unreadable public key falls back to ssh-keygen, which reports the problem
    broken = tmp_path / "broken.pub"
    broken.write_text("not a key\n")
    with pytest.raises(SigningError, match="could not prepare the review signing key"):
        SshSigner()._fingerprint(broken, 30)


# --------------------------------------------------------------------------- signers by alg


def test_the_builtin_signer_declares_and_writes_ssh_ed25519(home: Path, registry: Any) -> None:
    assert SshSigner.algorithms == ("ssh-ed25519",)
    assert isinstance(registry.signer_for_alg("ssh-ed25519"), SshSigner)
    assert set(registry.signature_algs) == {"ssh-ed25519"}
    assert registry.signer_for_alg("openssl-ed25519") is None
    assert signed(home, registry)["attestor"]["signature"]["alg"] == "ssh-ed25519"


class _RelabellingSigner(SshSigner):
    """The real ssh signer, but it records an alg it does not declare (a plugin bug)."""

    name = "relabelling"
    algorithms = ("ssh-ed25519-v2",)

    def sign(self, payload: bytes, ctx: SignerContext) -> dict[str, str]:
        return {**super().sign(payload, ctx), "alg": "ssh-ed25519"}


def test_a_signer_that_writes_an_alg_it_does_not_declare_leaves_the_run_unsigned(home: Path) -> None:
    from agentreview import hookimpl

    class Plugin:
        @staticmethod
        @hookimpl
        def agentreview_register_signers(register: Any) -> None:
            register(_RelabellingSigner())

    reg = load_registry(load_entry_points=False, extra_plugins=[("relabel", Plugin())])
    assert reg.signer_for_alg("ssh-ed25519-v2") is not None and reg.signer_for_alg("ssh-ed25519") is None
    home.mkdir(parents=True)
    (home / "config.toml").write_text('[signing]\nsigner = "relabelling"\n')
    att = make_att()
    result, error = sign_attestation(att, registry=reg, home=home, repo_root=None, principal="ci@acme.example")
    assert result is att and result.attestor.signature is None
    assert error == (
        "could not sign the attestation: signer 'relabelling' wrote signature alg 'ssh-ed25519', "
        "which is not among the algorithms it declares (ssh-ed25519-v2)"
    )


# --------------------------------------------------------------------------- one armored block


def _second_block(home: Path, tmp_path: Path, att: Attestation) -> str:
    """An armored SSHSIG over the same bytes by another key: the block an attacker appends."""
    key = tmp_path / "other_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    payload = tmp_path / "other-payload"
    payload.write_bytes(att.signed_bytes())
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "agentproto-review", str(payload)],
                   check=True, capture_output=True, timeout=30)  # fmt: skip
    return (tmp_path / "other-payload.sig").read_text()


@pytest.mark.parametrize("where", ["appended", "prepended", "garbage-after", "text-before"])
def test_a_sig_that_is_not_exactly_one_armored_block_is_refused(
    home: Path, tmp_path: Path, registry: Any, where: str
) -> None:
    """Attack (issue 9, item 11): a second armored block appended to ``sig`` still verified
    (ssh-keygen reads the first), while the keyFingerprint cross-check could not parse the
    whole and was skipped, so keyFingerprint could name any key."""
    att = make_att()
    raw = signed(home, registry, att=att)
    signers = allowed_signers(tmp_path, home, "ci@acme.example")
    sig = raw["attestor"]["signature"]["sig"]
    other = _second_block(home, tmp_path, att)
    forged = copy.deepcopy(raw)
    forged["attestor"]["signature"]["sig"] = {
        "appended": sig + other,
        "prepended": other + sig,
        "garbage-after": sig + "trailing words\n",
        "text-before": "hello\n" + sig,
    }[where]
    forged["attestor"]["signature"]["keyFingerprint"] = "SHA256:" + "A" * 43  # names no key at all
    with pytest.raises(SignatureInvalidError, match="not exactly one armored SSH signature block"):
        verify_signature(forged, signers, registry)
    # The honest signature, with or without its final newline, still verifies.
    assert verify_signature(raw, signers, registry) == "ci@acme.example"
    stripped = copy.deepcopy(raw)
    stripped["attestor"]["signature"]["sig"] = sig.rstrip("\n")
    assert verify_signature(stripped, signers, registry) == "ci@acme.example"


def test_sshsig_fingerprint_reads_only_one_armored_block(home: Path, tmp_path: Path, registry: Any) -> None:
    from agentreview.signing.ssh_signer import sshsig_key_fingerprint

    att = make_att()
    sig = signed(home, registry, att=att)["attestor"]["signature"]["sig"]
    assert sshsig_key_fingerprint(sig) is not None
    assert sshsig_key_fingerprint(sig + _second_block(home, tmp_path, att)) is None
    assert sshsig_key_fingerprint("hello\n" + sig) is None
