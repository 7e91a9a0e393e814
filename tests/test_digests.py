"""Digests and canonical JSON against the spec's vectors (reference-notes 2.7, 2.8, 2.15, 3.1)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentreview.model.digests import (
    UNDEFINED,
    CanonicalJsonError,
    attestation_sha256_of,
    canonical_json,
    js_sort_key,
    manifest_sha,
    multiset_key,
    pack_digest_sha256,
    range_sha,
    sha256_hex,
    signed_bytes_of,
)

PACK_MD_SHA = "0cccf656cc21d2203de4ff8f31c8f0791812ee17d36176fc47562ff3681b864b"
RUBRIC_SHA = "3c1d98d1ff2816d52bf2e03c3e46c3220107999b2a26f0811b5cde42d9bfe042"
PACK_DIGEST = "fe060a88f5bb7f3fdc86d883b1681665cd633d5a8cc5bcdb6d0b32112ed173a7"
RANGE_SHA = "709ea9c102cd11ed178afc5f0d3bef72b86e55ec7de29a6fb125fb100ef166a8"


# --------------------------------------------------------------------------- 3.1 vectors


def test_sha256_hex_vectors_for_str_and_bytes() -> None:
    assert sha256_hex("pack-md\n") == PACK_MD_SHA
    assert sha256_hex(b"pack-md\n") == PACK_MD_SHA
    assert sha256_hex("rubric\n") == RUBRIC_SHA


def test_sha256_hex_is_lowercase_utf8() -> None:
    assert sha256_hex("é") == hashlib.sha256("é".encode()).hexdigest()
    assert sha256_hex("x") == sha256_hex("x").lower()


def test_pack_digest_vector() -> None:
    assert pack_digest_sha256(b"pack-md\n", [("./rubrics/correctness.md", b"rubric\n")]) == PACK_DIGEST


def test_pack_digest_intermediate_string_is_two_sorted_lines_without_trailing_newline() -> None:
    intermediate = (
        f"./rubrics/correctness.md\x00{RUBRIC_SHA}\n"
        f"REVIEW.md\x00{PACK_MD_SHA}"
    )
    assert hashlib.sha256(intermediate.encode()).hexdigest() == PACK_DIGEST
    # The REVIEW.md line first would be a different digest: the sort is what puts "." before "R".
    unsorted = f"REVIEW.md\x00{PACK_MD_SHA}\n./rubrics/correctness.md\x00{RUBRIC_SHA}"
    assert hashlib.sha256(unsorted.encode()).hexdigest() != PACK_DIGEST
    assert hashlib.sha256((intermediate + "\n").encode()).hexdigest() != PACK_DIGEST


def test_pack_digest_keeps_duplicate_rubric_lines_and_depends_on_selection() -> None:
    one = pack_digest_sha256(b"pack-md\n", [("./r.md", b"rubric\n")])
    two = pack_digest_sha256(b"pack-md\n", [("./r.md", b"rubric\n"), ("./r.md", b"rubric\n")])
    none = pack_digest_sha256(b"pack-md\n", [])
    assert len({one, two, none}) == 3
    assert none == sha256_hex(f"REVIEW.md\x00{PACK_MD_SHA}")
    lines = sorted([f"./r.md\x00{RUBRIC_SHA}"] * 2 + [f"REVIEW.md\x00{PACK_MD_SHA}"])
    assert two == sha256_hex("\n".join(lines))


def test_pack_digest_is_order_independent_and_byte_sensitive() -> None:
    a = ("a.md", b"A")
    b = ("b.md", b"B")
    assert pack_digest_sha256(b"m", [a, b]) == pack_digest_sha256(b"m", [b, a])
    assert pack_digest_sha256(b"m", [a]) != pack_digest_sha256(b"m", [("a.md", b"A ")])
    assert pack_digest_sha256(b"m", [a]) != pack_digest_sha256(b"m\n", [a])


def test_range_sha_vector() -> None:
    assert range_sha("1" * 40, "2" * 40) == RANGE_SHA
    assert range_sha("1" * 40, "2" * 40) == sha256_hex("1" * 40 + ".." + "2" * 40)
    assert range_sha("2" * 40, "1" * 40) != RANGE_SHA


def test_canonical_json_vector_drops_undefined_and_writes_e_acute_literally() -> None:
    # canonicalJson({ b: 1, a: [{ z: true, y: undefined, x: "é" }] }): JavaScript's undefined is UNDEFINED.
    value = {"b": 1, "a": [{"z": True, "y": UNDEFINED, "x": "é"}]}
    assert canonical_json(value) == '{"a":[{"x":"é","z":true}],"b":1}'.encode()
    assert b"\\u" not in canonical_json(value)


def test_canonical_json_vector_with_null_keeps_the_member() -> None:
    # The same object with y: null, as JSON.stringify writes it: null is a value, not undefined.
    value = {"b": 1, "a": [{"z": True, "y": None, "x": "é"}]}
    assert canonical_json(value) == '{"a":[{"x":"é","y":null,"z":true}],"b":1}'.encode()


def test_manifest_sha_hashes_bytes_exactly_as_read() -> None:
    crlf = b"---\r\nkind: review\r\n---\r\n"
    assert manifest_sha(crlf) == hashlib.sha256(crlf).hexdigest()
    assert manifest_sha(crlf) != manifest_sha(crlf.replace(b"\r\n", b"\n"))


# --------------------------------------------------------------------------- canonical JSON


def test_keys_sort_uppercase_then_underscore_then_lowercase() -> None:
    assert canonical_json({"a": 1, "_": 2, "B": 3, "A": 4}) == b'{"A":4,"B":3,"_":2,"a":1}'


def test_keys_sort_by_utf16_code_units_not_code_points() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16, which sorts before U+E000 and U+FFFF
    # although its code point is larger. A code-point sort would put it last.
    emoji, private, last_bmp = "\U0001f600", "\ue000", "\uffff"
    out = canonical_json({last_bmp: 1, private: 2, emoji: 3, "z": 4}).decode()
    assert [k for k in json.loads(out)] == ["z", emoji, private, last_bmp]
    assert sorted([last_bmp, private, emoji]) != [emoji, private, last_bmp]  # the naive order differs


def test_nested_objects_sorted_arrays_kept_no_whitespace() -> None:
    out = canonical_json({"z": {"b": [3, 1, 2], "a": {"d": 1, "c": 2}}, "y": []})
    assert out == b'{"y":[],"z":{"a":{"c":2,"d":1},"b":[3,1,2]}}'


def test_none_is_null_everywhere_and_undefined_is_omitted_only_as_a_member() -> None:
    assert canonical_json([1, None, 2]) == b"[1,null,2]"
    assert canonical_json(None) == b"null"
    assert canonical_json({"a": {"b": None}}) == b'{"a":{"b":null}}'
    # reference-notes 2.8: an undefined member is omitted, an undefined array element is null,
    # a top-level undefined is the string null.
    assert canonical_json({"a": {"b": UNDEFINED}, "c": UNDEFINED}) == b'{"a":{}}'
    assert canonical_json([1, UNDEFINED]) == b"[1,null]"
    assert canonical_json(UNDEFINED) == b"null"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, b"1"),
        (-0.0, b"0"),
        (0.1, b"0.1"),
        (1e21, b"1e+21"),
        (1e20, b"100000000000000000000"),
        (123456789012345680000.0, b"123456789012345680000"),
        (1e-7, b"1e-7"),
        (1.5e-7, b"1.5e-7"),
        (0.000001, b"0.000001"),
        (5e-324, b"5e-324"),
        (1e300, b"1e+300"),
        (2**53 - 1, b"9007199254740991"),
        (-(2**53 - 1), b"-9007199254740991"),
        (2**53, b"9007199254740992"),
        (2**53 + 1, b"9007199254740992"),
        (-(2**53 + 1), b"-9007199254740992"),
        (2**53 + 3, b"9007199254740996"),
        (10**21, b"1e+21"),
        (10**30, b"1e+30"),
        (2**64, b"18446744073709552000"),
        (True, b"true"),
        (False, b"false"),
    ],
)
def test_numbers_as_json_stringify(value: float, expected: bytes) -> None:
    assert canonical_json(value) == expected


def test_strings_escape_like_json_stringify() -> None:
    assert canonical_json('a"\\\n\t\x01é\u2028') == b'"a\\"\\\\\\n\\t\\u0001\xc3\xa9\xe2\x80\xa8"'


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), float("-inf"), 10**400, -(10**400)],
    ids=["nan", "inf", "-inf", "1e400", "-1e400"],
)
def test_numbers_no_javascript_host_can_write_are_refused(value: float) -> None:
    # JSON.stringify writes null for these; no conforming host writes them, and writing null
    # would let one signature cover two documents.
    with pytest.raises(CanonicalJsonError):
        canonical_json({"durationMs": value})


def test_an_integer_beyond_2_53_is_written_as_the_double_javascript_reads() -> None:
    # JSON.parse("9007199254740993") is 9007199254740992 (ties to even), and that is what it writes.
    assert canonical_json(2**53 + 1) == canonical_json(float(2**53)) == b"9007199254740992"
    assert canonical_json({"n": 10**21 + 1}) == b'{"n":1e+21}'


def test_unsupported_types_are_refused_with_canonical_json_error() -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json({"when": object()})
    with pytest.raises(CanonicalJsonError):
        canonical_json({1: "non-string key"})
    with pytest.raises(CanonicalJsonError, match="keys must be strings"):
        canonical_json({"é": 1, None: "a non-string key after a non-ASCII one"})


_json_scalars = st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.text(max_size=8)
_json_values = st.recursive(
    _json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(_json_values)
def test_canonical_json_parses_back_and_is_stable(value: object) -> None:
    out = canonical_json(value)
    # JavaScript has one number type: reading integers back as doubles is what a JS verifier sees.
    parsed = json.loads(out, parse_int=float)
    assert canonical_json(parsed) == out
    assert b"\n" not in out  # no whitespace between tokens; a newline inside a string is escaped


@given(st.dictionaries(st.text(max_size=6), st.integers(0, 9), max_size=8))
def test_canonical_keys_are_in_utf16_order(value: dict[str, int]) -> None:
    keys = list(json.loads(canonical_json(value)))
    assert keys == sorted(value, key=lambda k: k.encode("utf-16-be"))


# --------------------------------------------------------------------------- helpers


def test_js_sort_key_matches_utf16_order() -> None:
    words = ["b", "\U0001f600", "\uffff", "B", "_", "."]
    assert sorted(words, key=js_sort_key) == [".", "B", "_", "b", "\U0001f600", "\uffff"]


def test_multiset_key_sorts_and_joins() -> None:
    assert multiset_key([("b", "1"), ("a", "2")]) == "a\x002\nb\x001"
    assert multiset_key([("a", "2"), ("b", "1")]) == multiset_key([("b", "1"), ("a", "2")])


def test_signed_bytes_drop_only_the_signature_and_do_not_mutate() -> None:
    doc: dict[str, Any] = {
        "attestor": {"daemon": "d", "presets": [], "signature": {"sig": "S"}, "note": None},
        "x": 1,
        "y": None,
    }
    assert signed_bytes_of(doc) == b'{"attestor":{"daemon":"d","note":null,"presets":[]},"x":1,"y":null}'
    assert doc["attestor"]["signature"] == {"sig": "S"}
    assert attestation_sha256_of(doc) == sha256_hex(canonical_json(doc))
    assert attestation_sha256_of(doc) != sha256_hex(signed_bytes_of(doc))
