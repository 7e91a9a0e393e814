"""Refusing hostile git pack references before any git process starts.

On top of the core's shape rule (``parse_git_pack_ref``): no credentials in the URL, no control or
non-ASCII characters, a real host, and nothing git could read as an option.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from agentreview.api import PackLoadError


def split_git_ref(ref: str) -> tuple[str, str]:
    """Return ``(https url, sha)`` for a safe pinned reference, or raise :class:`PackLoadError`."""
    from agentreview.api import parse_git_pack_ref

    if any(ord(ch) < 0x21 or ord(ch) > 0x7E for ch in ref):
        raise PackLoadError(
            f"git pack ref {ref!r} contains whitespace, a control character or a non-ASCII character — "
            "write the URL percent-encoded"
        )
    try:
        url, sha = parse_git_pack_ref(ref)
    except ValueError as exc:  # the parser's ManifestError is a ValueError too
        raise PackLoadError(str(exc)) from exc
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise PackLoadError(f"git pack ref '{ref}': the URL is malformed ({exc})") from exc
    if parts.scheme != "https" or not parts.hostname or parts.hostname.startswith("-"):
        raise PackLoadError(f"git pack ref '{ref}': the URL must be https://<host>/<path>")
    if "@" in parts.netloc:
        raise PackLoadError(
            f"git pack ref '{ref}': the URL carries credentials — remove 'user@' / 'user:password@'; "
            "packs are fetched anonymously"
        )
    return url, sha
