"""``agentreview verify`` as a user and a CI gate call it: exit codes, the text report, ``--json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    PRINCIPAL,
    Key,
    Repo,
    allowed_signers,
    isolated_env,
    keys_fixture,
    repo_fixture,
    sign,
)

from agentreview.cli.app import run_app


def cli(repo: Repo, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run_app(["verify", "--cwd", str(repo.root), *args])
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(repo: Repo, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code, out, _ = cli(repo, "--json", *args, capsys=capsys)
    payload = json.loads(out)
    assert payload["exitCode"] == code
    return code, payload


def test_text_report_lists_every_check_and_the_final_line(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    path = repo.export(repo.attestation())
    code, out, err = cli(repo, capsys=capsys)
    assert code == 0, (out, err)
    lines = out.splitlines()
    assert any(line.strip().startswith("✓ manifestSha") for line in lines)
    head_line = next(line for line in lines if line.strip().startswith("✓ target.headSha"))
    assert f"expected {repo.head}, actual {repo.head}" in head_line
    assert "notes:" in lines
    assert lines[-1] == f"verified: demo/default {repo.base[:10]}..{repo.head[:10]} → pass ({path})"


def test_text_report_shows_expected_and_actual_on_failure(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    raw = repo.attestation()
    raw["target"]["repoRemote"] = "github.com/evil/demo"
    repo.export(raw, name="x.json")
    code, out, _ = cli(repo, ".reviews/x.json", capsys=capsys)
    assert code == 1
    assert any(
        line.strip().startswith("✗ target.repoRemote")
        and "expected github.com/example/demo, actual github.com/evil/demo" in line
        for line in out.splitlines()
    ), out
    assert "  - repoRemote mismatch" in out
    assert out.splitlines()[-1].startswith("NOT verified (invalid, 1 problem)")


def test_json_payload(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    path = repo.export(repo.attestation())
    code, payload = cli_json(repo, capsys=capsys)
    assert code == 0
    assert payload["ok"] is True
    assert payload["problems"] == []
    assert payload["path"] == str(path)
    assert payload["verdict"] == "pass"
    assert payload["principal"] is None
    assert payload["notes"]
    assert {"ok", "problems", "notes", "path", "verdict", "principal", "exitCode"} <= payload.keys()


def test_signed_and_verified_shows_the_principal(
    repo: Repo, keys: dict[str, Key], capsys: pytest.CaptureFixture[str]
) -> None:
    repo.export(sign(repo.attestation(), keys["trusted"]))
    signers = allowed_signers(repo.root.parent / "allowed_signers", keys["trusted"])
    code, out, _ = cli(repo, "--allowed-signers", str(signers), "--require-signed", capsys=capsys)
    assert code == 0, out
    assert out.splitlines()[-1].endswith(f"[signed: {PRINCIPAL}]")
    assert f"signature verified: principal {PRINCIPAL}" in out
    code, payload = cli_json(repo, "--allowed-signers", str(signers), capsys=capsys)
    assert code == 0 and payload["principal"] == PRINCIPAL


def test_a_signature_alg_without_a_signer_exits_6_and_says_what_to_install(
    repo: Repo, keys: dict[str, Key], capsys: pytest.CaptureFixture[str]
) -> None:
    raw = sign(repo.attestation(), keys["trusted"])
    raw["attestor"]["signature"]["alg"] = "openssl-ed25519"
    repo.export(raw)
    signers = allowed_signers(repo.root.parent / "allowed_signers", keys["trusted"])
    code, out, _ = cli(repo, "--allowed-signers", str(signers), "--require-signed", capsys=capsys)
    assert code == 6, out
    assert "✗ signature" in out
    assert "  - no installed signer can check signature alg 'openssl-ed25519'" in out
    assert "install or enable the agentreview plugin whose signer declares 'openssl-ed25519'" in out
    assert out.splitlines()[-1].startswith("NOT verified (signature, 1 problem)")


def test_exit_codes(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    # 4: nothing exported for this range.
    code, payload = cli_json(repo, capsys=capsys)
    assert code == 4 and payload["reason"] == "not_found" and payload["headSha"] == repo.head
    # 6: unsigned but signatures required.
    repo.export(repo.attestation())
    code, payload = cli_json(repo, "--require-signed", capsys=capsys)
    assert code == 6 and payload["problems"] == ["attestation is not signed"]
    # 64: a bad --verdict, and a missing --allowed-signers file.
    code, _, err = cli(repo, "--verdict", "great", capsys=capsys)
    assert code == 64 and err.startswith("agentreview verify: Invalid value for '--verdict'") and "incomplete" in err
    code, _, err = cli(repo, "--allowed-signers", "missing", capsys=capsys)
    assert code == 64 and "missing" in err
    # 64: an unknown option is a usage error of the CLI frame.
    code, _, _ = cli(repo, "--no-such-flag", capsys=capsys)
    assert code == 64


def test_not_exported_exit_5_only_with_if_exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "repo", export_dir=False)
    code, payload = cli_json(repo, "--if-exported", capsys=capsys)
    assert code == 5 and payload["reason"] == "not_exported" and payload["ok"] is False
    code, _, err = cli(repo, capsys=capsys)
    assert code == 64 and "verdict.exportDir" in err and err[-1] == "\n" and err.count("\n") == 1


def test_could_not_run_is_one_line_on_stderr(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    (repo.root / "REVIEW.md").write_text("---\nkind: review\n---\n")
    code, out, err = cli(repo, capsys=capsys)
    assert code == 3
    assert out == ""
    assert err.startswith("agentreview verify: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_head_parent_retry_through_the_cli(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.export(repo.attestation())
    repo.commit("add export", {})
    code, out, _ = cli(repo, capsys=capsys)
    assert code == 0, out
    assert "verified its parent" in out


def test_real_process_json(repo: Repo) -> None:
    """The installed entry point, as CI runs it: a real process, exit code and stdout JSON."""
    raw = repo.attestation()
    raw["lanes"][0]["status"] = "fail"  # a verdict that no longer follows from its lanes
    repo.export(raw)
    env = {**os.environ, "AGENTREVIEW_HOME": str(repo.root.parent / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "verify", "--json", "--cwd", str(repo.root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False
    assert "verdict 'pass' does not follow from its lanes (expected 'block')" in payload["problems"]


# A REVIEW.md that is a FIFO or a stream (a link to one the change can commit) would block a plain
# open() or read() forever; the gate must refuse it at once (exit 3), with --policy-from too.
STREAMS = ["fifo", "/dev/stdin", "/proc/self/fd/1"]
NOT_REGULAR = "file: is not a regular file (a FIFO, device or socket, or a link to one) — refusing to read it"


def _link_manifest(root: Path, target: str) -> Path:
    manifest = root / "REVIEW.md"
    if target == "fifo":
        fifo = root.parent / f"{root.name}.fifo"
        os.mkfifo(fifo)
        target = str(fifo)
    manifest.unlink(missing_ok=True)
    manifest.symlink_to(target)
    return manifest


def _verify_process(root: Path, home: Path, *args: str) -> tuple[int, str, str]:
    """``agentreview verify`` as CI runs it, with its stdin and stdout pipes held open by us until it
    exits (a read of either would block: no writer ever comes) and a bound well under the test's."""
    env = {**os.environ, "AGENTREVIEW_HOME": str(home)}
    with subprocess.Popen(
        [sys.executable, "-m", "agentreview", "verify", *args],
        cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as proc:  # fmt: skip
        try:
            proc.wait(timeout=120)  # its output is a few lines: the pipes cannot fill
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"agentreview verify {' '.join(args)} hung on a REVIEW.md that is not a regular file")
        assert proc.stdout is not None and proc.stderr is not None
        return proc.returncode, proc.stdout.read(), proc.stderr.read()


@pytest.mark.parametrize("target", STREAMS)
def test_a_manifest_linked_to_a_fifo_or_a_stream_is_refused_at_once(git_repo, tmp_path: Path, target: str) -> None:
    root = git_repo()
    manifest = _link_manifest(root, target)
    code, out, err = _verify_process(root, tmp_path / "home", "--base", "main")
    assert code == 3 and out == "", (out, err)
    assert err == f"agentreview verify: {manifest}: {NOT_REGULAR}; fix: point --manifest at the REVIEW.md file itself\n"


@pytest.mark.parametrize("target", STREAMS)
def test_a_manifest_named_by_path_that_is_a_stream_is_refused_at_once(git_repo, tmp_path: Path, target: str) -> None:
    root = git_repo()
    named = str(_link_manifest(root, target)) if target == "fifo" else target
    code, _, err = _verify_process(root, tmp_path / "home", "--manifest", named)
    assert code == 3 and NOT_REGULAR in err, err


@pytest.mark.parametrize("target", STREAMS)
def test_with_policy_from_a_checkout_manifest_that_is_a_stream_fails_at_once(
    git_repo, tmp_path: Path, target: str
) -> None:
    """REF's manifest is read from git; the checkout's, compared with it, is a link to a stream the change
    committed: the comparison refuses to read it, so the policy check fails instead of hanging."""
    root = git_repo(files={"REVIEW.md": "---\nkind: review\nid: demo\ntarget: { kind: git-range, base: main }\n"
                                        "verdict: { exportDir: .reviews }\nchecks:\n  - id: t\n    kind: command\n"
                                        "    run: \"true\"\n---\n"})  # fmt: skip
    subprocess.run(["git", "switch", "-q", "-c", "feature"], cwd=root, check=True, timeout=30)
    _link_manifest(root, target)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, timeout=30)
    subprocess.run(["git", "commit", "-q", "-m", "manifest as a link"], cwd=root, check=True, timeout=30)
    code, out, err = _verify_process(root, tmp_path / "home", "--policy-from", "main", "--base", "main")
    assert code in (1, 3) and "hung" not in err, (out, err)
    assert "edits the review policy" in out + err or NOT_REGULAR in out + err, (out, err)
