"""A lone surrogate in a reviewer's finding is recorded, signed, exported, published and verified.

JSON lets a string hold a lone surrogate (``"\\ud800"``), so a reviewer's answer may carry one;
the spec's canonical form writes it as ``JSON.stringify`` does, the escape ``\\ud800``. Before,
writing the ledger entry as UTF-8 failed (exit 3, nothing recorded). Through the real CLI, with
the ``exec`` provider running a reviewer script (a stand-in: a real model cannot be made to
answer with a lone surrogate on demand): the run records and signs, the ledger entry, the export
and the note hold the escape, their digest is the canonical form's, verify passes on the export
(HEAD^ rule), on the note and with the signature checked, and the SARIF log, the summary and the
terminal show the escape.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agentreview.model.digests import attestation_sha256_of, canonical_json, loads_strict
from tests.report_helpers import GateRepo, git, validate_sarif

TITLE = "bad \ud800 title"
DETAIL = "alone \udfff, low before high \udc00\ud800"
FINDINGS = [{"severity": "low", "title": TITLE, "detail": DETAIL, "file": "app.py", "line": 1}]


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    repo = GateRepo(tmp_path)
    (repo.tools / "findings.json").write_text(json.dumps(FINDINGS))  # ASCII: the escapes, as a model writes them
    return repo


def _finding(doc: dict) -> dict:
    (lane,) = [lane for lane in doc["lanes"] if lane["id"] == "correctness"]
    (finding,) = lane["findings"]
    return finding


def test_a_lone_surrogate_in_a_finding_is_recorded_signed_exported_and_verified(gate: GateRepo, tmp_path: Path) -> None:
    sarif, summary = tmp_path / "run.sarif", tmp_path / "summary.md"
    proc = gate.agentreview("run", "--export", "--publish", "--sarif", str(sarif), "--summary", str(summary))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bad \\ud800 title" in proc.stdout  # the terminal shows the escape

    (entry_file,) = [p for p in (gate.home / "reviews").rglob("*.json") if "runs" not in p.parts]
    (export_file,) = (gate.root / ".reviews").glob("*.json")
    for written in (entry_file, export_file):
        text = written.read_bytes().decode("utf-8")  # strict: well-formed UTF-8
        assert '"bad \\ud800 title"' in text and "\\udfff" in text and "\\udc00\\ud800" in text
    entry = loads_strict(entry_file.read_bytes())
    export = loads_strict(export_file.read_bytes())
    assert entry["attestation"] == export
    assert _finding(export)["title"] == TITLE and _finding(export)["detail"] == DETAIL

    # Signed and digested in the canonical form, which writes each lone surrogate as its lowercase
    # escape: here the stdlib's sorted, compact JSON with what UTF-8 cannot hold backslash-escaped
    # (every key of an attestation is ASCII, every number an integer).
    canonical = canonical_json(export)
    expected = json.dumps(export, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical == expected.encode("utf-8", "backslashreplace")
    assert b'"title":"bad \\ud800 title"' in canonical and b"low before high \\udc00\\ud800" in canonical
    assert attestation_sha256_of(export) == hashlib.sha256(canonical).hexdigest()

    # The note holds the same canonical line.
    note = git(gate.root, "notes", "--ref", "agentreview", "show", "HEAD")
    assert canonical.decode("utf-8") in note.splitlines()

    validate_sarif(json.loads(sarif.read_text(encoding="utf-8")))
    assert "bad \\ud800 title" in json.dumps(json.loads(sarif.read_text()))  # the JSON escape, read back
    assert "bad \\ud800 title" in summary.read_text(encoding="utf-8")  # visible as the escape

    signed = ("--policy-from", "origin/main", "--require-signed")
    notes = gate.agentreview("verify", "--notes", *signed)
    assert notes.returncode == 0, notes.stdout + notes.stderr
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    verified = gate.agentreview("verify", *signed, "--sarif", str(tmp_path / "verify.sarif"), "--summary", str(summary))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "only adds exports" in verified.stdout


def test_an_mcp_reply_holding_a_lone_surrogate_serializes() -> None:
    """The SDK serializes structured content strictly: a finding's lone surrogate must not fail the reply."""
    from agentreview.mcp.server import reply

    result = reply({"findings": [{"title": TITLE}]})
    wire = json.loads(result.model_dump_json(by_alias=True))
    assert json.loads(wire["content"][0]["text"]) == {"findings": [{"title": TITLE}]}  # the exact escape
    assert wire["structuredContent"] == {"findings": [{"title": "bad \\ud800 title"}]}  # visible as text
