"""A foreign entry ``{attestation, host: {foreign}}``: one ``<digest>.json`` file or one line ``<pack>#<offset>`` of
a fetch's pack. Apart from :mod:`~agentreview.store.foreign` so the index reads entries without that store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

from agentreview.host.files import UnreadableFileError, read_regular_file, read_regular_line
from agentreview.model.attestation import Attestation
from agentreview.model.digests import loads_strict, sha256_hex
from agentreview.store.entries import MAX_ENTRY_BYTES, Summary
from agentreview.store.layout import MEMBER, LedgerError, LedgerKey, check_key

MAX_PACK_BYTES = 256 * 1024 * 1024  # a fetch writes at most 64 MiB of notes into one pack
VERDICTS = ("pass", "block", "incomplete")
PACK_PREFIX = b'{"attestation":'
T = TypeVar("T")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def foreign_row(att: dict[str, Any], host: dict[str, Any]) -> dict[str, Any]:
    """A ``ledger`` row for a foreign entry: the usual members plus ``foreign: {remote, principal}``."""
    target, attestor, meta = _obj(att.get("target")), _obj(att.get("attestor")), _obj(host.get("foreign"))
    lanes = [lane for lane in att.get("lanes") or [] if isinstance(lane, dict)]
    row: dict[str, Any] = {
        "runId": att.get("runId"),
        "reviewId": att.get("reviewId"),
        "binding": att.get("binding"),
        "verdict": att.get("verdict"),
        "repoRemote": target.get("repoRemote"),
        "baseSha": target.get("baseSha"),
        "headSha": target.get("headSha"),
        "rangeSha": att.get("rangeSha"),
        "manifestSha": att.get("manifestSha"),
        "createdAt": att.get("createdAt"),
        "signed": isinstance(attestor.get("signature"), dict),
        "lanes": [{"id": ln.get("id"), "status": ln.get("status"), "blocking": ln.get("blocking")} for ln in lanes],
        "foreign": {"remote": meta.get("remote"), "principal": meta.get("principal")},
    }
    if att.get("dirty") is True:
        row["dirty"] = True
    return row


def _is_text(value: str) -> bool:
    """Whether ``value`` is Unicode text: JSON can escape a lone surrogate into a string, UTF-8 cannot hold one."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def listable_summary(att: Any) -> Summary:
    """The index columns of the foreign entry of ``att`` when its listed members are well formed (the strict read
    waits for its use); ValueError, or LedgerError when its key cannot name a path."""
    if not isinstance(att, dict) or not isinstance(target := att.get("target"), dict):
        raise ValueError("not an attestation: no target object")
    get, target_get = att.get, target.get
    if (verdict := get("verdict")) not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}")
    run_id, created_at, base, head = get("runId"), get("createdAt"), target_get("baseSha"), target_get("headSha")
    if not (isinstance(run_id, str) and isinstance(created_at, str) and isinstance(base, str)
            and isinstance(head, str) and isinstance(get("reviewId"), str) and isinstance(get("lanes"), list)):
        raise ValueError("runId, reviewId, createdAt, target.baseSha, target.headSha and lanes are required")
    parts = (target_get("repoRemote"), get("manifestSha"), get("binding"), get("rangeSha"))
    for part in parts:
        if not isinstance(part, str):
            raise ValueError("target.repoRemote, manifestSha, binding and rangeSha must be strings")
    key = LedgerKey(*cast(tuple[str, str, str, str], parts))
    check_key(key)
    if not all(map(_is_text, (run_id, created_at, base, head, key.repo_remote))):  # the index keeps them as text
        raise ValueError("runId, createdAt, target.baseSha, target.headSha and target.repoRemote must be text "
                         "(a lone surrogate is not)")  # fmt: skip
    # no requester session: a foreign entry was requested by no session of this host
    return Summary(key, base, head, run_id, None, created_at, verdict, get("dirty") is True, None)


def read_foreign(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(attestation, host)`` of a foreign entry, the attestation checked by the strict model; else ValueError."""
    try:
        doc = loads_strict(data)
        att, host = doc["attestation"], doc["host"]
        if not isinstance(att, dict) or not isinstance(host, dict):
            raise ValueError("attestation and host must be objects")
        Attestation.read(att)
    except (KeyError, TypeError, RecursionError) as exc:
        raise ValueError(f"not a foreign entry {{attestation, host}} ({exc})") from exc
    return att, host


def _entry_bytes(path: Path) -> bytes:
    """The bytes of the entry file or pack member ``path``; raises UnreadableFileError."""
    pack, member, offset = path.name.partition(MEMBER)
    if member:
        return read_regular_line(path.with_name(pack), int(offset), limit=MAX_ENTRY_BYTES)
    return read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False)


def read_foreign_at(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`read_foreign` of the entry file or pack member ``path``; raises ValueError or UnreadableFileError."""
    return read_foreign(_entry_bytes(path))


def read_or_warn(read: Callable[[Path], T], path: Path, warn: Callable[[str], None]) -> T | None:
    """``read(path)``, or None with a warning when the entry is unreadable or malformed."""
    try:
        return read(path)
    except (UnreadableFileError, ValueError) as exc:
        warn(f"{path}: skipped foreign entry: {exc}")
        return None


def listing_row(path: Path) -> dict[str, Any]:
    """The ``ledger`` row (:func:`foreign_row`) of ``path``, read as an import reads it; raises as the read."""
    data = _entry_bytes(path)
    try:
        doc = json.loads(data)
        return foreign_row(_obj(doc["attestation"]), _obj(doc["host"]))
    except (KeyError, TypeError, RecursionError) as exc:
        raise ValueError(f"not a foreign entry {{attestation, host}} ({exc})") from exc


def pack_host(host: dict[str, Any]) -> bytes:
    """The JSON of a pack line's ``host`` member."""
    return json.dumps(host, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def pack_line(attestation: bytes, host: bytes) -> bytes:
    """A pack's line: the attestation's JSON as stored (one line) and :func:`pack_host` of its host."""
    return PACK_PREFIX + attestation + b',"host":' + host + b"}\n"


class Member(NamedTuple):
    """One line of a pack: where it starts, and its summary and attestation digest (None: unusable)."""

    offset: int
    summary: Summary | None
    digest: str | None
    problem: str | None


def pack_members(data: bytes) -> Iterator[Member]:
    """Every line of a pack, each read as an import reads it (the strict read waits for its use)."""
    offset = 0
    for line in data.split(b"\n")[:-1]:
        try:
            doc = json.loads(line)
            att, host = doc["attestation"], doc["host"]
            summary = listable_summary(att)
            if not isinstance(host, dict):
                raise ValueError("host must be an object")
            if not line.startswith(PACK_PREFIX):
                raise ValueError("not a pack line")
            text = line[len(PACK_PREFIX) : line.rindex(b',"host":')]
            found = Member(offset, summary, sha256_hex(text), None)
        except (ValueError, LedgerError, KeyError, TypeError, RecursionError) as exc:
            found = Member(offset, None, None, str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__)
        yield found
        offset += len(line) + 1
