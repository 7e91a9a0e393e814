"""The attestation document (AIP-62 "The attestation", reference-notes 1.3, 2.9, 2.10).

The attack tested throughout: a caller holding a built attestation tries to make it say
``pass`` (or cover another range) without the lanes that would justify it.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from agentreview.model.attestation import (
    Attestation,
    AttestationInconsistentError,
    LaneResult,
    now_iso,
)
from agentreview.model.digests import canonical_json, range_sha, sha256_hex

BASE = "1" * 40
HEAD = "2" * 40
SIG = {
    "alg": "ssh-ed25519",
    "keyFingerprint": "SHA256:abc",
    "principal": "host@example",
    "signedAt": "2025-01-31T12:00:00.000Z",
    "sig": "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----",
}


def lane(status: str = "pass", blocking: bool = True, **extra: Any) -> dict[str, Any]:
    return {"id": f"l-{status}", "kind": "command", "status": status, "blocking": blocking, "findings": [],
            "durationMs": 12, **extra}


def build(lanes: list[dict[str, Any]] | None = None, **kwargs: Any) -> Attestation:
    args: dict[str, Any] = {
        "run_id": "review-0b6c",
        "review_id": "web-app",
        "manifest_sha": "a" * 64,
        "binding": "ci",
        "repo_remote": "github.com/o/r",
        "base_sha": BASE,
        "head_sha": HEAD,
        "lanes": [lane()] if lanes is None else lanes,
        "daemon": "agentreview@test",
        "created_at": "2025-01-31T12:00:00.000Z",
    }
    args.update(kwargs)
    return Attestation.build(**args)


def full_document() -> dict[str, Any]:
    """Every member of reference-notes 1.3, optional ones included."""
    agent_lane = {
        "id": "core/correctness",
        "kind": "agent",
        "status": "pass",
        "blocking": True,
        "findings": [{"severity": "low", "title": "nit", "detail": "d", "file": "src/a.py", "line": 3},
                     {"severity": "medium", "title": "m", "detail": ""}],
        "durationMs": 1234.5,
        "sessionId": "s-1",
        "preset": "claude",
        "summary": "fine",
        "model": "m-1",
        "fallbacks": [{"preset": "codex", "error": "not installed"}],
        "composedFrom": {"rangeSha": "b" * 64, "headSha": "3" * 40, "attestationSha256": "c" * 64},
    }
    command_lane = {"id": "tests", "kind": "command", "status": "fail", "blocking": False,
                    "findings": [{"severity": "high", "title": "'tests' exited with code 1", "detail": "boom"}],
                    "durationMs": 0, "exitCode": 1}
    skipped = {"id": "lint", "kind": "command", "status": "skipped", "blocking": False, "findings": [],
               "durationMs": 0, "error": "no executor"}
    return {
        "schema": "agentproto.review.attestation/v1",
        "runId": "review-6f1c2d",
        "reviewId": "web-app",
        "manifestSha": "a" * 64,
        "binding": "ci",
        "target": {"repoRemote": "github.com/o/r", "baseSha": BASE, "headSha": HEAD},
        "rangeSha": range_sha(BASE, HEAD),
        "lanes": [agent_lane, command_lane, skipped],
        "verdict": "pass",
        "attestor": {"daemon": "agentreview@host", "presets": ["claude"], "signature": dict(SIG)},
        "rubrics": [{"check": "core/correctness", "path": "packs/core/r.md", "sha256": "d" * 64}],
        "packs": [{"ref": "./packs/core", "id": "core", "version": "1.0.0", "alg": "agentproto-pack-digest/v1",
                   "sha256": "e" * 64}],
        "dirty": True,
        "requester": {"sessionId": "sess", "gitAuthor": {"name": "A", "email": "a@example.com"}},
        "pr": {"provider": "github", "repo": "o/r", "number": 7, "url": "https://github.com/o/r/pull/7"},
        "createdAt": "2025-01-31T12:00:00.123Z",
    }


# --------------------------------------------------------------------------- build


@pytest.mark.parametrize(
    ("lanes", "verdict"),
    [
        ([lane("pass")], "pass"),
        ([lane("fail")], "block"),
        ([lane("timeout")], "incomplete"),
        ([lane("pass", blocking=False)], "incomplete"),
        ([], "incomplete"),
        ([lane("fail"), lane("timeout")], "block"),
    ],
)
def test_build_computes_the_verdict(lanes: list[dict[str, Any]], verdict: str) -> None:
    assert build(lanes).verdict == verdict


def test_build_computes_range_sha_and_takes_no_verdict() -> None:
    att = build()
    assert att.rangeSha == "709ea9c102cd11ed178afc5f0d3bef72b86e55ec7de29a6fb125fb100ef166a8"
    with pytest.raises(TypeError):
        build(verdict="pass")  # there is no such parameter


def test_build_omits_empty_optionals_and_dedupes_presets() -> None:
    lanes = [lane("pass", preset="claude"), lane("pass", preset="codex"), lane("pass", preset="claude")]
    doc = build(lanes, requester={}, packs=[], dirty=False).to_json_dict()
    assert doc["attestor"] == {"daemon": "agentreview@test", "presets": ["claude", "codex"]}
    for member in ("packs", "dirty", "requester", "pr"):
        assert member not in doc
    assert doc["rubrics"] == []
    assert build(dirty=True).to_json_dict()["dirty"] is True


def test_build_refuses_unknown_pack_alg() -> None:
    pack = {"ref": "./p", "id": "p", "version": "1.0.0", "alg": "agentproto-pack-digest/v2", "sha256": "e" * 64}
    with pytest.raises(ValueError, match="agentproto-pack-digest/v1"):
        build(packs=[pack])


def test_created_at_defaults_to_now_with_milliseconds() -> None:
    pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
    assert re.match(pattern, now_iso())
    att = build(created_at=None)
    assert re.match(pattern, att.createdAt)


@pytest.mark.parametrize("bad", ["2025-01-31", "2025-01-31T12:00:00", "yesterday", "2025-13-01T00:00:00Z"])
def test_created_at_must_be_a_datetime_with_zone(bad: str) -> None:
    with pytest.raises(ValidationError, match="createdAt"):
        build(created_at=bad)


@pytest.mark.parametrize("good", ["2025-01-31T12:00:00Z", "2025-01-31T12:00:00.5+02:00", "2025-01-31T12:00:00-0500"])
def test_created_at_accepts_offsets(good: str) -> None:
    assert build(created_at=good).createdAt == good


# --------------------------------------------------------------------------- forging the verdict


def test_validating_a_verdict_that_differs_from_the_fold_raises() -> None:
    doc = build([lane("fail")]).to_json_dict()
    doc["verdict"] = "pass"
    with pytest.raises(ValidationError, match="does not follow from its lanes"):
        Attestation.model_validate(doc)
    with pytest.raises(ValidationError, match="does not follow from its lanes"):
        Attestation(**doc)
    with pytest.raises(ValidationError, match="does not follow from its lanes"):
        Attestation.model_validate_json(json.dumps(doc))


def test_validating_a_range_sha_that_is_not_the_targets_raises() -> None:
    doc = build().to_json_dict()
    doc["rangeSha"] = range_sha(BASE, "3" * 40)
    with pytest.raises(ValidationError, match="rangeSha"):
        Attestation.model_validate(doc)


def test_model_copy_cannot_set_a_verdict() -> None:
    att = build([lane("fail")])
    with pytest.raises(AttestationInconsistentError):
        att.model_copy(update={"verdict": "pass"})
    with pytest.raises(AttestationInconsistentError):
        att.model_copy(update={"lanes": [LaneResult.model_validate(lane("pass"))]}, deep=True)
    with pytest.raises(AttestationInconsistentError):
        att.model_copy(update={"target": att.target.model_copy(update={"headSha": "f" * 40})})
    assert att.model_copy().verdict == "block"
    consistent = att.model_copy(update={"lanes": [LaneResult.model_validate(lane("pass"))], "verdict": "pass"})
    assert consistent.verdict == "pass"


def test_model_construct_forgery_cannot_be_serialized() -> None:
    att = build([lane("fail")])
    forged = Attestation.model_construct(**{**dict(att), "verdict": "pass"})
    for serialize in (forged.signed_bytes, forged.attestation_sha256, forged.export_text, forged.to_json_dict):
        with pytest.raises(AttestationInconsistentError):
            serialize()
    with pytest.raises(Exception, match="does not follow"):
        forged.model_dump()
    with pytest.raises(Exception, match="does not follow"):
        forged.model_dump_json()


def test_mutating_lanes_after_build_cannot_be_signed() -> None:
    att = build([lane("pass")])
    att.lanes.append(LaneResult.model_validate(lane("fail")))
    with pytest.raises(AttestationInconsistentError):
        att.signed_bytes()


def test_frozen_fields_cannot_be_assigned() -> None:
    att = build([lane("fail")])
    with pytest.raises(ValidationError):
        att.verdict = "pass"  # type: ignore[misc]


def test_with_signature_keeps_the_verdict_checked() -> None:
    att = build([lane("fail")]).with_signature(SIG)
    assert att.verdict == "block"
    assert att.attestor.signature is not None


# --------------------------------------------------------------------------- reading


def test_read_reports_instead_of_refusing_a_tampered_verdict() -> None:
    doc = build([lane("fail")]).with_signature(SIG).to_json_dict()
    doc["verdict"] = "pass"
    att = Attestation.read(doc)
    assert att.verdict == "pass"
    assert att.refold() == "block"
    assert att.inconsistency() is not None
    # The verifier can still compute the bytes the (tampered) file claims were signed.
    assert json.loads(att.signed_bytes())["verdict"] == "pass"
    # ...but it cannot turn the read document into a new one that keeps the lie.
    with pytest.raises(AttestationInconsistentError):
        att.with_signature(SIG)


def test_read_still_checks_shapes() -> None:
    doc = full_document()
    doc["lanes"][0]["status"] = "passed"
    with pytest.raises(ValidationError):
        Attestation.read(doc)
    doc = full_document()
    doc["schema"] = "agentproto.review.attestation/v2"
    with pytest.raises(ValidationError):
        Attestation.read(doc)


def test_every_member_round_trips() -> None:
    doc = full_document()
    att = Attestation.read(copy.deepcopy(doc))
    assert att.inconsistency() is None
    assert att.to_json_dict() == doc
    assert Attestation.model_validate(copy.deepcopy(doc)).to_json_dict() == doc  # consistent, so it validates
    assert json.loads(att.export_text()) == doc
    assert Attestation.read_json(att.export_text()).to_json_dict() == doc
    assert att.signed_bytes() == canonical_json({**doc, "attestor": {k: v for k, v in doc["attestor"].items()
                                                                    if k != "signature"}})


def test_unknown_members_are_kept_at_every_level_in_canonical_bytes() -> None:
    doc = full_document()
    doc["futureTop"] = {"z": 1, "a": [True]}
    doc["target"]["futureTarget"] = "t"
    doc["lanes"][0]["futureLane"] = 2
    doc["lanes"][0]["findings"][0]["futureFinding"] = "f"
    doc["lanes"][0]["fallbacks"][0]["futureFallback"] = "fb"
    doc["lanes"][0]["composedFrom"]["futureComposed"] = "c"
    doc["attestor"]["futureAttestor"] = "x"
    doc["attestor"]["signature"]["futureSig"] = "s"
    doc["rubrics"][0]["futureRubric"] = "r"
    doc["packs"][0]["futurePack"] = "p"
    doc["requester"]["futureRequester"] = "q"
    doc["requester"]["gitAuthor"]["futureAuthor"] = "g"
    doc["pr"]["futurePr"] = "pr"
    att = Attestation.read(copy.deepcopy(doc))
    assert att.to_json_dict() == doc
    assert att.attestation_sha256() == sha256_hex(canonical_json(doc))
    unsigned = copy.deepcopy(doc)
    del unsigned["attestor"]["signature"]
    assert att.signed_bytes() == canonical_json(unsigned)
    assert b"futureTop" in att.signed_bytes() and b"futureAttestor" in att.signed_bytes()


def test_signed_bytes_drop_only_the_signature_and_sha_includes_it() -> None:
    unsigned = build([lane("pass")])
    signed = unsigned.with_signature(SIG)
    assert signed.signed_bytes() == unsigned.signed_bytes()
    assert b"signature" not in signed.signed_bytes()
    assert signed.attestation_sha256() != unsigned.attestation_sha256()
    assert signed.attestation_sha256() == sha256_hex(canonical_json(signed.to_json_dict()))
    other_sig = signed.with_signature({**SIG, "sig": "different"})
    assert other_sig.signed_bytes() == signed.signed_bytes()
    assert other_sig.attestation_sha256() != signed.attestation_sha256()
    # Every other member is covered by the signature: changing one changes the signed bytes.
    doc = signed.to_json_dict()
    for path, value in ((("binding",), "local"), (("target", "repoRemote"), "evil/r"), (("manifestSha",), "f" * 64)):
        changed = copy.deepcopy(doc)
        node = changed
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        assert Attestation.read(changed).signed_bytes() != signed.signed_bytes()


def test_export_text_is_two_space_indented_with_trailing_newline() -> None:
    text = build().export_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text.splitlines()[1].startswith('  "schema": ')
    assert json.loads(text)["schema"] == "agentproto.review.attestation/v1"
    non_ascii = build(review_id="revü").export_text()
    assert "revü" in non_ascii


def test_canonical_bytes_sort_keys_and_omit_absent_members() -> None:
    att = build([lane("pass")])
    data = att.signed_bytes()
    assert data.startswith(b'{"attestor":{"daemon":"agentreview@test","presets":[]},"binding":"ci",')
    assert b"null" not in data
    assert b" " not in data


def test_a_built_document_emits_no_null_and_its_bytes_are_those_it_always_had() -> None:
    # Explicit None inputs are unset members: never written as "x": null. The digests are pinned
    # to the values this host computed before canonical JSON kept null, so no attestation it
    # already signed changes its signed bytes or its attestationSha256.
    att = Attestation.build(
        run_id="review-00000000-0000-4000-8000-000000000000", review_id="demo", manifest_sha="a" * 64,
        binding="default", repo_remote="github.com/example/demo", base_sha=BASE, head_sha=HEAD,
        lanes=[
            {"id": "types", "kind": "command", "status": "fail", "blocking": True, "durationMs": 12, "exitCode": None,
             "error": None, "findings": [{"severity": "high", "title": "'types' exited", "detail": "", "file": None,
                                          "line": None}]},
            {"id": "correctness", "kind": "agent", "status": "pass", "blocking": True, "findings": [],
             "durationMs": 900.5, "preset": "kimi", "summary": None, "model": None, "sessionId": "s-1"},
        ],
        daemon="agentreview@test", rubrics=[{"check": "correctness", "path": "./r.md", "sha256": "b" * 64}],
        requester={"sessionId": None, "gitAuthor": {"name": "Ädä", "email": "a@example.com"}},
        created_at="2026-01-01T00:00:00.000Z",
    )  # fmt: skip
    signed = att.with_signature({**SIG, "keyFingerprint": "SHA256:x", "principal": "p",
                                 "signedAt": "2026-01-01T00:00:00.000Z", "sig": "S"})  # fmt: skip
    assert "null" not in signed.export_text()
    assert b"null" not in signed.signed_bytes()
    assert sha256_hex(att.signed_bytes()) == "e6fdaedbcdfd2371bdd4ddccac4bf84ec570285923385803fb4762267f6c0a64"
    assert signed.attestation_sha256() == "d803a89b9229c74b0a3b821691e6903d475fbe32505a0fcd52529ad61252ce1f"


def test_a_read_document_keeps_its_null_members_in_bytes_digest_and_export() -> None:
    # Another conforming host writes exitCode: null for a lane with no exit code, and may write
    # any optional member as null. What it signed is the canonical JSON of its file, null kept.
    doc = full_document()
    doc["lanes"][0]["exitCode"] = None
    doc["lanes"][0]["findings"][0]["file"] = None
    doc["pr"] = None
    doc["futureTop"] = None
    att = Attestation.read(copy.deepcopy(doc))
    assert att.to_json_dict() == doc
    assert json.loads(att.export_text()) == doc  # a re-export is the document its host signed
    assert att.attestation_sha256() == sha256_hex(canonical_json(doc))  # what composedFrom records
    unsigned = copy.deepcopy(doc)
    del unsigned["attestor"]["signature"]
    assert att.signed_bytes() == canonical_json(unsigned)
    assert b'"exitCode":null' in att.signed_bytes() and b'"pr":null' in att.signed_bytes()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_read_json_refuses_non_json_number_constants(constant: str) -> None:
    text = build().export_text().replace('"durationMs": 12', f'"durationMs": {constant}')
    assert constant in text
    with pytest.raises(ValueError, match="not a JSON value"):
        Attestation.read_json(text)


def test_infinite_duration_is_refused_by_the_model() -> None:
    with pytest.raises(ValidationError, match="durationMs"):
        LaneResult.model_validate(lane(durationMs=float("inf")))
