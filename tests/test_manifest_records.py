"""The manifest records are plain dataclasses: cheap to import and build, validated by pydantic only on a parse."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

import pytest

from agentreview.model import manifest as m

RECORDS = list(m.RECORDS)


def test_importing_and_building_the_records_does_not_import_pydantic() -> None:
    program = (
        "import sys\n"
        "from agentreview.model.manifest import Binding, CommandCheck, ReviewManifest, Target\n"
        "check = CommandCheck(id='lint', kind='command', run='make lint')\n"
        "ReviewManifest(kind='review', id='demo', target=Target(kind='git-range'), checks=[check],\n"
        "               bindings={'default': Binding(checks=['lint'])})\n"
        "print(sorted(name for name in ('pydantic', 'pydantic_core', 'yaml') if name in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_every_field_type_resolves_once_the_validators_are_loaded() -> None:
    from agentreview.model import manifest_fields

    used: set[str] = set()
    for record in RECORDS:
        hints = typing.get_type_hints(record, include_extras=True)  # raises NameError on an unresolvable name
        assert set(hints) >= {f.name for f in dataclasses.fields(record)}
        for f in dataclasses.fields(record):
            used |= {name for name in manifest_fields.ALIASES if name in str(f.type).replace("|", " ").split()}
    assert used == set(manifest_fields.ALIASES)  # each published name is one the records use


@pytest.mark.parametrize("record", RECORDS)
def test_records_are_frozen_keyword_only_and_closed(record: type) -> None:
    params = getattr(record, "__dataclass_params__")  # noqa: B009
    assert params.frozen and all(f.kw_only for f in dataclasses.fields(record))
    assert record.__pydantic_config__["extra"] == "forbid"  # type: ignore[attr-defined]
    assert "strict" not in record.__pydantic_config__  # type: ignore[attr-defined]  # strict per field


def test_strictness_is_per_field() -> None:
    from pydantic import ValidationError

    from agentreview.model.manifest_fields import validate

    good = {"id": "lint", "kind": "command", "run": "make lint"}
    assert validate(m.CommandCheck, good) == m.CommandCheck(id="lint", kind="command", run="make lint")
    for key, value in [("blocking", "true"), ("blocking", 1), ("timeoutMs", "5"), ("timeoutMs", 5.5), ("run", 5)]:
        with pytest.raises(ValidationError):
            validate(m.CommandCheck, {**good, key: value})
    with pytest.raises(ValidationError):
        validate(m.AgentCheck, {"id": "a", "kind": "agent", "preset": "p", "rubric": "r", "fallbackPresets": ("x",)})
    uses = validate(m.UsesEntry, {"pack": "./p", "as": "core", "overrides": {"x": {"blocking": False}}})
    assert uses.as_ == "core" and uses.overrides == {"x": m.Override(blocking=False)}
    with pytest.raises(ValidationError):
        validate(m.UsesEntry, {"pack": "./p", "as_": "core"})  # only the spelling `as` is input
