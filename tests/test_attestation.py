"""The attestation document (AIP-62 "The attestation", reference-notes 1.3, 2.9, 2.10).

The attack tested throughout: a caller holding a built attestation tries to make it say
``pass`` (or cover another range) without the lanes that would justify it.
"""

from __future__ import annotations

import copy
import json
import pickle
import re
import subprocess
import sys
from typing import Any

import pytest

from agentreview.model.attestation import (
    Attestation,
    AttestationInconsistentError,
    AttestationShapeError,
    LaneResult,
    PullRequest,
    Target,
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
        "fallbacks": [{"preset": "codex", "error": "not installed"},
                      {"preset": "kimi", "error": "capability_missing: unknown item type 'x'",
                       "unknownFields": ["unknown item type 'x'"]}],
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
    with pytest.raises(AttestationShapeError, match="createdAt"):
        build(created_at=bad)


@pytest.mark.parametrize("good", ["2025-01-31T12:00:00Z", "2025-01-31T12:00:00.5+02:00", "2025-01-31T12:00:00-0500"])
def test_created_at_accepts_offsets(good: str) -> None:
    assert build(created_at=good).createdAt == good


# --------------------------------------------------------------------------- forging the verdict


def test_validating_a_verdict_that_differs_from_the_fold_raises() -> None:
    doc = build([lane("fail")]).to_json_dict()
    doc["verdict"] = "pass"
    with pytest.raises(AttestationInconsistentError, match="does not follow from its lanes"):
        Attestation.from_json(doc)
    with pytest.raises(AttestationInconsistentError, match="does not follow from its lanes"):
        Attestation(**doc)
    with pytest.raises(AttestationInconsistentError, match="does not follow from its lanes"):
        Attestation.from_json(json.loads(json.dumps(doc)))
    # A document read for verification keeps the lie, but every copy of it is a new document.
    with pytest.raises(AttestationInconsistentError, match="does not follow from its lanes"):
        Attestation.read(doc).replace()


def test_validating_a_range_sha_that_is_not_the_targets_raises() -> None:
    doc = build().to_json_dict()
    doc["rangeSha"] = range_sha(BASE, "3" * 40)
    with pytest.raises(AttestationInconsistentError, match="rangeSha"):
        Attestation.from_json(doc)


def test_replace_cannot_set_a_verdict() -> None:
    att = build([lane("fail")])
    with pytest.raises(AttestationInconsistentError):
        att.replace(verdict="pass")
    with pytest.raises(AttestationInconsistentError):
        att.replace(lanes=[LaneResult.from_json(lane("pass"))])
    with pytest.raises(AttestationInconsistentError):
        att.replace(target=att.target.replace(headSha="f" * 40))
    with pytest.raises(AttestationInconsistentError):
        att.replace(rangeSha=range_sha(BASE, "f" * 40))
    assert att.replace().verdict == "block"
    assert copy.copy(att).verdict == "block" and copy.deepcopy(att).verdict == "block"
    consistent = att.replace(lanes=[LaneResult.from_json(lane("pass"))], verdict="pass")
    assert consistent.verdict == "pass"
    assert att.verdict == "block"  # the original is untouched


def test_a_forgery_made_behind_the_constructors_cannot_be_serialized() -> None:
    att = build([lane("fail")])
    # The one way to skip the checks is the private constructor: what it makes cannot be written.
    forged = Attestation._of({**att.to_json_dict(), "verdict": "pass"})
    for serialize in (forged.signed_bytes, forged.attestation_sha256, forged.export_text, forged.to_json_dict):
        with pytest.raises(AttestationInconsistentError, match="does not follow"):
            serialize()
    with pytest.raises(AttestationInconsistentError):
        forged.with_signature(SIG)
    with pytest.raises(AttestationInconsistentError):  # nor smuggled through pickle
        pickle.loads(pickle.dumps(forged))


def test_reaching_into_the_private_members_cannot_be_signed() -> None:
    att = build([lane("fail")])
    att._data["verdict"] = "pass"
    with pytest.raises(AttestationInconsistentError):
        att.signed_bytes()
    with pytest.raises(AttestationInconsistentError):
        att.export_text()
    att = build([lane("pass")])
    att._data["lanes"].append(lane("fail"))
    with pytest.raises(AttestationInconsistentError):
        att.attestation_sha256()


def test_mutating_lanes_after_build_is_impossible() -> None:
    att = build([lane("pass")])
    with pytest.raises(AttributeError):
        att.lanes.append(LaneResult.from_json(lane("fail")))  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        att.lanes[0] = LaneResult.from_json(lane("fail"))  # type: ignore[index]
    with pytest.raises(AttributeError):
        att.lanes[0].status = "fail"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        att.attestor.presets.append("x")  # type: ignore[attr-defined]
    assert att.verdict == "pass" and att.inconsistency() is None


def test_frozen_fields_cannot_be_assigned() -> None:
    att = build([lane("fail")])
    with pytest.raises(AttributeError, match="read-only"):
        att.verdict = "pass"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="read-only"):
        del att.verdict
    with pytest.raises(AttributeError, match="read-only"):
        att._read = True
    with pytest.raises(AttributeError):
        att.target.headSha = "f" * 40  # type: ignore[misc]
    assert att.verdict == "block"


def test_to_json_dict_is_a_copy_and_a_read_keeps_none_of_the_callers_objects() -> None:
    att = build([lane("fail")])
    out = att.to_json_dict()
    out["verdict"] = "pass"
    out["lanes"][0]["status"] = "pass"
    lane_out = att.lanes[0].to_json_dict()
    lane_out["status"] = "pass"
    assert att.verdict == "block" and att.lanes[0].status == "fail"
    assert att.to_json_dict()["lanes"][0]["status"] == "fail"
    doc = full_document()
    read = Attestation.read(doc)
    before = read.signed_bytes()
    doc["verdict"] = "block"
    doc["lanes"][0]["status"] = "fail"
    doc["attestor"]["presets"].append("x")
    assert read.signed_bytes() == before and read.verdict == "pass" and read.lanes[0].status == "pass"


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
    with pytest.raises(AttestationShapeError, match=r"^lanes\.0\.status: must be one of"):
        Attestation.read(doc)
    doc = full_document()
    doc["schema"] = "agentproto.review.attestation/v2"
    with pytest.raises(AttestationShapeError, match=r"^schema: "):
        Attestation.read(doc)


def test_the_reviewer_audit_buckets_are_read_as_string_tuples_and_checked() -> None:
    doc = full_document()
    doc["lanes"][2] = {**doc["lanes"][2], "kind": "agent", "error": "reviewer boundary violation: unsafe mode",
                       "unsafeValues": ["unsafe mode"], "unknownFields": ["init has an unknown non-empty list 'a'"]}
    att = Attestation.read(copy.deepcopy(doc))
    assert att.lanes[2].unsafeValues == ("unsafe mode",)
    assert att.lanes[2].unknownFields == ("init has an unknown non-empty list 'a'",)
    assert att.lanes[0].fallbacks[1].unknownFields == ("unknown item type 'x'",)
    assert att.lanes[0].unsafeValues is None and att.lanes[0].fallbacks[0].unknownFields is None
    doc["lanes"][2]["unsafeValues"] = [1]
    with pytest.raises(AttestationShapeError, match=r"^lanes\.2\.unsafeValues\.0: must be a string"):
        Attestation.read(doc)


def test_every_member_round_trips() -> None:
    doc = full_document()
    att = Attestation.read(copy.deepcopy(doc))
    assert att.inconsistency() is None
    assert att.to_json_dict() == doc
    assert Attestation.from_json(copy.deepcopy(doc)).to_json_dict() == doc  # consistent, so it validates
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
    with pytest.raises(AttestationShapeError, match="durationMs"):
        LaneResult.from_json(lane(durationMs=float("inf")))


# --------------------------------------------------------------------------- the strict reader


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("lanes.0.durationMs", lambda d: d["lanes"][0].update(durationMs="5")),
        ("lanes.0.durationMs", lambda d: d["lanes"][0].update(durationMs=True)),
        ("lanes.0.blocking", lambda d: d["lanes"][0].update(blocking="true")),
        ("lanes.0.blocking", lambda d: d["lanes"][0].update(blocking=1)),
        ("lanes.0.findings.0.line", lambda d: d["lanes"][0]["findings"][0].update(line=3.0)),
        ("lanes.0.findings.0.line", lambda d: d["lanes"][0]["findings"][0].update(line="3")),
        ("lanes.1.exitCode", lambda d: d["lanes"][1].update(exitCode=1.0)),
        ("pr.number", lambda d: d["pr"].update(number=True)),
        ("pr.number", lambda d: d["pr"].update(number="7")),
        ("dirty", lambda d: d.update(dirty=1)),
        ("lanes", lambda d: d.update(lanes=tuple(d["lanes"]))),
        ("manifestSha", lambda d: d.update(manifestSha="a" * 64 + "\n")),
        ("runId", lambda d: d.update(runId="review-\n")),
        ("attestor.signature.keyFingerprint", lambda d: d["attestor"]["signature"].update(keyFingerprint="SHA256:\r")),
        ("createdAt", lambda d: d.update(createdAt="٢٠٢٥-01-31T12:00:00Z")),
        ("createdAt", lambda d: d.update(createdAt="2025-01-31T12:00:00Z\n")),
        ("futureTop", lambda d: d.update(futureTop=float("nan"))),
        ("futureTop.a", lambda d: d.update(futureTop={"a": [1, float("inf")]})),
    ],
)
def test_the_reader_coerces_nothing(where: str, change: Any) -> None:
    """What a lax validator would have converted ("5" for 5, 1 for true, 3.0 for 3) is refused."""
    doc = full_document()
    change(doc)
    with pytest.raises(AttestationShapeError) as caught:
        Attestation.read(doc)
    first, _message = caught.value.problems[0]
    assert ".".join(map(str, first)).startswith(where), caught.value.problems


def test_a_shape_error_reports_every_problem_each_on_one_line() -> None:
    doc = full_document()
    del doc["runId"]
    doc["lanes"][0]["status"] = "passed"
    doc["attestor"]["presets"] = ["a", "a"]
    doc["weird\nkey"] = float("nan")
    with pytest.raises(AttestationShapeError) as caught:
        Attestation.read(doc)
    lines = caught.value.lines()
    assert lines == [
        "runId: is required",
        "lanes.0.status: must be one of 'pass', 'fail', 'skipped', 'timeout', not \"passed\"",
        "attestor.presets: must not repeat a preset",
        '"weird\\nkey": must be a finite number (NaN and infinities are not JSON)',
    ]
    assert all("\n" not in line for line in lines)
    assert str(caught.value) == "runId: is required (and 3 more problem(s))"
    assert isinstance(caught.value, ValueError)
    with pytest.raises(AttestationShapeError, match=r"^\(document\): must be an object, not an array$"):
        Attestation.read([])


def test_build_names_the_lane_that_is_wrong() -> None:
    with pytest.raises(AttestationShapeError, match=r"^lanes\.1\.status: must be one of"):
        build([lane("pass"), lane("passed")])


def test_a_read_document_round_trips_to_the_same_bytes_through_its_export() -> None:
    doc = full_document()
    doc["lanes"][0]["exitCode"] = None
    doc["lanes"][1]["futureLane"] = {"nested": [None, 1.5, "x"]}
    doc["requester"] = None
    doc["zFuture"] = None
    att = Attestation.read(copy.deepcopy(doc))
    again = Attestation.read_json(att.export_text())
    assert again.signed_bytes() == att.signed_bytes() == canonical_json(
        {**doc, "attestor": {k: v for k, v in doc["attestor"].items() if k != "signature"}}
    )
    assert again.attestation_sha256() == att.attestation_sha256() == sha256_hex(canonical_json(doc))
    assert pickle.loads(pickle.dumps(att)).signed_bytes() == att.signed_bytes()
    # A copy with changes is a new document of this host: its null members are unset.
    fresh = att.replace(reviewId="other")
    assert "requester" not in fresh.to_json_dict() and "exitCode" not in fresh.to_json_dict()["lanes"][0]
    assert "zFuture" not in fresh.to_json_dict()
    assert fresh.to_json_dict()["lanes"][1]["futureLane"] == {"nested": [None, 1.5, "x"]}


def test_members_come_out_in_the_schemas_order_unknown_ones_last() -> None:
    doc = full_document()
    reordered = {"zExtra": 1, **{key: doc[key] for key in reversed(list(doc))}}
    reordered["lanes"] = [{"aExtra": 2, **{k: v for k, v in reversed(list(lane.items()))}} for lane in doc["lanes"]]
    out = Attestation.read(reordered).to_json_dict()
    assert list(out) == [*doc, "zExtra"]
    assert list(out["lanes"][0]) == [*doc["lanes"][0], "aExtra"]


def test_every_member_is_a_typed_attribute() -> None:
    att = Attestation.read(full_document())
    assert att.schema_ == "agentproto.review.attestation/v1"
    assert (att.target.baseSha, att.target.headSha, att.target.repoRemote) == (BASE, HEAD, "github.com/o/r")
    assert att.attestor.signature is not None and att.attestor.signature.keyFingerprint == "SHA256:abc"
    assert att.attestor.presets == ("claude",)
    first = att.lanes[0]
    assert (first.findings[0].severity, first.findings[0].line, first.findings[1].file) == ("low", 3, None)
    assert first.fallbacks is not None and first.fallbacks[0].preset == "codex"
    assert first.composedFrom is not None and first.composedFrom.headSha == "3" * 40
    assert first.durationMs == 1234.5 and att.lanes[1].durationMs == 0 and att.lanes[1].exitCode == 1
    assert att.packs is not None and att.packs[0].alg == "agentproto-pack-digest/v1"
    assert att.requester is not None and att.requester.gitAuthor is not None
    assert att.requester.gitAuthor.email == "a@example.com"
    assert att.pr == PullRequest.from_json(full_document()["pr"]) and att.pr.number == 7
    assert att.rubrics[0].check == "core/correctness" and att.dirty is True
    assert att.target == Target(repoRemote="github.com/o/r", baseSha=BASE, headSha=HEAD)
    assert Attestation.read(full_document()) == att


IMPORT_CHECK = """
import sys
from agentreview.model.attestation import Attestation
att = Attestation.build(
    run_id="review-1", review_id="r", manifest_sha="a" * 64, binding="ci", repo_remote="local:/r",
    base_sha="1" * 40, head_sha="2" * 40, daemon="d",
    lanes=[{"id": "t", "kind": "command", "status": "pass", "blocking": True, "findings": [], "durationMs": 1}],
).with_signature({"alg": "ssh-ed25519", "keyFingerprint": "SHA256:x", "principal": "p",
                  "signedAt": "2025-01-31T12:00:00Z", "sig": "S"})
again = Attestation.read_json(att.export_text())
assert again.signed_bytes() == att.signed_bytes() and again.attestation_sha256() == att.attestation_sha256()
assert again.inconsistency() is None and again.lanes[0].status == "pass"
print(sorted(m for m in ("pydantic", "pydantic_core", "yaml", "importlib.metadata") if m in sys.modules))
"""


def test_the_document_is_plain_python() -> None:
    """Importing, building, reading, signing bytes and digests import no validation library."""
    for program in ("import agentreview.model.attestation; import sys; print(sorted(m for m in "
                    "('pydantic', 'pydantic_core', 'yaml', 'importlib.metadata') if m in sys.modules))",
                    IMPORT_CHECK):  # fmt: skip
        proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "[]"
