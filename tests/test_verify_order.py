"""The order of ``agentreview verify``'s steps: nothing the change names is fetched before the signature.

Issue 9, item 4. Step 6 resolves the packs the checkout's ``uses[]`` names, and a
``git+https`` pack is fetched from a URL the change chose. The gate used to do that before
checking the signature, so with ``--require-signed`` an unsigned forged export still made
CI connect to that URL (a blind SSRF, for up to the pack timeout). Now the signature is
checked first, and with ``--require-signed`` no pack is resolved unless the signature
verified over an attestation of this very manifest. A pack that could not be resolved is
shown as unverified (``?``), never as ``✓``.

Real parts throughout: the HTTPS git server of tests/test_packs_git.py (which records every
request), real repositories, real ssh-keygen keys, the installed CLI in a real process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from https_git_server import GitHttpsServer, https_git_server, tls_material  # noqa: F401 - fixtures
from pack_helpers import PACK_CONSUMER, PACK_MD, PACK_RUBRIC
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture: fixtures)
    Key,
    Repo,
    allowed_signers,
    isolated_env,
    keys_fixture,
    sign,
)

from agentreview.model.digests import pack_digest_sha256

LOCAL_REF = "./packs/core"
LANES: list[dict[str, Any]] = [
    {"id": "types", "kind": "command", "status": "pass", "blocking": True, "findings": [], "durationMs": 1},
    {"id": "core/correctness", "kind": "agent", "status": "pass", "blocking": True, "findings": [],
     "durationMs": 1, "preset": "kimi"},
]  # fmt: skip


def _record(ref: str) -> dict[str, Any]:
    """The pack digest a host records, computed by the recipe, independently of the resolver."""
    sha = pack_digest_sha256(PACK_MD.encode(), [("./rubrics/correctness.md", PACK_RUBRIC.encode())])
    return {"ref": ref, "id": "core", "version": "1.2.3", "alg": "agentproto-pack-digest/v1", "sha256": sha}


@pytest.fixture
def served(https_git_server: GitHttpsServer) -> tuple[GitHttpsServer, str]:  # noqa: F811
    """The HTTPS server holding the pack, and the uses[] reference to its commit."""
    sha = https_git_server.make_repo("core", {"REVIEW.md": PACK_MD, "rubrics/correctness.md": PACK_RUBRIC})
    return https_git_server, https_git_server.ref("core", sha)


def _repo(tmp_path: Path, ref: str) -> Repo:
    files = {"packs/core/REVIEW.md": PACK_MD, "packs/core/rubrics/correctness.md": PACK_RUBRIC}
    return Repo(tmp_path / "repo", manifest=PACK_CONSUMER.replace("PACK_REF", ref), files=files)


def _trusted(tmp_path: Path, keys: dict[str, Key]) -> Path:
    return allowed_signers(tmp_path / "trusted" / "allowed_signers", keys["trusted"])


def _verify(repo: Repo, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``agentreview verify`` as CI runs it: the installed entry point in a real process."""
    return subprocess.run(
        [sys.executable, "-m", "agentreview", "verify", "--cwd", str(repo.root), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env or dict(os.environ),
    )


# --------------------------------------------------------------------------- --require-signed: no request


def test_an_unsigned_forged_export_makes_no_request(
    served: tuple[GitHttpsServer, str], keys: dict[str, Key], tmp_path: Path
) -> None:
    server, ref = served
    repo = _repo(tmp_path, ref)
    repo.export(repo.attestation(lanes=LANES, packs=[_record(ref)]))  # unsigned: anyone can write it
    proc = _verify(repo, "--require-signed", "--allowed-signers", str(_trusted(tmp_path, keys)))
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert server.hits == [], "the gate connected to a URL the change chose before any signature verified"
    assert "✓ pack digests" not in proc.stdout
    assert "? pack digests" in proc.stdout, proc.stdout
    assert "resolved only for an attestation of this manifest whose signature verified" in proc.stdout


def test_a_signature_by_an_untrusted_key_makes_no_request(
    served: tuple[GitHttpsServer, str], keys: dict[str, Key], tmp_path: Path
) -> None:
    server, ref = served
    repo = _repo(tmp_path, ref)
    repo.export(sign(repo.attestation(lanes=LANES, packs=[_record(ref)]), keys["other"]))
    proc = _verify(repo, "--json", "--require-signed", "--allowed-signers", str(_trusted(tmp_path, keys)))
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert server.hits == []
    payload = json.loads(proc.stdout)
    pack_line = next(c for c in payload["checks"] if c["check"] == "pack digests")
    assert pack_line["ok"] is False and pack_line["unverified"] is True


def test_a_signed_export_beside_an_edited_uses_makes_no_request(
    served: tuple[GitHttpsServer, str], keys: dict[str, Key], tmp_path: Path
) -> None:
    """A genuinely signed export of the reviewed manifest, and the checkout's REVIEW.md then
    edited to name the attacker's URL: the signature verifies, but not over this manifest."""
    server, ref = served
    repo = _repo(tmp_path, LOCAL_REF)
    repo.export(sign(repo.attestation(lanes=LANES, packs=[_record(LOCAL_REF)]), keys["trusted"]))
    (repo.root / "REVIEW.md").write_text(PACK_CONSUMER.replace("PACK_REF", ref))
    proc = _verify(repo, "--require-signed", "--allowed-signers", str(_trusted(tmp_path, keys)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "✓ signature" in proc.stdout
    assert server.hits == []


def test_an_honest_signed_export_still_resolves_its_packs(
    served: tuple[GitHttpsServer, str], keys: dict[str, Key], tmp_path: Path
) -> None:
    """The control: the same server is reached, and the digest compared, when the signature verified."""
    server, ref = served
    repo = _repo(tmp_path, ref)
    repo.export(sign(repo.attestation(lanes=LANES, packs=[_record(ref)]), keys["trusted"]))
    proc = _verify(repo, "--require-signed", "--allowed-signers", str(_trusted(tmp_path, keys)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any("git-upload-pack" in hit for hit in server.hits), server.hits
    assert "✓ pack digests" in proc.stdout
    lines = proc.stdout.splitlines()
    # Reported in the spec's order, whatever order the steps ran in.
    assert lines.index(next(x for x in lines if "pack digests" in x)) < lines.index(
        next(x for x in lines if "✓ signature" in x)
    )


# --------------------------------------------------------------------------- without --require-signed


def test_without_require_signed_the_signature_is_checked_before_any_pack_is_fetched(
    served: tuple[GitHttpsServer, str], keys: dict[str, Key], tmp_path: Path
) -> None:
    """Today's behaviour is kept (an unsigned export's packs are still resolved), but the
    signature comes first: every git and ssh-keygen process is logged, in order."""
    server, ref = served
    shim, log = tmp_path / "shim", tmp_path / "calls.log"
    shim.mkdir()
    log.write_text("")
    for tool in ("git", "ssh-keygen"):
        real = shutil.which(tool)
        assert real
        (shim / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\nexec "{real}" "$@"\n')
        (shim / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}

    repo = _repo(tmp_path, ref)
    repo.export(sign(repo.attestation(lanes=LANES, packs=[_record(ref)]), keys["trusted"]))
    proc = _verify(repo, "--allowed-signers", str(_trusted(tmp_path, keys)), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = log.read_text().splitlines()
    first_signature = next(i for i, c in enumerate(calls) if c.startswith("ssh-keygen -Y"))
    first_fetch = next(i for i, c in enumerate(calls) if c.startswith("git ") and server.base_url in c)
    assert first_signature < first_fetch, calls

    # An unsigned export without --require-signed: the packs are resolved, as before.
    server.hits.clear()
    shutil.rmtree(Path(os.environ["AGENTREVIEW_HOME"]), ignore_errors=True)  # no cached pack
    repo.export(repo.attestation(lanes=LANES, packs=[_record(ref)]))
    proc = _verify(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert server.hits and "✓ pack digests" in proc.stdout


# --------------------------------------------------------------------------- never a ✓ for what was not compared


def test_a_pack_that_cannot_be_resolved_is_never_shown_as_verified(
    served: tuple[GitHttpsServer, str], tmp_path: Path
) -> None:
    server, ref = served
    repo = _repo(tmp_path, ref)
    repo.export(repo.attestation(lanes=LANES, packs=[_record(ref)]))
    server.stop()  # the pack cannot be fetched here: a note, not a failure (spec step 6)
    text = _verify(repo)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "✓ pack digests" not in text.stdout
    assert "? pack digests" in text.stdout and "(not resolved here)" in text.stdout
    assert "pack digests not verified" in text.stdout
    payload = json.loads(_verify(repo, "--json").stdout)
    assert payload["ok"] is True
    pack_line = next(c for c in payload["checks"] if c["check"] == "pack digests")
    assert pack_line["ok"] is False and pack_line["unverified"] is True
