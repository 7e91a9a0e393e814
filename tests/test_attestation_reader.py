"""The hand-written attestation reader against the committed JSON Schema, by a differential property test.

The oracle is ``jsonschema`` (draft 2020-12) on ``docs/schemas/attestation.schema.json``, the spec's
contract, plus the rules the schema cannot state (``model/attestation_read.py`` lists them):

* patterns with their ECMA-262 meaning, which the schema's dialect prescribes (python-jsonschema
  matches with Python's ``re``, whose ``$`` also matches before a final newline and whose ``.``
  matches ``\\r``): ``$`` is the end of the text, ``.`` no line terminator;
* ``format: date-time`` checked, with the spec's meaning ("ISO datetime, offset allowed": a ``Z``,
  ``+hh:mm``, ``+hhmm`` or ``+hh`` zone), written here independently of the reader;
* an ``integer`` is a JSON integer, never a float such as ``3.0`` (draft 2020-12 would take it);
* no NaN or infinity anywhere (the schema's ``minimum`` lets NaN through, and JSON has neither).

Documents are generated valid, then damaged: a member dropped, set to null, to a value of the
wrong type, to a near-miss of its pattern, bool for int, float for int, unknown members added,
at any depth. The reader must accept a document exactly when the oracle does, keep it byte for
byte when it does, and a document built from it must be refused only for its derived members.
"""

from __future__ import annotations

import calendar
import copy
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.validators import extend

from agentreview.model.attestation import Attestation, AttestationInconsistentError, AttestationShapeError
from agentreview.model.digests import canonical_json, range_sha
from agentreview.model.fold import fold_verdict

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "docs" / "schemas" / "attestation.schema.json"
PACKAGED_SCHEMA = ROOT / "agentreview" / "model" / "attestation.schema.json"


# --------------------------------------------------------------------------- the oracle


def ecma_pattern(pattern: str) -> str:
    """A JSON Schema (ECMA-262) pattern as a Python pattern of the same meaning, for the patterns
    the schema uses: ``.`` outside a class matches no line terminator, ``$`` only the end."""
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif in_class:
            out.append(char)
            in_class = char != "]"
        elif char == "[":
            out.append(char)
            in_class = True
        elif char == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif char == "$":
            out.append("\\Z")
        else:
            out.append(char)
    return "".join(out)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.search(ecma_pattern(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_SPEC_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2})(?::?(\d{2}))?)", re.ASCII
)


def spec_datetime(instance: object) -> bool:
    """reference-notes 1.3: "ISO datetime (offset allowed)", a real calendar date and time."""
    if not isinstance(instance, str):
        return True  # the type is the schema's business
    match = _SPEC_DATETIME.fullmatch(instance)
    if match is None:
        return False
    year, month, day, hour, minute, second, off_h, off_m = (int(g) if g else 0 for g in match.groups())
    if not (year >= 1 and 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]):
        return False
    return hour <= 23 and minute <= 59 and second <= 59 and off_h <= 23 and off_m <= 59


_FORMATS = FormatChecker(formats=())
_FORMATS.checks("date-time")(spec_datetime)
_Oracle = extend(
    Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    ),
)
ORACLE = _Oracle(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=_FORMATS)


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    return False


def oracle_accepts(doc: Any) -> bool:
    return ORACLE.is_valid(doc) and not _non_finite(doc)


def reader_accepts(doc: Any) -> bool:
    try:
        att = Attestation.read(copy.deepcopy(doc))
    except AttestationShapeError as exc:
        assert exc.problems and all(isinstance(loc, tuple) for loc, _ in exc.problems)
        assert all("\n" not in line for line in exc.lines())
        return False
    # Accepted: kept exactly, so its bytes and digest are those of the document.
    assert att.to_json_dict() == doc
    assert att.attestation_sha256() == Attestation.read(att.to_json_dict()).attestation_sha256()
    assert att.signed_bytes() == canonical_json(
        {**doc, "attestor": {k: v for k, v in doc["attestor"].items() if k != "signature"}}
    )
    return True


# --------------------------------------------------------------------------- valid documents

hex64 = st.text("0123456789abcdef", min_size=64, max_size=64)
sha = st.text("0123456789abcdef", min_size=1, max_size=40)
text = st.text(max_size=6)
timestamp = st.sampled_from(
    ["2025-01-31T12:00:00.000Z", "2025-01-31T12:00:00Z", "2024-02-29T23:59:59.5+02:00", "2025-01-31T12:00:00-0500",
     "2025-01-31T12:00:00+05", "2025-12-31T00:00:00.123456789Z"]
)  # fmt: skip
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
                        text)  # fmt: skip
json_value = st.recursive(json_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner,
                                                                                                    max_size=3),
                          max_leaves=6)  # fmt: skip
extras = st.dictionaries(st.sampled_from(["future", "zz", "x-y"]), json_value, max_size=1)


def optional(**members: Any) -> dict[str, Any]:
    return {key: st.none() | value for key, value in members.items()}


finding = st.fixed_dictionaries(
    {"severity": st.sampled_from(["high", "medium", "low"]), "title": text, "detail": text},
    optional=optional(file=text, line=st.integers(1, 10**6)),
)
lane = st.fixed_dictionaries(
    {
        "id": text,
        "kind": st.sampled_from(["command", "agent", "gauge", "a-1"]),
        "status": st.sampled_from(["pass", "fail", "skipped", "timeout"]),
        "blocking": st.booleans(),
        "findings": st.lists(finding, max_size=2),
        "durationMs": st.integers(0, 10**6) | st.floats(0, 1e6),
    },
    optional=optional(
        error=text, sessionId=text, preset=text, summary=text, exitCode=st.integers(-1, 255), model=text,
        fallbacks=st.lists(st.fixed_dictionaries({"preset": text, "error": text}), max_size=2),
        composedFrom=st.fixed_dictionaries({"rangeSha": hex64, "headSha": sha, "attestationSha256": hex64}),
    ),
)  # fmt: skip
signature = st.fixed_dictionaries({
    "alg": st.sampled_from(["ssh-ed25519", "x509.v2+b"]),
    "keyFingerprint": st.sampled_from(["SHA256:a", "SHA256:Zm9v/+=", "SHA256: x"]),
    "principal": text, "signedAt": timestamp, "sig": text,
})  # fmt: skip


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    base, head = draw(sha), draw(sha)
    lanes = draw(st.lists(lane, max_size=3))
    presets = draw(st.lists(text, max_size=2, unique=True))
    attestor: dict[str, Any] = {"daemon": draw(text), "presets": presets}
    if draw(st.booleans()):
        attestor["signature"] = draw(st.none() | signature)
    doc: dict[str, Any] = {
        "schema": "agentproto.review.attestation/v1",
        "runId": "review-" + draw(st.text(min_size=1, max_size=4).filter(lambda s: "\n" not in s and "\r" not in s)),
        "reviewId": draw(text),
        "manifestSha": draw(hex64),
        "binding": draw(st.text(min_size=1, max_size=4)),
        "target": {"repoRemote": draw(st.text(min_size=1, max_size=4)), "baseSha": base, "headSha": head},
        "rangeSha": range_sha(base, head),
        "lanes": lanes,
        "verdict": fold_verdict((lane["blocking"], lane["status"]) for lane in lanes),
        "attestor": attestor,
        "rubrics": draw(st.lists(st.fixed_dictionaries({"check": text, "path": text, "sha256": hex64}), max_size=2)),
        "createdAt": draw(timestamp),
    }
    pack = st.fixed_dictionaries({"ref": text, "id": text, "version": text, "alg": text, "sha256": hex64})
    author = st.fixed_dictionaries({"name": text, "email": text})
    pr = st.fixed_dictionaries({"provider": st.just("github"), "repo": st.just("o/r"),
                                "number": st.integers(1, 10**9), "url": text})  # fmt: skip
    for key, value in (
        ("packs", st.lists(pack, min_size=1, max_size=2)),
        ("dirty", st.just(True)),
        ("requester", st.fixed_dictionaries({}, optional=optional(sessionId=text, gitAuthor=author))),
        ("pr", pr),
    ):
        if draw(st.booleans()):
            doc[key] = draw(st.none() | value)
    doc.update(draw(extras))
    return doc


# --------------------------------------------------------------------------- damage

NEAR_MISSES = [
    "", " ", "\n", "5", "true", "null", "A" * 64, "a" * 63, "a" * 64 + "\n", "a" * 64 + "\r", "review-", "review-x\n",
    "review-\u2028", "SHA256:", "SHA256:x", "SHA256:\r", "MD5:x", "o/r", "o/r/x", "/r", "o/", "o/\n", "Gauge",
    "a" * 65, "two words", "command", "agent", "ssh-ed25519", "-bad", "a" * 64, "agentproto.review.attestation/v2",
    "2025-01-31T12:00:00Z", "2025-01-31T12:00:00", "2025-01-31", "2025-01-31t12:00:00z", "2025-01-31 12:00:00Z",
    "2025-02-30T12:00:00Z", "2025-01-31T24:00:00Z", "2025-01-31T12:00:60Z", "2025-01-31T12:00:00+24:00",
    "2025-01-31T12:00:00+05:60", "2025-01-31T12:00:00+5", "2025-01-31T12:00:00.Z", "0000-01-01T00:00:00Z",
    "２０２５-01-31T12:00:00Z", "2025-01-31T12:00:00Z\n", "pass", "block", "incomplete", "fail", "skipped", "high",
    "github", "\ud800",
]  # fmt: skip
WRONG_VALUES = [None, True, False, 0, 1, -1, 2, 3.0, 0.5, -0.5, 1e300, float("inf"), float("nan"), [], {}, ["a"],
                ["a", "a"], {"a": 1}, [None], [1]]  # fmt: skip


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every location in a document, the document itself included."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*at, index))


def _parent(doc: Any, at: tuple[Any, ...]) -> Any:
    for part in at[:-1]:
        doc = doc[part]
    return doc


@st.composite
def damaged(draw: st.DrawFn) -> dict[str, Any]:
    doc = draw(documents())
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["drop", "null", "wrong", "near", "bool-int", "float-int", "extra", "repeat",
                                    "valid"]))  # fmt: skip
        everywhere = [p for p in paths(doc) if p]
        derived_from = [p for p in everywhere if p[-1] in ("status", "verdict", "blocking", "baseSha", "headSha")]
        at = draw(st.sampled_from(derived_from if how == "valid" and derived_from else everywhere))
        parent, key = _parent(doc, at), at[-1]
        current = parent[key]
        if how == "valid":  # a value of the right shape that the derived members may not follow
            parent[key] = {
                "status": draw(st.sampled_from(["pass", "fail", "skipped", "timeout"])),
                "verdict": draw(st.sampled_from(["pass", "block", "incomplete"])),
                "blocking": not current,
                "baseSha": f"{current}0",
                "headSha": f"{current}0",
            }.get(str(key), current)
        elif how == "drop":
            del parent[key]
        elif how == "null":
            parent[key] = None
        elif how == "wrong":
            parent[key] = copy.deepcopy(draw(st.sampled_from(WRONG_VALUES) | json_value))  # never the shared one
        elif how == "near":
            parent[key] = draw(st.sampled_from(NEAR_MISSES))
        elif how == "bool-int":
            parent[key] = bool(current) if isinstance(current, int) and not isinstance(current, bool) else 1
        elif how == "float-int":
            parent[key] = float(current) if isinstance(current, int) and not isinstance(current, bool) else current
        elif how == "extra":
            target = current if isinstance(current, dict) else parent
            if isinstance(target, dict):
                target[draw(st.sampled_from(["future", "schema", "lanes", "1", "a\nb"]))] = draw(json_value)
        elif isinstance(current, list) and current:  # repeat an item (uniqueItems)
            current.append(copy.deepcopy(current[0]))
    return doc


# --------------------------------------------------------------------------- the properties


def test_the_packaged_schema_is_the_committed_one() -> None:
    assert PACKAGED_SCHEMA.read_bytes() == SCHEMA_FILE.read_bytes()


def test_the_oracle_is_not_trivial() -> None:
    assert not oracle_accepts({})
    assert not oracle_accepts({"schema": "agentproto.review.attestation/v1"})
    assert ecma_pattern("^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$") == "^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\\Z"
    assert ecma_pattern("^SHA256:.+$") == "^SHA256:[^\\n\\r\\u2028\\u2029]+\\Z"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_documents_are_read_and_kept(doc: dict[str, Any]) -> None:
    assert oracle_accepts(doc), list(ORACLE.iter_errors(doc))[:1]
    assert reader_accepts(doc)
    # Consistent by construction: a new document of this host may be made of it, nulls unset.
    built = Attestation.from_json(copy.deepcopy(doc)).to_json_dict()
    assert not any(value is None for obj in schema_objects(built) for value in obj.values())
    assert built == {key: value for key, value in doc.items() if value is not None} | {
        key: built[key] for key in ("target", "lanes", "attestor", "requester") if key in built
    }


def schema_objects(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The objects of a document that the schema describes (not the insides of unknown members)."""
    yield doc
    yield doc["target"]
    yield doc["attestor"]
    if isinstance(doc["attestor"].get("signature"), dict):
        yield doc["attestor"]["signature"]
    for lane in doc["lanes"]:
        yield lane
        yield from lane["findings"]
        yield from lane.get("fallbacks") or []
        if isinstance(lane.get("composedFrom"), dict):
            yield lane["composedFrom"]
    yield from doc["rubrics"]
    yield from doc.get("packs") or []
    for key in ("requester", "pr"):
        if isinstance(doc.get(key), dict):
            yield doc[key]
    if isinstance(doc.get("requester"), dict) and isinstance(doc["requester"].get("gitAuthor"), dict):
        yield doc["requester"]["gitAuthor"]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_the_reader_accepts_exactly_what_the_schema_and_the_rules_accept(doc: dict[str, Any]) -> None:
    expected = oracle_accepts(doc)
    assert reader_accepts(doc) == expected, list(ORACLE.iter_errors(doc))[:2]
    if expected:
        consistent = Attestation.read(doc).inconsistency() is None
        try:
            Attestation.from_json(copy.deepcopy(doc))
        except AttestationInconsistentError:
            assert not consistent
        else:
            assert consistent


@pytest.mark.parametrize(
    "stamp",
    ["2025-01-31T12:00:00Z", "2025-01-31T12:00:00.5+02:00", "2025-01-31T12:00:00-0500", "2025-01-31T12:00:00+05",
     "2024-02-29T00:00:00Z", "2025-01-31T12:00:00.123456789-23:59", *(s for s in NEAR_MISSES if s[:2] in "20０٢")],
)  # fmt: skip
def test_date_times_follow_the_spec(stamp: str) -> None:
    doc = {**_valid(), "createdAt": stamp}
    assert reader_accepts(doc) == oracle_accepts(doc) == spec_datetime(stamp)


def _valid() -> dict[str, Any]:
    return {
        "schema": "agentproto.review.attestation/v1", "runId": "review-1", "reviewId": "r", "manifestSha": "a" * 64,
        "binding": "ci", "target": {"repoRemote": "r", "baseSha": "1", "headSha": "2"}, "rangeSha": range_sha("1", "2"),
        "lanes": [], "verdict": "incomplete", "attestor": {"daemon": "d", "presets": []}, "rubrics": [],
        "createdAt": "2025-01-31T12:00:00Z",
    }  # fmt: skip
