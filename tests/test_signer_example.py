"""The third-party signer example in docs/examples is complete and selectable as the host's signer.

It is installed as a distribution in a private folder put on PYTHONPATH (its package plus a
dist-info generated from its own pyproject.toml, as pip would write them), so only the
processes a test starts see it and the venv stays untouched. Then, with real git, real
``agentreview`` processes and the real ``openssl`` and ``ssh-keygen``: run (signed by the
example) -> export -> ``verify --require-signed`` against the example's allowed-signers file
passes; tampering, an untrusted key and a missing plugin fail with exit 6; the built-in ssh
signer still writes ``ssh-ed25519`` with the example installed.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "agentreview-signer-example"
MANIFEST = manifest("  - id: ok\n    kind: command\n    run: 'true'\n", extra="verdict:\n  exportDir: .reviews\n")
PRINCIPAL = "ci@example.test"


@pytest.fixture(scope="module")
def example_site(install_example: Callable[[str], Path]) -> Path:
    return install_example("agentreview-signer-example")


class Host:
    """One agentreview host: its home (config.toml, keys, ledger) and whether the example is installed."""

    def __init__(self, home: Path, site: Path | None, signer: str | None = "openssl-example"):
        self.home, self.site = home, site
        home.mkdir(parents=True, exist_ok=True)
        config = f'[signing]\nprincipal = "{PRINCIPAL}"\n'
        if signer:
            config += f'signer = "{signer}"\n'
        (home / "config.toml").write_text(config)

    def env(self, repo: Repo) -> dict[str, str]:
        env = dict(repo.env, AGENTREVIEW_HOME=str(self.home))
        if self.site is not None:
            env["PYTHONPATH"] = str(self.site)
        return env

    def cli(self, repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTREVIEW, *args], cwd=repo.path, env=self.env(repo), capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def json(self, repo: Repo, *args: str, expect: int = 0) -> Any:
        proc = self.cli(repo, *args, "--json")
        assert proc.returncode == expect, (proc.returncode, proc.stdout, proc.stderr)
        return json.loads(proc.stdout)

    def allowed_signers(self, repo: Repo, path: Path) -> Path:
        path.write_text(self.json(repo, "key")["allowedSignersLine"] + "\n")
        return path

    def run_and_export(self, repo: Repo) -> Path:
        run = self.json(repo, "run")
        assert run["status"] == "done" and not run.get("signingError"), run
        exported = self.json(repo, "export", run["runId"], "--cwd", str(repo.path))
        return Path(exported["path"])


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo", tmp_path / "unused-home")
    r.commit("review", **{"REVIEW.md": MANIFEST, "src__app.txt": "v0\n"})
    r.git("switch", "-q", "-c", "feature")
    r.commit("feature work", **{"src__app.txt": "v1\n"})
    return r


def verify(host: Host, repo: Repo, signers: Path, export: Path | None = None) -> tuple[int, dict[str, Any]]:
    args = ["verify", *([str(export)] if export else []), "--require-signed", "--allowed-signers", str(signers)]
    proc = host.cli(repo, *args, "--json")
    payload = json.loads(proc.stdout)
    assert payload["exitCode"] == proc.returncode, proc.stderr
    return proc.returncode, payload


def test_example_signer_is_listed_with_its_alg(example_site: Path, repo: Repo, tmp_path: Path) -> None:
    rows = {row["name"]: row for row in Host(tmp_path / "h", example_site).json(repo, "plugins")}
    assert rows["signer-example"]["distribution"] == "agentreview-signer-example"
    assert rows["signer-example"]["provides"] == ["signers:openssl-example"]


def test_run_export_verify_round_trip_with_the_example_signer(example_site: Path, repo: Repo, tmp_path: Path) -> None:
    host = Host(tmp_path / "home", example_site)
    key = host.json(repo, "key")
    assert key["principal"] == PRINCIPAL and key["fingerprint"].startswith("SHA256:")
    assert Path(key["publicKeyPath"]) == host.home / "keys" / "example-ed25519.pub.pem"
    assert ((host.home / "keys" / "example-ed25519.pem").stat().st_mode & 0o777) == 0o600
    signers = host.allowed_signers(repo, tmp_path / "allowed_signers")

    export = host.run_and_export(repo)
    signature = json.loads(export.read_text())["attestor"]["signature"]
    assert signature["alg"] == "openssl-ed25519"
    assert signature["keyFingerprint"] == key["fingerprint"] and signature["principal"] == PRINCIPAL

    code, result = verify(host, repo, signers)
    assert code == 0, result
    assert result["ok"] and result["principal"] == PRINCIPAL and result["path"] == str(export)
    text = host.cli(repo, "verify", "--require-signed", "--allowed-signers", str(signers))
    assert text.returncode == 0 and text.stdout.splitlines()[-1].endswith(f"[signed: {PRINCIPAL}]")


def test_a_tampered_or_untrusted_example_signature_fails(example_site: Path, repo: Repo, tmp_path: Path) -> None:
    host = Host(tmp_path / "home", example_site)
    signers = host.allowed_signers(repo, tmp_path / "allowed_signers")
    export = host.run_and_export(repo)
    original = json.loads(export.read_text())

    # Edited after signing: a member the signature covers (the verdict still follows from the lanes).
    forged = json.loads(export.read_text())
    forged["lanes"][0]["durationMs"] = original["lanes"][0]["durationMs"] + 1000  # never the recorded value
    forged_path = export.with_name("forged.json")
    forged_path.write_text(json.dumps(forged, indent=2))
    code, result = verify(host, repo, signers, forged_path)
    assert code == 6 and result["reason"] == "signature"
    assert result["problems"] == ["signature does not verify: Signature Verification Failure"]
    forged_path.unlink()

    # Another host's key under the same principal is not trusted.
    other = Host(tmp_path / "other-home", example_site)
    code, result = verify(host, repo, other.allowed_signers(repo, tmp_path / "other_signers"))
    assert code == 6
    assert result["problems"] == [
        f"no key with fingerprint {original['attestor']['signature']['keyFingerprint']} is trusted for principal "
        f"'{PRINCIPAL}' in {tmp_path / 'other_signers'}"
    ]

    # The signature of one export does not vouch for another.
    sig = original["attestor"]["signature"]["sig"]
    other_sig = other.run_and_export(repo)
    moved = json.loads(other_sig.read_text())
    moved["attestor"]["signature"] = {**original["attestor"]["signature"], "sig": sig}
    moved["createdAt"] = "2030-01-01T00:00:00.000Z"
    other_sig.write_text(json.dumps(moved, indent=2))
    code, result = verify(host, repo, signers, other_sig)
    assert code == 6 and result["problems"][0].startswith("signature does not verify")


def test_without_the_example_installed_verify_names_the_alg(example_site: Path, repo: Repo, tmp_path: Path) -> None:
    host = Host(tmp_path / "home", example_site)
    signers = host.allowed_signers(repo, tmp_path / "allowed_signers")
    host.run_and_export(repo)
    bare = Host(tmp_path / "gate-home", None, signer=None)
    code, result = verify(bare, repo, signers)
    assert code == 6 and result["reason"] == "signature"
    (problem,) = result["problems"]
    assert problem.startswith("no installed signer can check signature alg 'openssl-ed25519'")
    assert "install or enable the agentreview plugin" in problem


def test_the_builtin_ssh_signer_still_writes_ssh_ed25519_beside_the_example(
    example_site: Path, repo: Repo, tmp_path: Path
) -> None:
    ssh_host = Host(tmp_path / "ssh-home", example_site, signer=None)  # the default signer, example installed
    signers = ssh_host.allowed_signers(repo, tmp_path / "ssh_allowed_signers")
    assert 'namespaces="agentproto-review" ssh-ed25519 ' in signers.read_text()
    export = ssh_host.run_and_export(repo)
    assert json.loads(export.read_text())["attestor"]["signature"]["alg"] == "ssh-ed25519"
    code, result = verify(ssh_host, repo, signers)
    assert code == 0 and result["principal"] == PRINCIPAL, result
