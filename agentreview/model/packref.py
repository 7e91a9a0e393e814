"""The grammar of a review-pack reference, shared by the manifest schema, the parser and the git loader.

One module decides what a ``git+https://<url>#<sha>`` reference is, so none of them can split it differently.
"""

from __future__ import annotations

import re

GIT_PACK_REF = re.compile(r"^git\+(https://[^\s#]+)#([0-9a-f]{40})\Z")
# Any reference that is not a git one, or a pinned git+https one (the JSON Schema's pattern).
PACK_REF_PATTERN = r"^(?!git\+)\S+$|^git\+https://[^\s#]+#[0-9a-f]{40}$"


class GitPackRefError(ValueError):
    """A ``git+`` pack reference that is not ``git+https://<url>#<40-hex sha>``."""


def parse_git_pack_ref(ref: str) -> tuple[str, str]:
    """Split ``git+https://<url>#<sha>`` at the FIRST ``#`` into ``(https url, sha)``.

    Shared by the manifest parser and the git pack loader, so the two can never
    split a reference differently (a ``#`` smuggled into the url is refused).
    """
    if not ref.startswith("git+https://"):
        raise GitPackRefError(
            f"git pack ref '{ref}' must use git+https:// — other git transports (ssh://, file://, ext::, "
            "plain http://) are not accepted"
        )
    match = GIT_PACK_REF.fullmatch(ref)  # fullmatch: `$` alone would accept a trailing newline
    if match is None:
        raise GitPackRefError(
            f"git pack ref '{ref}' must be pinned to a full 40-hex commit sha (git+https://<url>#<sha>) — a floating "
            "branch, tag, or short sha is not reproducible; the url itself may not contain whitespace or '#' (the pin "
            "starts at the first '#')"
        )
    return match.group(1), match.group(2)
