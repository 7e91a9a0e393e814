"""When a verification may show an attestation's findings as the reviewers' own.

An export is the change's to write: its findings count only when its signature verified against a trusted key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["unverified_reason"]


def unverified_reason(report: Mapping[str, Any]) -> str | None:
    """Why the findings of the ``verify --json`` object ``report`` are not vouched for; None when they are."""
    principal = report.get("principal")
    if not isinstance(principal, str) or not principal:
        return "the attestation's signature did not verify against a trusted key"
    checks = report.get("checks")
    steps = [check for check in checks if isinstance(check, Mapping)] if isinstance(checks, list) else []
    if not any(check.get("check") == "rangeSha" and check.get("ok") is True for check in steps):
        return "the attestation is not of the range being verified"
    return None
