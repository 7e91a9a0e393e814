"""pydantic's side of the manifest records: the constrained field types and the validators.

:mod:`agentreview.model.manifest` declares its records as plain dataclasses whose field types
are names (``Id``, ``TimeoutMs``, ``Flag``...) written as strings, so importing the records
never imports pydantic. This module gives those names their meaning for pydantic and is
imported only when pydantic validates a manifest (one the strict reader of
:mod:`agentreview.model.manifest_strict` does not accept, one with a plugin's check kind) or
builds a JSON Schema: pydantic validates the dataclasses through :func:`adapter` and honours
each record's ``__pydantic_config__`` (``extra: forbid``). That strict reader's table gives the
same names the same meaning without pydantic (a test derives it from this module), and the
validators both attach are defined there.

Strictness is carried by each type, not by the records' configuration: every scalar is
``Strict()`` (YAML ``"true"`` is not a boolean, ``"5"`` or ``5.0`` is not an integer) and so is
every list and mapping; a record-level ``strict`` would make pydantic demand a dataclass
instance where a manifest has a mapping. ``Literal`` types cannot take ``Strict()`` and match
by equality in both modes: a literal of strings needs nothing more (only a string equals a
string), the one boolean literal (``FalseOnly``) checks its input's type before
(``effects: 0`` is not ``false``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, Strict, TypeAdapter

from agentreview.model import manifest
from agentreview.model.manifest import (
    ID_PATTERN,
    MAX_TIMEOUT_MS,
    REF_PATTERN,
    SEMVER_PATTERN,
    AgentCheck,
    Binding,
    CommandCheck,
    Override,
    PackAgentCheck,
    PackCommandCheck,
    Target,
    UsesEntry,
)
from agentreview.model.manifest_strict import exact_bool, pack_ref, string_target, unique_ids
from agentreview.model.numbers import as_whole

__all__ = ["ALIASES", "Check", "PackCheck", "adapter", "validate"]


# --------------------------------------------------------------------------- scalars

Text = Annotated[str, Strict()]
NonEmpty = Annotated[str, Strict(), Field(min_length=1)]
Id = Annotated[str, Strict(), Field(pattern=ID_PATTERN, max_length=64)]
Ref = Annotated[str, Strict(), Field(pattern=REF_PATTERN, max_length=129)]
Semver = Annotated[str, Strict(), Field(pattern=SEMVER_PATTERN)]
Flag = Annotated[bool, Strict()]
FalseOnly = Annotated[Literal[False], BeforeValidator(exact_bool)]  # effects where only false is allowed
TimeoutMs = Annotated[int, Strict(), Field(gt=0, le=MAX_TIMEOUT_MS), BeforeValidator(as_whole)]
PackRef = Annotated[str, Strict(), AfterValidator(pack_ref)]
AsId = Annotated[Id, Field(alias="as")]

# --------------------------------------------------------------------------- collections and records

Names = Annotated[list[NonEmpty], Strict()]
IdList = Annotated[list[Id], Strict()]
RefList = Annotated[list[Ref], Strict()]
RefList1 = Annotated[list[Ref], Strict(), Field(min_length=1)]
Overrides = Annotated[dict[Id, Override], Strict()]
Bindings = Annotated[dict[Id, Binding], Strict()]
UsesList = Annotated[list[UsesEntry], Strict()]
TargetIn = Annotated[Target, BeforeValidator(string_target)]
Check = Annotated[CommandCheck | AgentCheck, Field(discriminator="kind")]
ReviewChecks = Annotated[list[Check], Strict(), Field(min_length=1)]
PackCheck = Annotated[PackCommandCheck | PackAgentCheck, Field(discriminator="kind")]
PackChecks = Annotated[list[PackCheck], Strict(), Field(min_length=1), AfterValidator(unique_ids)]

# The names the records' annotations use; agentreview.model.manifest gives each a plain type for
# type checkers (a test checks that every annotation resolves to the meaning declared here).
ALIASES = (
    "AsId",
    "Bindings",
    "FalseOnly",
    "Flag",
    "Id",
    "IdList",
    "Names",
    "NonEmpty",
    "Overrides",
    "PackChecks",
    "PackRef",
    "RefList",
    "RefList1",
    "ReviewChecks",
    "Semver",
    "TargetIn",
    "Text",
    "TimeoutMs",
    "UsesList",
)


def _publish() -> None:
    """Make the records' string annotations resolvable: the one step before any schema is built.

    pydantic evaluates a dataclass's string annotations in the globals of the dataclass's
    module. The records' module names these types only for type checkers (importing them
    there would import pydantic), so this module, which every validation goes through,
    places them in that namespace once, when it is imported.
    """
    namespace = vars(manifest)
    for name in ALIASES:
        namespace[name] = globals()[name]


_publish()


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def adapter(record: Any) -> TypeAdapter[Any]:
    """The validator of ``record`` (a manifest record, or a union of them), built once per process.

    Building one costs milliseconds (pydantic generates its schema); the few records and
    unions validated are all module-level objects, so this cache stays as small as they are.
    """
    built = _ADAPTERS.get(record)
    if built is None:
        built = _ADAPTERS[record] = TypeAdapter(record)
    return built


def validate(record: type[Any], data: Any) -> Any:
    """``data`` (a parsed YAML or JSON mapping) validated into ``record``; raises pydantic's ValidationError."""
    return adapter(record).validate_python(data)
