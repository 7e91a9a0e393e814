"""Field shapes of the two manifest kinds: ``kind: review`` and ``kind: review-pack``.

Strict at every level (an unknown key is an error) and strict in type (YAML
``"true"`` is not a boolean, ``"5"`` is not an integer). Cross-field rules live in
``agentreview.manifest.rules``; these models express shapes and defaults only, exactly as
reference-notes 1.1 and 1.2 give them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from agentreview.model.packref import PACK_REF_PATTERN, parse_git_pack_ref

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

Id = Annotated[str, Field(pattern=ID_PATTERN, max_length=64)]
Ref = Annotated[str, Field(pattern=REF_PATTERN, max_length=129)]
NonEmpty = Annotated[str, Field(min_length=1)]
TimeoutMs = Annotated[int, Field(gt=0, le=MAX_TIMEOUT_MS)]
Severity = Literal["high", "medium", "low"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class CommandCheck(Strict):
    id: Id
    kind: Literal["command"]
    description: str | None = None
    run: NonEmpty
    cwd: NonEmpty | None = None
    blocking: bool = True
    timeoutMs: TimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS
    effects: bool = False


class AgentCheck(Strict):
    id: Id
    kind: Literal["agent"]
    description: str | None = None
    preset: NonEmpty
    fallbackPresets: list[NonEmpty] = Field(default_factory=list)
    rubric: NonEmpty
    blockOn: Severity = "high"
    blocking: bool = True
    timeoutMs: TimeoutMs = DEFAULT_AGENT_TIMEOUT_MS
    effects: Literal[False] = False


Check = Annotated[CommandCheck | AgentCheck, Field(discriminator="kind")]


class CheckModel(Strict):
    """The base of a check kind a plugin contributes (``agentreview.api.CheckModel``).

    A lane executor for a new kind declares ``check_model``: a subclass that narrows ``kind``
    to its own literal and adds its own fields, for example::

        class NotebookCheck(CheckModel):
            kind: Literal["notebook"]
            path: str

    The parser validates such a check with that model, as strictly as the built-in kinds
    (unknown keys are errors, YAML ``"true"`` is not a boolean), and reports its errors with
    location and line like the rest. ``command`` and ``agent`` are the spec's kinds and keep
    their own models; a plugin cannot replace them. A plugin check never has ``effects``: only
    a command check may run in ``prepare``.
    """

    id: Id
    kind: str
    description: str | None = None
    blocking: bool = True
    timeoutMs: TimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS


class Binding(Strict):
    on: NonEmpty | None = None
    prepare: list[Ref] = Field(default_factory=list)
    checks: Annotated[list[Ref], Field(min_length=1)]
    quorum: Literal["all-blocking-pass"] = QUORUM


class Override(Strict):
    blockOn: Severity | None = None
    blocking: bool | None = None
    timeoutMs: TimeoutMs | None = None
    preset: NonEmpty | None = None
    fallbackPresets: list[NonEmpty] | None = None


def _pack_ref(value: str) -> str:
    # The pattern needs a look-ahead, which pydantic's default (Rust) regex engine lacks;
    # fullmatch keeps Python's `$` from accepting a trailing newline.
    if re.fullmatch(PACK_REF_PATTERN, value) is None:
        if value.startswith("git+"):
            parse_git_pack_ref(value)  # raises with the message that names the fix
        raise ValueError(f"pack reference {value!r} must be an npm name, a path or git+https://<url>#<sha>")
    return value


PackRef = Annotated[str, AfterValidator(_pack_ref)]


class UsesEntry(Strict):
    # `as` is a Python keyword, so the field is `as_`; only the spelling `as` is accepted as input.
    model_config = ConfigDict(validate_by_name=False, validate_by_alias=True)

    pack: PackRef
    as_: Id = Field(alias="as")
    checks: list[Id] | None = None
    preset: NonEmpty | None = None
    fallbackPresets: list[NonEmpty] | None = None
    overrides: dict[Id, Override] = Field(default_factory=dict)
    allowCommands: bool = False


class Target(Strict):
    kind: Literal["git-range"]
    base: NonEmpty = DEFAULT_BASE


class VerdictConfig(Strict):
    exportDir: NonEmpty | None = None


class ReviewManifest(Strict):
    kind: Literal["review"]
    id: Id
    name: NonEmpty | None = None
    description: str | None = None
    target: Target
    checks: Annotated[list[Check], Field(min_length=1)]
    bindings: dict[Id, Binding] | None = None
    uses: list[UsesEntry] = Field(default_factory=list)
    verdict: VerdictConfig = Field(default_factory=VerdictConfig)

    @field_validator("target", mode="before")
    @classmethod
    def _string_target(cls, value: Any) -> Any:
        # `target: git-range` is the string form of `{kind: git-range}`.
        if value == "git-range":
            return {"kind": "git-range"}
        return value


class _PackStrict(Strict):
    # Pack models are built on first use: a review without packs (most runs) never pays for them.
    model_config = ConfigDict(**Strict.model_config, defer_build=True)


class PackCommandCheck(_PackStrict):
    id: Id
    kind: Literal["command"]
    description: str | None = None
    run: NonEmpty
    cwd: str | None = None
    blocking: bool = True
    timeoutMs: TimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS
    effects: Literal[False] = False


class PackAgentCheck(_PackStrict):
    id: Id
    kind: Literal["agent"]
    description: str | None = None
    preset: NonEmpty | None = None
    rubric: NonEmpty
    blockOn: Severity = "high"
    blocking: bool = True
    timeoutMs: TimeoutMs = DEFAULT_AGENT_TIMEOUT_MS
    effects: Literal[False] = False


PackCheck = Annotated[PackCommandCheck | PackAgentCheck, Field(discriminator="kind")]


class ReviewPack(_PackStrict):
    kind: Literal["review-pack"]
    id: Id
    version: Annotated[str, Field(pattern=SEMVER_PATTERN)]
    description: str | None = None
    checks: Annotated[list[PackCheck], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique_ids(self) -> ReviewPack:
        seen: set[str] = set()
        for check in self.checks:
            if check.id in seen:
                raise ValueError(f"checks[] lists '{check.id}' more than once")
            seen.add(check.id)
        return self
