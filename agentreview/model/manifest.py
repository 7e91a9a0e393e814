"""Field shapes of the two manifest kinds: ``kind: review`` and ``kind: review-pack``.

Plain frozen dataclasses: importing this module and building its records costs next to
nothing, so a command that only reads a manifest's conclusions (a memoized parse, a plan, a
cache hit) never imports pydantic. The field types are written as names of constrained types
(``Id``, ``TimeoutMs``, ``Flag``...) that :mod:`agentreview.model.manifest_fields` defines for
pydantic and :mod:`agentreview.model.manifest_strict` reads without it (a manifest of the
built-in check kinds is accepted there; pydantic explains what it does not accept).

Validation is strict at every level (an unknown key is an error) and strict in type (YAML
``"true"`` is not a boolean, ``"5"`` is not an integer). Cross-field rules live in
``agentreview.manifest.rules``; these records express shapes and defaults only, exactly as
reference-notes 1.1 and 1.2 give them. Constructing a record directly (pack resolution, tests)
does not validate: only parsing does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:  # pragma: no cover
    # What each field type name is to a type checker. What it means for validation is declared
    # in manifest_fields (pydantic) and manifest_strict (its table), held equal by tests; at run
    # time pydantic finds these names in this module because manifest_fields places them here.
    from typing import TypeAlias

    Text: TypeAlias = str
    NonEmpty: TypeAlias = str
    Id: TypeAlias = str
    Semver: TypeAlias = str
    Flag: TypeAlias = bool
    FalseOnly: TypeAlias = Literal[False]
    TimeoutMs: TypeAlias = int
    PackRef: TypeAlias = str
    AsId: TypeAlias = str
    Names: TypeAlias = list[str]
    IdList: TypeAlias = list[str]
    RefList: TypeAlias = list[str]
    RefList1: TypeAlias = list[str]
    Overrides: TypeAlias = "dict[str, Override]"
    Bindings: TypeAlias = "dict[str, Binding]"
    UsesList: TypeAlias = "list[UsesEntry]"
    TargetIn: TypeAlias = "Target"
    ReviewChecks: TypeAlias = "list[CommandCheck | AgentCheck]"
    PackChecks: TypeAlias = "list[PackCommandCheck | PackAgentCheck]"

__all__ = [
    "DEFAULT_AGENT_TIMEOUT_MS",
    "DEFAULT_BASE",
    "DEFAULT_COMMAND_TIMEOUT_MS",
    "ID_PATTERN",
    "MAX_TIMEOUT_MS",
    "QUORUM",
    "RECORDS",
    "REF_PATTERN",
    "SEMVER_PATTERN",
    "AgentCheck",
    "Binding",
    "CommandCheck",
    "Override",
    "PackAgentCheck",
    "PackCommandCheck",
    "ReviewManifest",
    "ReviewPack",
    "Severity",
    "Target",
    "UsesEntry",
    "VerdictConfig",
    "input_key",
]

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

# pydantic's configuration of every record: an unknown key is an error. Strictness in type is
# per field (each scalar alias carries Strict()): `strict` here would make pydantic demand a
# dataclass instance where the manifest has a mapping.
_CLOSED: Final[dict[str, Any]] = {"extra": "forbid"}
# `as` is a Python keyword, so UsesEntry's field is `as_`; only the spelling `as` is accepted as input.
_CLOSED_BY_ALIAS: Final[dict[str, Any]] = {**_CLOSED, "validate_by_name": False, "validate_by_alias": True}


def input_key(name: str) -> str:
    """The manifest key of a record field: ``as_`` is read as ``as`` (a Python keyword), others as named."""
    return "as" if name == "as_" else name


@dataclass(frozen=True, kw_only=True, slots=True)
class CommandCheck:
    __pydantic_config__ = _CLOSED

    id: Id
    kind: Literal["command"]
    description: Text | None = None
    run: NonEmpty
    cwd: NonEmpty | None = None
    blocking: Flag = True
    timeoutMs: TimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS
    effects: Flag = False


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentCheck:
    __pydantic_config__ = _CLOSED

    id: Id
    kind: Literal["agent"]
    description: Text | None = None
    preset: NonEmpty
    fallbackPresets: Names = field(default_factory=list)
    rubric: NonEmpty
    blockOn: Severity = "high"
    blocking: Flag = True
    timeoutMs: TimeoutMs = DEFAULT_AGENT_TIMEOUT_MS
    effects: FalseOnly = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Binding:
    __pydantic_config__ = _CLOSED

    on: NonEmpty | None = None
    prepare: RefList = field(default_factory=list)
    checks: RefList1
    quorum: Literal["all-blocking-pass"] = QUORUM


@dataclass(frozen=True, kw_only=True, slots=True)
class Override:
    __pydantic_config__ = _CLOSED

    blockOn: Severity | None = None
    blocking: Flag | None = None
    timeoutMs: TimeoutMs | None = None
    preset: NonEmpty | None = None
    fallbackPresets: Names | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class UsesEntry:
    __pydantic_config__ = _CLOSED_BY_ALIAS

    pack: PackRef
    as_: AsId
    checks: IdList | None = None
    preset: NonEmpty | None = None
    fallbackPresets: Names | None = None
    overrides: Overrides = field(default_factory=dict)
    allowCommands: Flag = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    __pydantic_config__ = _CLOSED

    kind: Literal["git-range"]
    base: NonEmpty = DEFAULT_BASE


@dataclass(frozen=True, kw_only=True, slots=True)
class VerdictConfig:
    __pydantic_config__ = _CLOSED

    exportDir: NonEmpty | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewManifest:
    __pydantic_config__ = _CLOSED

    kind: Literal["review"]
    id: Id
    name: NonEmpty | None = None
    description: Text | None = None
    target: TargetIn  # `target: git-range` is the string form of `{kind: git-range}`
    checks: ReviewChecks
    bindings: Bindings | None = None
    uses: UsesList = field(default_factory=list)
    verdict: VerdictConfig = field(default_factory=VerdictConfig)


@dataclass(frozen=True, kw_only=True, slots=True)
class PackCommandCheck:
    __pydantic_config__ = _CLOSED

    id: Id
    kind: Literal["command"]
    description: Text | None = None
    run: NonEmpty
    cwd: Text | None = None
    blocking: Flag = True
    timeoutMs: TimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS
    effects: FalseOnly = False


@dataclass(frozen=True, kw_only=True, slots=True)
class PackAgentCheck:
    __pydantic_config__ = _CLOSED

    id: Id
    kind: Literal["agent"]
    description: Text | None = None
    preset: NonEmpty | None = None
    rubric: NonEmpty
    blockOn: Severity = "high"
    blocking: Flag = True
    timeoutMs: TimeoutMs = DEFAULT_AGENT_TIMEOUT_MS
    effects: FalseOnly = False


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewPack:
    __pydantic_config__ = _CLOSED

    kind: Literal["review-pack"]
    id: Id
    version: Semver
    description: Text | None = None
    checks: PackChecks  # each id once (a validator of the list)


# Every record type, for the code and tests that walk them all (the readers' agreement, the memo).
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
