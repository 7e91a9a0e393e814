"""yaml_safe: YAML 1.2 core-schema scalars, and a clear line:column refusal for every hostile construct."""

from __future__ import annotations

import re
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentreview.manifest.yaml_safe import MAX_DEPTH, YamlError, load


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on", "on"),
        ("off", "off"),
        ("yes", "yes"),
        ("no", "no"),
        ("y", "y"),
        ("N", "N"),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("FALSE", False),
        ("tRue", "tRue"),
        ("~", None),
        ("null", None),
        ("NULL", None),
        ("", None),
        ("'2024-01-01'", "2024-01-01"),
        ("'2024-01-01T10:00:00Z'", "2024-01-01T10:00:00Z"),
        ("2024-1-1x", "2024-1-1x"),
        ("'1:30'", "1:30"),
        ("10:3x", "10:3x"),
        ("'010'", "010"),
        ("0", 0),
        ("-0", 0),
        ("0.5", 0.5),
        ("0x1F", 31),
        ("-42", -42),
        ("+7", 7),
        ("'1_000'", "1_000"),
        ("0123abc", "0123abc"),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("'true'", "true"),
        ('"5"', "5"),
        ("!!str 5", "5"),
        ("!!int 5", 5),
        ("!!float 3", 3.0),
        ("!!bool true", True),
        ("pre-push", "pre-push"),
    ],
)
def test_core_schema_scalars(text: str, expected: object) -> None:
    value = load(f"k: {text}\n").value["k"]
    assert value == expected
    assert type(value) is type(expected)


def test_on_key_stays_a_string() -> None:
    loaded = load("local: { on: pre-push, checks: [a] }\non: x\nyes: no\n")
    assert loaded.value == {"local": {"on": "pre-push", "checks": ["a"]}, "on": "x", "yes": "no"}
    assert all(isinstance(k, str) for k in loaded.value)


def test_lines_map_paths_to_file_lines() -> None:
    loaded = load("a: 1\nchecks:\n  - id: x\n    timeoutMs: 5\n", first_line=2)
    assert loaded.lines[("a",)] == 2
    assert loaded.lines[("checks", 0, "timeoutMs")] == 5


def test_block_scalars_and_tabs_inside_them_are_text() -> None:
    value = load("run: |\n  echo a\n  \techo b\n").value
    assert value == {"run": "echo a\n\techo b\n"}


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(20)
)


@pytest.mark.parametrize(
    ("text", "fragment", "line", "column"),
    [
        ("a: &x 1\nb: *x\n", "anchor '&x' is not allowed", 1, 4),
        ("a: *x\n", "alias '*x' is not allowed", 1, 4),
        (BILLION_LAUGHS, "anchor '&a' is not allowed", 1, 4),
        ("a: 1\nb: 2\na: 3\n", "duplicate key 'a' (first defined on line 1)", 3, 1),
        ("x:\n  k: 1\n  k: 2\n", "duplicate key 'k'", 3, 3),
        ("<<: {a: 1}\n", "merge key '<<' is not allowed", 1, 1),
        ("a: !foo 1\n", "tag '!foo' is not allowed", 1, 4),
        ("a: !!python/object:os.system x\n", "is not allowed", 1, 4),
        ("a: !!set {x}\n", "tag 'tag:yaml.org,2002:set' is not allowed", 1, 4),
        ("a: !!int five\n", "'five' is not a valid !!int", 1, 4),
        ("1: x\n", "mapping key '1' is not a string", 1, 1),
        ("true: x\n", "mapping key 'true' is not a string", 1, 1),
        ("~: x\n", "mapping key '~' is not a string", 1, 1),
        ("? [a]\n: 1\n", "mapping key must be a plain string, not a list", 1, 3),
        ("a:\n\tb: 1\n", "tab character used for indentation", 2, 1),
        ("a:\n  b: 1\n\tc: 2\n", "tab character used for indentation", 3, 1),
        ("a: " + "9" * 31 + "\n", "integer with 31 digits is too large", 1, 4),
        ("a: 0x" + "f" * 31 + "\n", "too large", 1, 4),
        ("a: .inf\n", "infinity / not-a-number", 1, 4),
        ("a: -.Inf\n", "infinity / not-a-number", 1, 4),
        ("a: .nan\n", "infinity / not-a-number", 1, 4),
        ("a: 1e999\n", "overflows to infinity", 1, 4),
        ("a: 1\n---\nb: 2\n", "more than one YAML document", 2, 1),
        ('a: "x\x01"\n', "control character #x0001", 1, 6),
        ("a: [1, 2\n", "malformed YAML", 2, 1),
        # YAML 1.1 (the reference host's reader) and YAML 1.2 read these differently
        ("a: 010\n", "'010' has a leading zero", 1, 4),
        ("a: [1, -07]\n", "'-07' has a leading zero", 1, 8),
        ("a: 010.5\n", "'010.5' has a leading zero", 1, 4),
        ("a: !!int 010\n", "'010' has a leading zero", 1, 4),
        ("010: x\n", "'010' has a leading zero", 1, 1),
        ("a: 0o17\n", "'0o17' is octal to YAML 1.2 and text to YAML 1.1", 1, 4),
        ("a: 1_000\n", "'1_000' is a number to YAML 1.1 readers", 1, 4),
        ("a: 1:30\n", "'1:30' is a number to YAML 1.1 readers", 1, 4),
        ("a: 0b11\n", "'0b11' is a number to YAML 1.1 readers", 1, 4),
        ("a: 2024-01-01\n", "'2024-01-01' is a date to YAML 1.1 readers", 1, 4),
        ("a: 2024-01-01T10:00:00Z\n", "is a date to YAML 1.1 readers", 1, 4),
        ("a: 2024-1-1 10:00:00 +02:00\n", "is a date to YAML 1.1 readers", 1, 4),
    ],
)
def test_refusals_name_line_and_column(text: str, fragment: str, line: int, column: int) -> None:
    start = time.monotonic()
    with pytest.raises(YamlError) as info:
        load(text)
    assert time.monotonic() - start < 1.0
    assert fragment in str(info.value)
    assert (info.value.line, info.value.column) == (line, column)
    assert str(info.value).startswith(f"line {line}:{column}: ")
    assert "\n" not in str(info.value)


def test_line_offset_applies_to_errors() -> None:
    with pytest.raises(YamlError) as info:
        load("a: 1\na: 2\n", first_line=2)
    assert info.value.line == 3


def test_thirty_digit_integer_is_accepted() -> None:
    assert load("a: " + "9" * 30 + "\n").value["a"] == int("9" * 30)


def test_nesting_limit_block_style() -> None:
    ok = "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH - 1)) + "  " * (MAX_DEPTH - 1) + "leaf: 1\n"
    assert load(ok).value is not None
    too_deep = "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH)) + "  " * MAX_DEPTH + "leaf: 1\n"
    with pytest.raises(YamlError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        load(too_deep)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 200_000])
def test_nesting_limit_flow_style_is_fast(depth: int) -> None:
    start = time.monotonic()
    with pytest.raises(YamlError, match="nesting deeper than"):
        load("a: " + "[" * depth + "]" * depth + "\n")
    assert time.monotonic() - start < 1.0


def test_quoted_merge_key_is_an_ordinary_key() -> None:
    assert load('"<<": 1\n').value == {"<<": 1}


_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=8)
_scalars = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
_trees = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4), max_leaves=20
)


# The YAML 1.2 core schema's non-string plain scalars (spec 10.3.2), written out independently
# of the loader under test. PyYAML (YAML 1.1) leaves some of them unquoted, e.g. '0E0', which
# 1.1 reads as a string but 1.2 as the float 0.0.
_CORE_NON_STRING = re.compile(
    r"(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE"
    r"|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)?"
)


class _CoreDumper(yaml.SafeDumper):
    """PyYAML's dumper, quoting every string that YAML 1.2 would read as another type."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if _CORE_NON_STRING.fullmatch(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CoreDumper.add_representer(str, _represent_str)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_keys, _trees, min_size=1, max_size=5))
def test_round_trip_of_plain_data(tree: dict) -> None:
    """Anything written from plain data reads back identically (strings quoted where 1.2 needs it)."""
    assert load(yaml.dump(tree, Dumper=_CoreDumper, allow_unicode=True)).value == tree


@pytest.mark.parametrize("text", ["0E0", "1e5", "0x1F", "~", "Null", "+1.5"])
def test_core_schema_scalars_are_not_strings(text: str) -> None:
    assert not isinstance(load(f"k: {text}\n").value["k"], str)
