"""From a path to the frontmatter mapping: bounded bytes, strict UTF-8, the ``---`` split, safe YAML.

The file is hostile until proven otherwise: it is read through the one bounded reader (a FIFO or ``/dev/stdin``
is refused at once) and its YAML by :mod:`agentreview.manifest.yaml_safe`, which also maps key paths to lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentreview.model.problems import MAX_PROBLEMS, ManifestError, Problem
from agentreview.model.record import record

MAX_MANIFEST_BYTES = 1 << 20
BOM = "\ufeff"


def read_manifest_bytes(path: Path) -> bytes:
    """The manifest's bytes exactly as on disk (they are what ``manifestSha`` hashes).

    Refuses a missing file, a directory, anything that is not a regular file (FIFO, device,
    socket, or a link to one), more than :data:`MAX_MANIFEST_BYTES`, and non-UTF-8.
    """
    from agentreview.host.files import MissingFileError, UnreadableFileError, read_regular_file

    shown = Path(path).absolute()
    try:
        data = read_regular_file(shown, limit=MAX_MANIFEST_BYTES)
    except UnreadableFileError as exc:
        if isinstance(exc, MissingFileError) or isinstance(exc.__cause__, NotADirectoryError):
            missing = Problem("file", "does not exist", "create it, or pass the right --manifest path")
            raise ManifestError(shown, [missing]) from None
        raise ManifestError(shown, [_unreadable(shown, exc)]) from None
    decode(data, shown)
    return data


def _unreadable(path: Path, exc: OSError) -> Problem:
    """The one problem for a file the bounded reader refused, in the words the manifest messages use."""
    if os.path.isdir(path):
        return Problem("file", "is a directory", "pass the REVIEW.md file inside it")
    reason = str(exc)
    if reason.startswith("is larger than"):
        return Problem("file", f"is larger than {MAX_MANIFEST_BYTES} bytes", "keep the manifest small; move prose out")
    if reason.startswith("is not a regular file"):
        return Problem(
            "file",
            "is not a regular file (a FIFO, device or socket, or a link to one) — refusing to read it",
            "point --manifest at the REVIEW.md file itself",
        )
    cause = exc.__cause__
    if isinstance(cause, OSError):
        return Problem("file", f"cannot be read ({cause.strerror or cause})", "")
    return Problem("file", reason, "")


def decode(source: bytes, path: Path | None) -> str:
    """``source`` as strict UTF-8; a :class:`ManifestError` naming the line of the first bad byte."""
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        raise ManifestError(
            path,
            [Problem("file", f"is not valid UTF-8 (byte {exc.start})", "save the file as UTF-8", line)],
        ) from None


@record
class Frontmatter:
    """The mapping between the ``---`` lines, the file line paths map to, and the markdown body."""

    data: dict[str, Any]
    lines: dict[tuple[str | int, ...], int]
    body: str


def load_frontmatter(source: bytes, path: Path | None = None) -> Frontmatter:
    """Split ``---`` / YAML / ``---`` and read the YAML strictly. A leading BOM is accepted and ignored."""
    from agentreview.manifest.yaml_safe import YamlError, load

    rows, close = _split(decode(source, path))
    if rows[0].rstrip("\r \t") != "---":
        raise ManifestError(
            path,
            [Problem("frontmatter", "missing: the file must start with a '---' line", "begin with ---, YAML, ---", 1)],
        )
    if close is None:
        raise ManifestError(
            path, [Problem("frontmatter", "is not closed: no '---' line after line 1", "end the YAML with ---", 1)]
        )
    yaml_text = "\n".join(row.removesuffix("\r") for row in rows[1:close]) + "\n"
    try:
        loaded = load(yaml_text, first_line=2)
    except YamlError as exc:
        raise ManifestError(path, [Problem("frontmatter", exc.reason, "", exc.line)]) from None
    if loaded.value is None or loaded.value == {}:
        raise ManifestError(
            path, [Problem("frontmatter", "missing or empty frontmatter", "write the manifest between --- lines", 1)]
        )
    if not isinstance(loaded.value, dict):
        kind = "list" if isinstance(loaded.value, list) else type(loaded.value).__name__
        raise ManifestError(
            path, [Problem("frontmatter", f"must be a mapping of keys, got a {kind}", "write key: value lines", 2)]
        )
    if nulls := _null_problems(loaded.value, loaded.lines):
        raise ManifestError(path, nulls)
    return Frontmatter(loaded.value, loaded.lines, "\n".join(rows[close + 1 :]))


def _null_problems(data: dict[str, Any], lines: dict[tuple[str | int, ...], int]) -> list[Problem]:
    """Every key set to null (``description:``, ``cwd: ~``): no field takes null, on the reference host either.

    Omitting an optional key is how a manifest says "no value"; an explicit null is refused, one
    problem per key, so a file this host reads is one the reference host reads too.
    """
    problems: list[Problem] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if item is None:
                where = (*path, key)
                fix = "remove the key, or give it a value (quote '' for an empty string)"
                problems.append(Problem(_dotted(where), "is null (an empty value)", fix, lines.get(where)))
            else:
                stack.append(((*path, key), item))
    return sorted(problems, key=lambda p: p.line or 0)[:MAX_PROBLEMS]


def _dotted(path: tuple[str | int, ...]) -> str:
    """``("checks", 0, "cwd")`` as ``checks[0].cwd``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _split(text: str) -> tuple[list[str], int | None]:
    """The rows of ``text`` (a leading BOM dropped) and the index of the closing row, if any.

    The closing row is the first ``---``; without one, a ``...`` row that ends the file (blank and
    comment lines aside), which is where the reference host's reader accepts it.
    """
    if text.startswith(BOM):
        text = text[1:]
    rows = text.split("\n")
    close = next((i for i in range(1, len(rows)) if rows[i].rstrip("\r \t") == "---"), None)
    if close is None:  # YAML's own end marker closes it when nothing but blank or comment lines follow
        close = next((i for i in range(1, len(rows)) if rows[i].rstrip("\r \t") == "..."), None)
        if close is not None and any(row.strip() and not row.lstrip().startswith("#") for row in rows[close + 1 :]):
            close = None
    return rows, close


def frontmatter_body(source: bytes) -> str | None:
    """The markdown body :func:`load_frontmatter` would give, split without reading the YAML.

    For a manifest already parsed once (the parse memo): None when ``source`` has no
    frontmatter to split, which a parsed manifest always has.
    """
    try:
        rows, close = _split(source.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    if close is None or rows[0].rstrip("\r \t") != "---":
        return None
    return "\n".join(rows[close + 1 :])
