"""What ``agentreview verify`` prints from an export: never a traceback, whatever the strings hold.

Issue 9, item 12: a lone surrogate (``"\\ud800"`` written as a JSON escape, which strict
JSON accepts and canonical JSON writes back the same way) in a string of an export that
the report prints ended in "internal error", exit 3, because stdout cannot encode it. It
is now printed escaped, and ``--json`` stays JSON that reads back to the same string.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    Key,
    Repo,
    allowed_signers,
    isolated_env,
    keys_fixture,
    repo_fixture,
    sign,
)

LONE = "\ud800"


def _run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed entry point in a real process with a strict UTF-8 stdout, as CI runs it."""
    env = {**os.environ, "AGENTREVIEW_HOME": str(repo.root.parent / "home"), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "agentreview", "verify", "--cwd", str(repo.root), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="strict",
        timeout=120,
        env=env,
    )


def _export_with_lone_surrogates(repo: Repo, *, tamper: bool) -> Path:
    raw = repo.attestation(correctness={
        "summary": f"summary {LONE}",
        "findings": [{"severity": "low", "title": f"title {LONE}", "detail": "d"}],
    })  # fmt: skip
    raw["reviewId"] = f"demo{LONE}"  # printed in the final line
    raw["attestor"]["daemon"] = f"host{LONE}"
    if tamper:
        raw["verdict"] = f"pass{LONE}"  # printed as a check's actual value and in a problem
    path = repo.root / ".reviews" / "demo.json"
    path.parent.mkdir(exist_ok=True)
    # json.dumps writes the lone surrogate as the escape \ud800, as another host's export would.
    path.write_text(json.dumps(raw, indent=2) + "\n", encoding="ascii")
    assert "\\ud800" in path.read_text()
    return path


@pytest.mark.parametrize("tamper", [False, True], ids=["verified", "invalid"])
def test_a_lone_surrogate_in_an_export_is_printed_escaped(repo: Repo, tamper: bool) -> None:
    _export_with_lone_surrogates(repo, tamper=tamper)
    expected = 1 if tamper else 0

    text = _run(repo)
    assert "internal error" not in text.stderr and "Traceback" not in text.stderr, text.stderr
    assert text.returncode == expected, text.stdout + text.stderr
    assert "demo\\ud800/default" in text.stdout  # escaped, readable, and on one line
    if tamper:
        assert "pass\\ud800" in text.stdout

    as_json = _run(repo, "--json")
    assert "internal error" not in as_json.stderr and "Traceback" not in as_json.stderr, as_json.stderr
    assert as_json.returncode == expected, as_json.stdout + as_json.stderr
    payload = json.loads(as_json.stdout)  # the escape is JSON's own: it reads back as the same string
    assert payload["reviewId"] == f"demo{LONE}"
    assert payload["exitCode"] == expected
    if tamper:
        assert payload["verdict"] == f"pass{LONE}"
        assert any(LONE in p for p in payload["problems"]), payload["problems"]


@pytest.mark.parametrize("signers", [True, False], ids=["checked", "no-allowed-signers"])
def test_a_lone_surrogate_in_the_claimed_principal_is_printed_escaped(
    repo: Repo, keys: dict[str, Key], tmp_path: Path, signers: bool
) -> None:
    raw = sign(repo.attestation(), keys["trusted"])
    raw["attestor"]["signature"]["principal"] = f"ci{LONE}@example.com"  # outside the signed bytes
    repo.export(raw)
    args = ["--allowed-signers", str(allowed_signers(tmp_path / "as", keys["trusted"]))] if signers else []
    expected = 6 if signers else 0
    text = _run(repo, *args)
    assert "Traceback" not in text.stderr and "internal error" not in text.stderr, text.stderr
    assert text.returncode == expected, text.stdout + text.stderr
    assert "ci\\ud800@example.com" in text.stdout
    as_json = _run(repo, "--json", *args)
    assert as_json.returncode == expected, as_json.stdout + as_json.stderr
    payload = json.loads(as_json.stdout)
    assert any(f"ci{LONE}@example.com" in line for line in payload["problems"] + payload["notes"]), payload
