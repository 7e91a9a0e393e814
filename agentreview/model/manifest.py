"""The manifest's one declaration: the records of ``kind: review`` and ``kind: review-pack`` and each field's meaning.

Reading them (:func:`agentreview.model.reader.read`) validates, and the JSON Schemas come from the same fields;
constructing a record directly does not validate. Cross-field rules live in ``agentreview.manifest.rules``.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from agentreview.model.packref import PACK_REF_PATTERN, parse_git_pack_ref
from agentreview.model.reader import Bool, DictOf, Int, ListOf, Lit, Nullable, Record, Str, Tagged, spec
from agentreview.model.record import record

ID_PATTERN = r"^[a-z][a-z0-9-]*$"
REF_PATTERN = r"^[a-z][a-z0-9-]*(?:/[a-z][a-z0-9-]*)?$"
SEMVER_PATTERN = r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"

DEFAULT_COMMAND_TIMEOUT_MS = 10 * 60_000
DEFAULT_AGENT_TIMEOUT_MS = 15 * 60_000
# Not in the reference schema: a bound that keeps a hostile number from becoming a
# lane that never ends. A day is far beyond any real review lane.
MAX_TIMEOUT_MS = 24 * 60 * 60_000
DEFAULT_BASE = "origin/main"
QUORUM: Final = "all-blocking-pass"

Severity = Literal["high", "medium", "low"]


def pack_ref(value: str) -> str:
    """A pack reference: an npm name, a path, or a pinned ``git+https://<url>#<sha>``."""
    if re.fullmatch(PACK_REF_PATTERN, value) is None:  # fullmatch: `$` would accept a trailing newline
        if value.startswith("git+"):
            parse_git_pack_ref(value)  # raises with the message that names the fix
        raise ValueError(f"pack reference {value!r} must be an npm name, a path or git+https://<url>#<sha>")
    return value


def string_target(value: Any) -> Any:
    """``target: git-range`` is the string form of ``{kind: git-range}``."""
    return {"kind": "git-range"} if value == "git-range" else value


def unique_ids(checks: list[Any]) -> list[Any]:
    """A pack's checks, each id once."""
    seen: set[str] = set()
    for check in checks:
        if check.id in seen:
            raise ValueError(f"checks[] lists '{check.id}' more than once")
        seen.add(check.id)
    return checks


# --------------------------------------------------------------------------- what each field may hold

TEXT = Str()
NON_EMPTY = Str(min_length=1)
ID = Str(pattern=ID_PATTERN, max_length=64)
REF = Str(pattern=REF_PATTERN, max_length=129)
FLAG = Bool()
FALSE_ONLY = Lit(False)  # effects where only false is allowed
TIMEOUT_MS = Int(gt=0, le=MAX_TIMEOUT_MS)
SEVERITY = Lit("high", "medium", "low")
NAMES = ListOf(NON_EMPTY)


@record(kw_only=True)
class CommandCheck:
    """A ``kind: command`` check of a review manifest: a shell command run in the frozen head."""

    id: str = spec(ID)
    kind: Literal["command"] = spec(Lit("command"))
    description: str | None = spec(Nullable(TEXT), default=None)
    run: str = spec(NON_EMPTY)
    cwd: str | None = spec(Nullable(NON_EMPTY), default=None)
    blocking: bool = spec(FLAG, default=True)
    timeoutMs: int = spec(TIMEOUT_MS, default=DEFAULT_COMMAND_TIMEOUT_MS)
    effects: bool = spec(FLAG, default=False)


@record(kw_only=True)
class AgentCheck:
    """A ``kind: agent`` check of a review manifest: a reviewer preset (and its fallbacks) with a rubric."""

    id: str = spec(ID)
    kind: Literal["agent"] = spec(Lit("agent"))
    description: str | None = spec(Nullable(TEXT), default=None)
    preset: str = spec(NON_EMPTY)
    fallbackPresets: list[str] = spec(NAMES, default_factory=list)
    rubric: str = spec(NON_EMPTY)
    blockOn: Severity = spec(SEVERITY, default="high")
    blocking: bool = spec(FLAG, default=True)
    timeoutMs: int = spec(TIMEOUT_MS, default=DEFAULT_AGENT_TIMEOUT_MS)
    effects: Literal[False] = spec(FALSE_ONLY, default=False)


@record(kw_only=True)
class Binding:
    """A named selection of checks, and when it applies."""

    on: str | None = spec(Nullable(NON_EMPTY), default=None)
    prepare: list[str] = spec(ListOf(REF), default_factory=list)
    checks: list[str] = spec(ListOf(REF, min_length=1))
    quorum: Literal["all-blocking-pass"] = spec(Lit(QUORUM), default=QUORUM)


@record(kw_only=True)
class Override:
    """A change to one imported check: its severity threshold, blocking, timeout or reviewers."""

    blockOn: Severity | None = spec(Nullable(SEVERITY), default=None)
    blocking: bool | None = spec(Nullable(FLAG), default=None)
    timeoutMs: int | None = spec(Nullable(TIMEOUT_MS), default=None)
    preset: str | None = spec(Nullable(NON_EMPTY), default=None)
    fallbackPresets: list[str] | None = spec(Nullable(NAMES), default=None)


@record(kw_only=True)
class UsesEntry:
    """One pack the manifest imports: under which name, which of its checks, with what changes."""

    pack: str = spec(Str(after=pack_ref, schema_pattern=PACK_REF_PATTERN))
    as_: str = spec(ID, key="as")  # `as` is a Python keyword
    checks: list[str] | None = spec(Nullable(ListOf(ID)), default=None)
    preset: str | None = spec(Nullable(NON_EMPTY), default=None)
    fallbackPresets: list[str] | None = spec(Nullable(NAMES), default=None)
    overrides: dict[str, Override] = spec(DictOf(ID, Record(Override)), default_factory=dict)
    allowCommands: bool = spec(FLAG, default=False)


@record(kw_only=True)
class Target:
    """What a review covers: a git range from ``base`` to the head."""

    kind: Literal["git-range"] = spec(Lit("git-range"))
    base: str = spec(NON_EMPTY, default=DEFAULT_BASE)


@record(kw_only=True)
class VerdictConfig:
    """The `verdict` member: the folder the export is written to."""

    exportDir: str | None = spec(Nullable(NON_EMPTY), default=None)


# A check of a review: a plugin may add kinds at parse time (the `extra` of reader.read).
CHECK = Tagged("kind", CommandCheck, AgentCheck, open=True)


@record(kw_only=True)
class ReviewManifest:
    """The frontmatter of a ``kind: review`` REVIEW.md."""

    kind: Literal["review"] = spec(Lit("review"))
    id: str = spec(ID)
    name: str | None = spec(Nullable(NON_EMPTY), default=None)
    description: str | None = spec(Nullable(TEXT), default=None)
    target: Target = spec(Record(Target, before=string_target))
    checks: list[CommandCheck | AgentCheck] = spec(ListOf(CHECK, min_length=1))
    bindings: dict[str, Binding] | None = spec(Nullable(DictOf(ID, Record(Binding))), default=None)
    uses: list[UsesEntry] = spec(ListOf(Record(UsesEntry)), default_factory=list)
    verdict: VerdictConfig = spec(Record(VerdictConfig), default_factory=VerdictConfig)


@record(kw_only=True)
class PackCommandCheck:
    """A ``kind: command`` check a review pack ships."""

    id: str = spec(ID)
    kind: Literal["command"] = spec(Lit("command"))
    description: str | None = spec(Nullable(TEXT), default=None)
    run: str = spec(NON_EMPTY)
    cwd: str | None = spec(Nullable(TEXT), default=None)
    blocking: bool = spec(FLAG, default=True)
    timeoutMs: int = spec(TIMEOUT_MS, default=DEFAULT_COMMAND_TIMEOUT_MS)
    effects: Literal[False] = spec(FALSE_ONLY, default=False)


@record(kw_only=True)
class PackAgentCheck:
    """A ``kind: agent`` check a review pack ships."""

    id: str = spec(ID)
    kind: Literal["agent"] = spec(Lit("agent"))
    description: str | None = spec(Nullable(TEXT), default=None)
    preset: str | None = spec(Nullable(NON_EMPTY), default=None)
    rubric: str = spec(NON_EMPTY)
    blockOn: Severity = spec(SEVERITY, default="high")
    blocking: bool = spec(FLAG, default=True)
    timeoutMs: int = spec(TIMEOUT_MS, default=DEFAULT_AGENT_TIMEOUT_MS)
    effects: Literal[False] = spec(FALSE_ONLY, default=False)


PACK_CHECK = Tagged("kind", PackCommandCheck, PackAgentCheck)


@record(kw_only=True)
class ReviewPack:
    """The frontmatter of a ``kind: review-pack`` document."""

    kind: Literal["review-pack"] = spec(Lit("review-pack"))
    id: str = spec(ID)
    version: str = spec(Str(pattern=SEMVER_PATTERN))
    description: str | None = spec(Nullable(TEXT), default=None)
    checks: list[PackCommandCheck | PackAgentCheck] = spec(ListOf(PACK_CHECK, min_length=1, after=unique_ids))


# Every record type, for the code and tests that walk them all.
RECORDS: Final = (
    CommandCheck,
    AgentCheck,
    Binding,
    Override,
    UsesEntry,
    Target,
    VerdictConfig,
    ReviewManifest,
    PackCommandCheck,
    PackAgentCheck,
    ReviewPack,
)
