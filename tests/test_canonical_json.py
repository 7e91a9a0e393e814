"""Canonical JSON exact to the spec: the bytes a JavaScript host signs, checked against real ``JSON.stringify``.

The spec's canonical form is JavaScript's: ``null`` is a value and is kept (only
``undefined`` is omitted), a lone surrogate is written ``\\ud800``, an integer beyond 2**53
is the double JavaScript reads, keys are ordered by UTF-16 code units. An attestation
another conforming host signed over such bytes must verify here.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    NAMESPACE,
    PRINCIPAL,
    Key,
    Repo,
    allowed_signers,
    isolated_env,
    keys_fixture,
    repo_fixture,
)

from agentreview.model.digests import UNDEFINED, CanonicalJsonError, canonical_json, loads_strict, signed_bytes_of

NODE = shutil.which("node")

# The reference's canonicalJson (reference-notes 2.8): keys sorted with the default sort(), which
# compares UTF-16 code units, and every key and primitive written by JSON.stringify.
CANON_JS = r"""
function canon(v) {
  if (Array.isArray(v)) return "[" + v.map((x) => (x === undefined ? "null" : canon(x))).join(",") + "]";
  if (v !== null && typeof v === "object")
    return "{" + Object.keys(v).sort().filter((k) => v[k] !== undefined)
      .map((k) => JSON.stringify(k) + ":" + canon(v[k])).join(",") + "}";
  return v === undefined ? "null" : JSON.stringify(v);
}
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => process.stdout.write(JSON.stringify(JSON.parse(input).map((t) => canon(JSON.parse(t))))));
"""


# --------------------------------------------------------------------------- vectors


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # null is a value: JSON.stringify({exitCode: null}) keeps it; only undefined is omitted.
        ({"exitCode": None, "id": "t"}, b'{"exitCode":null,"id":"t"}'),
        ({"lanes": [{"exitCode": None}], "pr": None}, b'{"lanes":[{"exitCode":null}],"pr":null}'),
        ({"exitCode": UNDEFINED, "id": "t"}, b'{"id":"t"}'),
        # Lone surrogates, escaped lowercase as ES2019's well-formed JSON.stringify does.
        ("\ud800", b'"\\ud800"'),
        ("a\udfffb", b'"a\\udfffb"'),
        ("\udc00\ud800", b'"\\udc00\\ud800"'),  # low then high: not a pair, two lone surrogates
        ("\ud83d\ude00", '"\U0001f600"'.encode()),  # high then low: one character to JavaScript
        ({"\udbff": 1}, b'{"\\udbff":1}'),
        # Integers beyond 2**53: the nearest double, in Number.prototype.toString's form.
        (2**53 + 1, b"9007199254740992"),
        (-(2**53) - 1, b"-9007199254740992"),
        (10**21, b"1e+21"),
        (123456789012345678901234, b"1.2345678901234569e+23"),
        (10**20 + 1, b"100000000000000000000"),
        # Keys by UTF-16 code units: U+1F600 is D83D DE00, before U+E000 although its code point is larger.
        ({"\ue000": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\ue000":1}'.encode()),
        ({"\uffff": 1, "\U0010ffff": 2, "\ud7ff": 3}, '{"\ud7ff":3,"\U0010ffff":2,"\uffff":1}'.encode()),
    ],
    ids=[
        "null-member", "null-nested", "undefined-omitted", "lone-high", "lone-low-inside", "reversed-pair",
        "pair-as-two-code-points", "lone-surrogate-key", "2^53+1", "-(2^53+1)", "10^21", "1.23e+23", "10^20+1",
        "utf16-key-order", "utf16-key-order-bmp-edges",
    ],
)  # fmt: skip
def test_vector(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


def test_the_reference_notes_3_1_vector_with_undefined_and_with_null() -> None:
    undefined_y = {"b": 1, "a": [{"z": True, "y": UNDEFINED, "x": "é"}]}
    assert canonical_json(undefined_y) == '{"a":[{"x":"é","z":true}],"b":1}'.encode()
    assert canonical_json({"b": 1, "a": [{"z": True, "y": None, "x": "é"}]}) == (
        '{"a":[{"x":"é","y":null,"z":true}],"b":1}'.encode()
    )


def test_two_python_keys_that_are_one_javascript_string_are_refused() -> None:
    with pytest.raises(CanonicalJsonError, match="same JavaScript string"):
        canonical_json({"\U0001f600": 1, "\ud83d\ude00": 2})


def test_a_document_read_with_escaped_surrogates_and_a_big_integer_canonicalizes() -> None:
    text = '{"title": "bad \\ud800 byte", "line": 9007199254740993, "ok": null}'
    assert canonical_json(loads_strict(text)) == b'{"line":9007199254740992,"ok":null,"title":"bad \\ud800 byte"}'


# --------------------------------------------------------------------------- properties

_alphabet = st.characters() | st.integers(0xD800, 0xDFFF).map(chr) | st.sampled_from(["\ue000", "\uffff", "\U0001f600"])


@given(st.dictionaries(st.text(_alphabet, max_size=4), st.integers(0, 9), max_size=8))
def test_keys_are_in_utf16_code_unit_order_even_with_surrogates(value: dict[str, int]) -> None:
    joined = {k.encode("utf-16-be", "surrogatepass"): v for k, v in value.items()}
    if len(joined) < len(value):  # two Python keys that are one JavaScript string
        with pytest.raises(CanonicalJsonError):
            canonical_json(value)
        return
    keys = list(json.loads(canonical_json(value)))  # the stdlib reads escaped lone surrogates back
    assert [k.encode("utf-16-be", "surrogatepass") for k in keys] == sorted(joined)


_rfc8785_scalars = st.none() | st.booleans() | st.integers(-(2**53 - 1), 2**53 - 1) | st.text(max_size=8)
_rfc8785_values: st.SearchStrategy[Any] = st.recursive(
    _rfc8785_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(_rfc8785_values)
def test_agrees_with_rfc8785_wherever_rfc8785_has_an_answer(value: Any) -> None:
    # RFC 8785 refuses lone surrogates and integers beyond 2**53; on everything else it and
    # JSON.stringify agree, null members included.
    assert canonical_json(value) == rfc8785.dumps(value)


# --------------------------------------------------------------------------- JSON.stringify itself


def _random_documents(count: int) -> list[str]:
    rng = random.Random(62)
    pool = ["a", "Z", "_", "é", "\x00", "\x1f", "\x7f", '"', "\\", "\n", "\u2028", "\ud800", "\udbff", "\udc00",
            "\udfff", "\ue000", "\uffff", "\U0001f600", "\U0010ffff"]  # fmt: skip

    def text() -> str:
        return "".join(rng.choice(pool) for _ in range(rng.randint(0, 5)))

    def number() -> float | int:
        pick = rng.randint(0, 4)
        if pick == 0:
            return rng.randint(-(2**70), 2**70)
        if pick == 1:
            bits = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            return bits if bits == bits and abs(bits) != float("inf") else 0.5
        if pick == 2:
            return rng.uniform(-1e-5, 1e-5)
        if pick == 3:
            return float(rng.randint(-(10**22), 10**22))
        return rng.random() * 10 ** rng.randint(-10, 25)

    def value(depth: int = 0) -> Any:
        pick = rng.randint(0, 5 if depth < 3 else 2)
        if pick == 0:
            return text()
        if pick == 1:
            return number()
        if pick == 2:
            return rng.choice([None, True, False, 0, -1, 7])
        if pick == 3:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {text(): value(depth + 1) for _ in range(rng.randint(0, 4))}

    return [json.dumps(value()) for _ in range(count)]


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed: JSON.stringify ground truth unavailable")
def test_bytes_equal_real_json_stringify_with_sorted_keys(tmp_path: Path) -> None:
    vectors = [
        '{"b": 1, "a": [{"z": true, "y": null, "x": "\\u00e9"}], "exitCode": null}',
        '"\\ud800"', '["a\\udfffb", "\\udc00\\ud800", "\\ud83d\\ude00"]',
        '{"\\udbff": 1, "\\ue000": 2, "\\ud83d\\ude00": 3}',
        "9007199254740993", "-9007199254740993", "1000000000000000000000", "123456789012345678901234",
        "[1e-7, 1.5e-7, 0.000001, 5e-324, 1e300, 0.1, -0.0, 100.0, 1e20, 1e21, 18446744073709551616]",
        '"\\u0000\\u001f\\u007f\\b\\f\\n\\r\\t\\"\\\\\\u2028\\u2029"',
    ]  # fmt: skip
    documents = vectors + _random_documents(1500)
    script = tmp_path / "canon.js"
    script.write_text(CANON_JS)
    proc = subprocess.run(
        [str(NODE), str(script)], input=json.dumps(documents), capture_output=True, text=True, timeout=120, check=True
    )
    expected = json.loads(proc.stdout)
    assert len(expected) == len(documents)
    mismatches = [
        (doc, want, got)
        for doc, want in zip(documents, expected, strict=True)
        if (got := canonical_json(loads_strict(doc))) != want.encode("utf-8")
    ]
    assert mismatches == []


# --------------------------------------------------------------------------- end to end


def _ssh_sign(payload: bytes, key: Key, work: Path) -> str:
    """What a host's signer does: ``ssh-keygen -Y sign`` over the canonical bytes."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / "attestation.json"
    path.write_bytes(payload)
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key.path), "-n", NAMESPACE, str(path)],
        check=True, timeout=30, capture_output=True,
    )  # fmt: skip
    return (work / "attestation.json.sig").read_text()


def _verify_cli(repo: Repo, signers: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentreview", "verify", "--cwd", str(repo.root), "--require-signed",
         "--allowed-signers", str(signers)],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(), stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_an_attestation_with_null_members_signed_by_another_host_verifies(
    repo: Repo, keys: dict[str, Key], tmp_path: Path
) -> None:
    # The document a JavaScript host writes for a lane with no exit code and no pull request.
    doc = repo.attestation()
    assert doc["lanes"][1]["id"] == "correctness" and doc["lanes"][1]["durationMs"] == 900
    # Its canonical bytes, built without our canonicalizer's say on null: the document without
    # the null members has no null anywhere, and the members are spliced in at their sorted places.
    without = signed_bytes_of(doc)
    payload = without.replace(b'"durationMs":900,"findings"', b'"durationMs":900,"exitCode":null,"findings"', 1)
    payload = payload.replace(b',"rangeSha":', b',"pr":null,"rangeSha":', 1)
    assert payload.count(b"null") == 2
    doc["lanes"][1]["exitCode"] = None
    doc["pr"] = None
    assert signed_bytes_of(doc) == payload  # the canonical bytes a conforming host signs
    doc["attestor"]["signature"] = {
        "alg": "ssh-ed25519", "keyFingerprint": keys["trusted"].fingerprint, "principal": PRINCIPAL,
        "signedAt": "2026-01-01T00:00:00.000Z", "sig": _ssh_sign(payload, keys["trusted"], tmp_path / "sign"),
    }  # fmt: skip
    export = repo.root / ".reviews" / "other-host.json"
    export.parent.mkdir(exist_ok=True)
    export.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")  # JSON.stringify(att, null, 2)
    signers = allowed_signers(tmp_path / "trust" / "allowed_signers", keys["trusted"])

    proc = _verify_cli(repo, signers)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"signed: {PRINCIPAL}" in proc.stdout

    # The null is signed like any other member: dropping it is tampering.
    del doc["lanes"][1]["exitCode"]
    export.write_text(json.dumps(doc, indent=2) + "\n")
    proc = _verify_cli(repo, signers)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "signature" in proc.stdout
