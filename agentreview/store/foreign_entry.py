"""The file of one foreign entry, ``{attestation, host: {foreign: {...}}}``: how it is read and listed.

Apart from :mod:`agentreview.store.foreign` (which writes them) so the ledger's index can read an
entry without importing the store that uses the index.
"""

from __future__ import annotations

from typing import Any

from agentreview.model.attestation import Attestation
from agentreview.model.digests import loads_strict
from agentreview.store.entries import Summary
from agentreview.store.layout import LedgerKey


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


def read_foreign(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(attestation, host)`` of a foreign entry file, the attestation checked by the strict
    model; raises ValueError saying what is wrong."""
    try:
        doc = loads_strict(data)
        att, host = doc["attestation"], doc["host"]
        if not isinstance(att, dict) or not isinstance(host, dict):
            raise ValueError("attestation and host must be objects")
        Attestation.read(att)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a foreign entry {{attestation, host}} ({exc})") from exc
    return att, host


def summarize_foreign(data: bytes) -> Summary:
    """The index columns and the ``ledger`` row (:func:`foreign_row`) of a foreign entry file."""
    return foreign_summary(*read_foreign(data))


def foreign_summary(att: dict[str, Any], host: dict[str, Any]) -> Summary:
    """The index columns and ``ledger`` row of the entry ``{attestation: att, host: host}``, for
    a writer that has the checked attestation at hand (no file read back)."""
    row = foreign_row(att, host)
    key = LedgerKey(row["repoRemote"], row["manifestSha"], row["binding"], row["rangeSha"])
    # no requester session: a foreign entry was requested by no session of this host
    return Summary(key, row["baseSha"], row["headSha"], row["runId"], None, row["createdAt"], row)
