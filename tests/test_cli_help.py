"""Every ``--help`` teaches: examples, exit codes, argument help, choices, one way to write defaults,
and the commands in docs/cli.md's order.

The help is rendered by the real CLI (``run_app([..., "--help"])``); the doc is docs/cli.md.
test_docs_cli.py checks that every option is documented in its command's section; this module
checks the help pages themselves and that they agree with the doc.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_docs_cli import DOC, OPTION, command_sections, command_tree, doc_sections, label, parse_invocation

try:  # typer >= 0.25 vendors click; older releases depend on it.
    from typer import _click as click
except ImportError:  # pragma: no cover
    import click  # type: ignore[no-redef]

from agentreview.cli.app import run_app
from agentreview.cli.helptext import EXIT_MEANINGS, epilog

Tree = dict[str, Any]


@pytest.fixture(scope="module")
def tree() -> Tree:
    return command_tree()


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def help_of(path: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = run_app([*path.split(), "--help"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    return out


def block(text: str, title: str) -> list[str]:
    """The indented lines under ``title:`` up to the next blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"{title}:")
    out: list[str] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        out.append(line.strip())
    return out


def documented_codes(doc: str) -> set[int]:
    body = dict(doc_sections(doc))["Exit codes"]
    return {int(m) for m in re.findall(r"^\| `(\d+)` \|", body, re.M)}


def leaf_paths(tree: Tree) -> list[str]:
    return [path for path, command in tree.items() if path and not isinstance(command, click.Group)]


def test_commands_are_listed_in_the_order_of_docs_cli_md(
    tree: Tree, doc: str, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = block(help_of("", capsys), "Commands")
    in_help = [line.split()[0] for line in listed]
    in_doc = [path.split()[0] for path in command_sections(doc) if path and " " not in path]
    assert in_help == in_doc
    assert in_help[:4] == ["init", "check", "run", "status"]  # the order a user meets them
    # The prose list in the root section names the same commands in the same order.
    root = command_sections(doc)[""]
    prose = re.search(r"Commands, in the order a user meets them[^:]*:(.*?)\.", root, re.S)
    assert prose is not None
    assert [name.split()[0] for name in re.findall(r"`([a-z][a-z ]*)`", prose.group(1))] == in_help


@pytest.mark.parametrize("path", ["", *leaf_paths(command_tree())])
def test_every_help_has_examples_that_parse_and_documented_exit_codes(
    path: str, tree: Tree, doc: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of(path, capsys)
    examples = block(text, "Examples")
    assert 1 <= len(examples) <= 2, text
    for example in examples:
        assert label(path) in example, example  # it may follow another program's words (claude mcp add ...)
        named, options = parse_invocation(example[example.index(label(path)) :], tree)
        assert named in tree and (named == path or not path), example
        params = tree[named].params
        real = {n for p in params if isinstance(p, click.Option) for n in [*p.opts, *p.secondary_opts]}
        assert set(options) <= real, example
    codes = [int(line.split()[0]) for line in block(text, "Exit codes")]
    assert codes == sorted(codes) and {0, 64} <= set(codes), text
    assert set(codes) <= documented_codes(doc), text


def test_the_shared_exit_code_meanings_are_the_documented_set(doc: str) -> None:
    assert set(EXIT_MEANINGS) == documented_codes(doc)
    rendered = epilog(["agentreview x"], [0, (1, "invalid")])
    assert "  1   invalid" in rendered and "  64  usage error" in rendered and "  3   could not run" in rendered


@pytest.mark.parametrize("path", leaf_paths(command_tree()))
def test_every_positional_argument_has_help(path: str, tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    arguments = [p for p in tree[path].params if isinstance(p, click.Argument)]
    if not arguments:
        return
    text = help_of(path, capsys)
    shown = block(text, "Arguments")
    for argument in arguments:
        assert argument.help, f"{label(path)} {argument.name}: no help"
        assert " ".join(argument.help.split()[:4]) in " ".join(shown), text
    assert "Positional arguments:" not in text  # shown once


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("init", "--ci [github]"),
        ("init", "--hook [pre-push|none]"),
        ("run", "--annotate [github]"),
        ("verify", "--verdict [pass|block|incomplete|any]"),
        ("schema", "One of: review, review-pack, attestation."),
    ],
)
def test_choices_are_shown_as_choices(path: str, shown: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert shown in help_of(path, capsys)


@pytest.mark.parametrize("path", leaf_paths(command_tree()))
def test_defaults_are_written_one_way(path: str, tree: Tree) -> None:
    """A default is typer's ``[default: ...]``, never a hand-written "(default ...)" in the help text."""
    for param in tree[path].params:
        text = getattr(param, "help", None) or ""
        assert not re.search(r"\(default\b|\bdefault:|\(default\)", text, re.I), f"{label(path)}: {text}"


def test_a_choice_is_refused_in_one_line_naming_the_choices() -> None:
    """A missing choice argument is one line, though click lists the choices on lines of their own."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "schema"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 64 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "review, review-pack, attestation" in proc.stderr


def test_every_documented_command_option_appears_in_its_help(tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    """What the doc's section lists, the help lists too (the other direction is test_docs_cli's)."""
    for path in leaf_paths(tree):
        text = help_of(path, capsys)
        real = {n for p in tree[path].params if isinstance(p, click.Option) and not p.hidden for n in p.opts}
        assert real <= set(OPTION.findall(text)), label(path)
