"""Canonical JSON (:mod:`agentreview.model.canonical`) and every digest agentreview/v1 defines.

``json_text`` is the readable form written to a file or a reader, escaping a lone surrogate as the canonical
form does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

# CPython's own SHA-256 (the same digest): importing hashlib loads OpenSSL's libcrypto, a cost every
# cold command paid for hashing a few KiB (docs/performance.md). 3.12 renamed the module; a build
# without it uses hashlib's.
try:
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.12+, or a build without the builtin hashes
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment,no-redef,unused-ignore]

# Re-exported: digests is where callers look for canonical JSON.
from agentreview.model.canonical import UNDEFINED as UNDEFINED
from agentreview.model.canonical import CanonicalJsonError as CanonicalJsonError
from agentreview.model.canonical import canonical_json as canonical_json
from agentreview.model.canonical import json_text as json_text

PACK_DIGEST_ALG = "agentproto-pack-digest/v1"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def refuse_constant(name: str) -> Any:
    """A ``parse_constant`` for ``json.loads``: NaN and Infinity are not JSON."""
    raise ValueError(f"'{name}' is not a JSON value")


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that refuses duplicate keys and NaN/Infinity.

    Every document a verdict depends on (exports, verdict files, reviewer streams) is
    read with it: two parsers must never disagree about what a document says.
    """
    return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=refuse_constant)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return sha256(data).hexdigest()


def signed_bytes_of(attestation: Mapping[str, Any]) -> bytes:
    """Canonical JSON of an attestation document with ``attestor.signature`` removed."""
    data = dict(attestation)
    attestor = data.get("attestor")
    if isinstance(attestor, Mapping):  # copied one level down, so the caller's document is untouched
        data["attestor"] = {key: value for key, value in attestor.items() if key != "signature"}
    return canonical_json(data)


def attestation_sha256_of(attestation: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the whole document, signature included."""
    return sha256_hex(canonical_json(attestation))


def manifest_sha(source: bytes) -> str:
    """SHA-256 of the REVIEW.md source bytes exactly as read."""
    return sha256_hex(source)


def range_sha(base_sha: str, head_sha: str) -> str:
    return sha256_hex(f"{base_sha}..{head_sha}")


def js_sort_key(text: str) -> bytes:
    """Order strings by UTF-16 code units, as JavaScript's default sort does."""
    return text.encode("utf-16-be")


def pack_digest_sha256(review_md: bytes, rubrics: Iterable[tuple[str, bytes]]) -> str:
    """``agentproto-pack-digest/v1`` over a pack's REVIEW.md and its selected agent checks' rubrics.

    ``rubrics`` holds one ``(path as declared in the pack, raw bytes)`` per selected
    agent check; a rubric shared by two checks appears twice, as the recipe requires.
    """
    lines = [f"REVIEW.md\0{sha256_hex(review_md)}"]
    lines.extend(f"{path}\0{sha256_hex(data)}" for path, data in rubrics)
    lines.sort(key=js_sort_key)
    return sha256_hex("\n".join(lines))


def multiset_key(items: Iterable[Iterable[str]]) -> str:
    """The cache rule's multiset form: each item joined with NUL, sorted, joined with newlines."""
    return "\n".join(sorted(("\0".join(item) for item in items), key=js_sort_key))
