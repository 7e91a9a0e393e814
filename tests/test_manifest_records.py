"""The manifest records: plain dataclasses declaring each field's meaning, cheap to import and build, read strictly."""

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


def test_every_field_type_resolves_and_declares_its_meaning() -> None:
    from agentreview.model.reader import Spec

    for record in RECORDS:
        hints = typing.get_type_hints(record, include_extras=True)  # raises NameError on an unresolvable name
        assert set(hints) >= {f.name for f in dataclasses.fields(record)}
        for f in dataclasses.fields(record):
            assert isinstance(f.metadata.get("spec"), Spec), f"{record.__name__}.{f.name}"


@pytest.mark.parametrize("record", RECORDS)
def test_records_are_frozen_keyword_only_and_closed(record: type) -> None:
    from agentreview.model.reader import ReadError, read

    params = getattr(record, "__dataclass_params__")  # noqa: B009
    assert params.frozen and all(f.kw_only for f in dataclasses.fields(record))
    with pytest.raises(ReadError) as caught:
        read(record, {"unknownKey": 1})
    assert "unexpected_keyword_argument" in [e["type"] for e in caught.value.errors]


def test_strictness_is_per_field() -> None:
    from agentreview.model.reader import ReadError, read

    good = {"id": "lint", "kind": "command", "run": "make lint"}
    assert read(m.CommandCheck, good) == m.CommandCheck(id="lint", kind="command", run="make lint")
    for key, value in [("blocking", "true"), ("blocking", 1), ("timeoutMs", "5"), ("timeoutMs", 5.5), ("run", 5)]:
        with pytest.raises(ReadError):
            read(m.CommandCheck, {**good, key: value})
    with pytest.raises(ReadError):
        read(m.AgentCheck, {"id": "a", "kind": "agent", "preset": "p", "rubric": "r", "fallbackPresets": ("x",)})
    uses = read(m.UsesEntry, {"pack": "./p", "as": "core", "overrides": {"x": {"blocking": False}}})
    assert uses.as_ == "core" and uses.overrides == {"x": m.Override(blocking=False)}
    with pytest.raises(ReadError):
        read(m.UsesEntry, {"pack": "./p", "as_": "core"})  # only the spelling `as` is input


def test_every_problem_is_reported_at_once_with_its_location() -> None:
    from agentreview.model.reader import ReadError, read

    with pytest.raises(ReadError) as caught:
        read(m.CommandCheck, {"id": "Bad", "kind": "command", "timeoutMs": 0, "zz": 1})
    found = [(e["loc"], e["type"]) for e in caught.value.errors]
    assert found == [
        (("id",), "string_pattern_mismatch"),
        (("run",), "missing"),
        (("timeoutMs",), "greater_than"),
        (("zz",), "unexpected_keyword_argument"),
    ]
