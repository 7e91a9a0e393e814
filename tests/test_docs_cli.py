"""docs/cli.md documents every command and option of the CLI, and names none that does not exist.

The truth is the click tree Typer builds from ``agentreview.cli.app.build_app()``. Each
command (``pack check`` too) has a ``## agentreview <name>`` section whose synopsis and
options table list exactly the command's options, with the real default where there is
one; every ``agentreview ...`` invocation in an example uses only real commands and
options; the JSON examples carry exactly the members the commands print.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

try:  # typer >= 0.25 vendors click; older releases depend on it.
    from typer import _click as click
except ImportError:  # pragma: no cover
    import click  # type: ignore[no-redef]

from agentreview.cli.app import build_app
from agentreview.engine.run import RunResult
from agentreview.host.refs import ResolvedRef
from agentreview.model import errors
from agentreview.verify.gate import VerifyResult
from agentreview.verify.report import result_json

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "cli.md"

HEADING = re.compile(r"^## (.+?)\s*$", re.M)
COMMAND_TITLE = re.compile(r"^agentreview((?: [a-z][a-z-]*)*)$")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
TABLE_ROW = re.compile(r"^\|([^|\n]*)\|([^|\n]*)\|([^|\n]*)\|(.*)\|\s*$", re.M)
SHELL_STOP = {"|", "||", "&&", ";", ">", ">>", "2>", "<", ")"}

Tree = dict[str, Any]  # "" (root), "run", "pack", "pack check", ... -> click command


# --------------------------------------------------------------------------- the CLI and the doc


def command_tree() -> Tree:
    """Every command of the app by its space-separated path, the root as ""."""
    tree: Tree = {}

    def walk(command: Any, path: str) -> None:
        tree[path] = command
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(build_app()), "")
    return tree


def options_of(command: Any) -> set[str]:
    """Every option spelling of a command (``--help`` is added by click at parse time, not listed)."""
    return {
        name
        for param in command.params
        if isinstance(param, click.Option)
        for name in [*param.opts, *param.secondary_opts]
    }


def doc_sections(text: str) -> Iterator[tuple[str, str]]:
    """(heading, body) for every ``## `` heading, in order."""
    matches = list(HEADING.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        yield match.group(1), text[match.end() : end]


def command_sections(text: str) -> dict[str, str]:
    """Command path -> section body, for every ``## agentreview ...`` heading."""
    out: dict[str, str] = {}
    for title, body in doc_sections(text):
        match = COMMAND_TITLE.match(title)
        if match:
            out[match.group(1).strip()] = body
    return out


def without_fences(text: str) -> str:
    return FENCE.sub("", text)


def table_options(body: str) -> dict[str, str]:
    """Option spelling -> the default cell, for every options-table row of a section
    (a row whose first cell is only backticked options, e.g. ``| `--manifest`, `-m` |``)."""
    out: dict[str, str] = {}
    for row in TABLE_ROW.finditer(without_fences(body)):
        if re.fullmatch(r"\s*`--?[A-Za-z][\w-]*`(?:,\s*`--?[A-Za-z][\w-]*`)*\s*", row.group(1)):
            for name in re.findall(r"`(--?[A-Za-z][\w-]*)`", row.group(1)):
                out[name] = row.group(3).strip()
    return out


def synopsis(body: str) -> str | None:
    """The section's first ```text block, when it starts with ``agentreview``."""
    for lang, block in FENCE.findall(body):
        if lang == "text":
            return block if block.lstrip().startswith("agentreview") else None
    return None


# --------------------------------------------------------------------------- invocations in examples


def invocation_fragments(text: str) -> Iterator[str]:
    """Every example invocation, from ``agentreview`` to the end of its line or code span.

    Shell and YAML blocks count line by line, console blocks only on ``$ `` lines, inline
    code only when it starts with ``agentreview ``. Output text is never parsed.
    """
    for lang, block in FENCE.findall(text):
        lines = block.replace("\\\n", " ").splitlines()
        if lang == "console":
            lines = [line[2:] for line in lines if line.startswith("$ ")]
        elif lang not in ("sh", "yaml"):
            continue
        for line in lines:
            for hit in re.finditer(r"(?<![^\s/])agentreview(?=\s|$)", line):
                yield line[hit.start() :]
    for span in SPAN.findall(without_fences(text)):
        if span.startswith("agentreview ") or span == "agentreview":
            yield span


def parse_invocation(fragment: str, tree: Tree) -> tuple[str | None, list[str]]:
    """The command path an invocation names and the options it passes.

    None when the word after ``agentreview`` is not a command word (``agentreview 0.1.0``,
    ``agentreview <command>: ...``): that is prose, not a call. A command word that is not a
    command comes back as its path, for the caller to report.
    """
    path, options = "", []
    for token in fragment.split()[1:]:
        if token in SHELL_STOP or token.startswith(("#", ">", "2>")):
            break
        name = token.split("=", 1)[0]
        if OPTION.fullmatch(name):
            options.append(name)
            continue
        if options or (path and not isinstance(tree[path], click.Group)):
            continue  # an option's value or an argument
        if not re.fullmatch(r"[a-z][a-z-]*", token):
            if not path:
                return None, []
            continue
        path = f"{path} {token}".strip()
        if path not in tree:
            return path, []
    return path, options


# --------------------------------------------------------------------------- the checks


def label(path: str) -> str:
    return f"agentreview {path}".strip()


def heading_problems(text: str, tree: Tree) -> list[str]:
    sections = command_sections(text)
    problems = [f"no '## {label(path)}' section" for path in tree if path not in sections]
    problems += [f"'## {label(path)}' documents a command that does not exist" for path in sections if path not in tree]
    return problems


def option_problems(text: str, tree: Tree) -> list[str]:
    """Synopsis and options table of each section against the command's real options and defaults."""
    problems: list[str] = []
    for path, body in command_sections(text).items():
        command = tree.get(path)
        if command is None:
            continue
        where = label(path)
        real = options_of(command)
        table = table_options(body)
        problems += [f"{where}: option {n} is missing from its options table" for n in sorted(real - set(table))]
        problems += [
            f"{where}: the options table names {n}, which the command does not have" for n in sorted(set(table) - real)
        ]
        shown = synopsis(body)
        if shown is None:
            problems.append(f"{where}: no ```text synopsis block starting with '{where}'")
        else:
            in_synopsis = set(OPTION.findall(shown))
            problems += [f"{where}: option {n} is missing from the synopsis" for n in sorted(real - in_synopsis)]
            problems += [
                f"{where}: the synopsis names {n}, which the command does not have" for n in sorted(in_synopsis - real)
            ]
            problems += [
                f"{where}: argument {p.name.upper()} is missing from the synopsis"
                for p in command.params
                if isinstance(p, click.Argument) and p.name.upper() not in shown
            ]
        problems += default_problems(where, command, table)
    return problems


def default_problems(where: str, command: Any, table: dict[str, str]) -> list[str]:
    """A flag's default cell says ``off``; a real default value appears in backticks in its cell."""
    problems: list[str] = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.opts[0] not in table:
            continue
        cell, name = table[param.opts[0]], param.opts[0]
        if param.is_flag and param.default is False:
            if cell != "off":
                problems.append(f"{where}: {name} is a flag that defaults to off, the table says {cell!r}")
        elif param.default is not None and f"`{param.default}`" not in cell:
            problems.append(f"{where}: {name} defaults to {param.default}, the table says {cell!r}")
    return problems


def invocation_problems(text: str, tree: Tree) -> list[str]:
    """Every example names a real command with its real options; a bare option in a section's
    prose (`--json`) is an option of that section's command."""
    problems: list[str] = []
    for fragment in invocation_fragments(text):
        path, options = parse_invocation(fragment, tree)
        if path is None:
            continue
        if path not in tree:
            problems.append(f"example '{fragment.strip()}' names a command '{label(path)}' that does not exist")
            continue
        problems += [
            f"example '{fragment.strip()}': '{label(path)}' has no option {name}"
            for name in options
            if name != "--help" and name not in options_of(tree[path])
        ]
    anywhere = set().union(*(options_of(command) for command in tree.values()))
    for title, body in doc_sections(text):
        match = COMMAND_TITLE.match(title)
        scope = match.group(1).strip() if match else None
        for span in SPAN.findall(without_fences(body)):
            first = span.split()[0]
            if not OPTION.fullmatch(first) or first == "--help":
                continue
            if scope is None and first not in anywhere:
                problems.append(f"section '{title}': `{span}` is not an option of any command")
            elif scope in tree and first not in options_of(tree[scope]):
                problems.append(f"section '{title}': `{span}` is not an option of '{label(scope)}'")
    return problems


# --------------------------------------------------------------------------- the tests: the doc is in sync


@pytest.fixture(scope="module")
def tree() -> Tree:
    return command_tree()


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_command_has_a_section_and_every_section_a_command(doc: str, tree: Tree) -> None:
    assert {"", "run", "verify", "pack", "pack check"} <= set(tree)
    assert heading_problems(doc, tree) == []


def test_every_option_is_documented_with_its_default_and_none_is_invented(doc: str, tree: Tree) -> None:
    assert option_problems(doc, tree) == []


def test_every_example_uses_real_commands_and_options(doc: str, tree: Tree) -> None:
    fragments = list(invocation_fragments(doc))
    assert len(fragments) > 30, "the invocation scanner found almost no examples; is the doc's format changed?"
    assert invocation_problems(doc, tree) == []


def test_every_exit_code_is_in_the_table(doc: str) -> None:
    body = dict(doc_sections(doc))["Exit codes"]
    rows = {int(m) for m in re.findall(r"^\| `(\d+)` \|", body, re.M)}
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert rows == codes


def test_every_environment_variable_the_core_reads_is_documented(doc: str) -> None:
    body = dict(doc_sections(doc))["Environment"]
    sources = [p for p in (ROOT / "agentreview").rglob("*.py") if "demo" not in p.relative_to(ROOT).parts]
    names = {name for path in sources for name in re.findall(r"\"(AGENTREVIEW_[A-Z_]+)\"", path.read_text())}
    # Set by the core for the children it starts, never read by it: the lane facts a reviewer gets (documented
    # in providers.md) and the prefix of the host's process marker.
    set_for_children = {"AGENTREVIEW_BASE", "AGENTREVIEW_HEAD", "AGENTREVIEW_RUBRIC", "AGENTREVIEW_CHECK_ID"}
    providers_doc = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in providers_doc for name in set_for_children)
    names -= {*set_for_children, "AGENTREVIEW_LANE_"}
    assert {"AGENTREVIEW_HOME", "AGENTREVIEW_PLUGINS", "AGENTREVIEW_DISABLE_PLUGINS"} <= names
    documented = set(re.findall(r"^\| `(AGENTREVIEW_[A-Z_]+)` \|", body, re.M))
    assert names - documented == set(), f"undocumented: {sorted(names - documented)}"
    assert documented - names == set(), f"documented but never read: {sorted(documented - names)}"


def test_every_json_example_parses(doc: str) -> None:
    blocks = [block for lang, block in FENCE.findall(doc) if lang == "json"]
    assert len(blocks) >= 9
    for block in blocks:
        json.loads(block)


def first_json(body: str) -> Any:
    return json.loads(next(block for lang, block in FENCE.findall(body) if lang == "json"))


def keys_of(value: Any) -> set[str]:
    """Top-level members of an object, or of an array's first row."""
    return set(value[0] if isinstance(value, list) else value)


def test_run_json_members_are_documented(doc: str) -> None:
    body = command_sections(doc)["run"]
    head = ResolvedRef("HEAD", "HEAD", "", "0" * 40, role="head")
    every = RunResult(
        run_id="r", status="cancelled", joined=True, error="e", superseded_by="s", refs=(head,)
    ).to_json()
    missing = [key for key in every if f'"{key}"' not in body and f"`{key}`" not in body]
    assert missing == []
    assert keys_of(first_json(body)) <= set(every)


def test_verify_json_members_are_documented(doc: str) -> None:
    body = command_sections(doc)["verify"]
    every = result_json(VerifyResult(exit_code=0, reason="verified", error="e"))
    missing = [key for key in every if f'"{key}"' not in body and f"`{key}`" not in body]
    assert missing == []
    assert keys_of(first_json(body)) <= set(every)


# --------------------------------------------------------------------------- the checker catches drift


def test_an_option_added_to_the_cli_but_not_the_doc_is_reported(doc: str, tree: Tree) -> None:
    changed = dict(tree)
    run = copy.copy(tree["run"])
    run.params = [*run.params, click.Option(["--fresh-option"], is_flag=True)]
    changed["run"] = run
    problems = option_problems(doc, changed)
    assert "agentreview run: option --fresh-option is missing from its options table" in problems
    assert "agentreview run: option --fresh-option is missing from the synopsis" in problems


def test_a_command_added_to_the_cli_but_not_the_doc_is_reported(doc: str, tree: Tree) -> None:
    changed = {**tree, "pack lint": click.Command("lint")}
    assert heading_problems(doc, changed) == ["no '## agentreview pack lint' section"]


def test_a_removed_table_row_is_reported(doc: str, tree: Tree) -> None:
    row = next(line for line in doc.splitlines() if line.startswith("| `--reindex` |"))
    problems = option_problems(doc.replace(row + "\n", ""), tree)
    assert problems == ["agentreview ledger: option --reindex is missing from its options table"]


def test_an_option_or_command_that_no_longer_exists_is_reported(doc: str, tree: Tree) -> None:
    stale = doc.replace("agentreview ledger --limit 10 ", "agentreview ledger --since 10d ", 1)
    assert stale != doc
    assert any("'agentreview ledger' has no option --since" in p for p in invocation_problems(stale, tree))
    stale = doc.replace("\n## agentreview demo\n", "\n## agentreview tour\n")
    assert set(heading_problems(stale, tree)) == {
        "no '## agentreview demo' section",
        "'## agentreview tour' documents a command that does not exist",
    }
    stale = doc.replace("| `--keep` | flag |", "| `--keep`, `--retain` | flag |")
    assert "agentreview demo: the options table names --retain, which the command does not have" in option_problems(
        stale, tree
    )
    stale = doc.replace("agentreview pack check ./review-packs", "agentreview pack lint ./review-packs")
    assert any("'agentreview pack lint' that does not exist" in p for p in invocation_problems(stale, tree))


def test_a_wrong_default_or_a_stray_option_span_is_reported(doc: str, tree: Tree) -> None:
    stale = doc.replace("| `--limit` | N, 1–500 | `50` |", "| `--limit` | N, 1–500 | `20` |")
    assert stale != doc
    assert any("--limit defaults to 50" in p for p in option_problems(stale, tree))
    stale = doc.replace("Show only this binding (", "Like `--bindings`, show only this binding (")
    assert stale != doc
    assert any("`--bindings` is not an option of 'agentreview check'" in p for p in invocation_problems(stale, tree))


# --------------------------------------------------------------------------- the JSON examples are real


REVIEW_MD = """---
kind: review
id: docs-json
target: { kind: git-range, base: main }
checks:
  - id: lint
    kind: command
    run: "true"
bindings:
  ci: { on: pull_request, checks: [lint] }
verdict:
  exportDir: .reviews
---
"""

PACK_MD = """---
kind: review-pack
id: sec
version: 1.0.0
checks:
  - id: injection
    kind: agent
    rubric: ./rubric.md
---
"""


def _cli(cwd: Path, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"agentreview {' '.join(args)} exited {proc.returncode}: {proc.stderr}"
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_json_examples_have_exactly_the_members_the_commands_print(doc: str, git_repo: Any, tmp_path: Path) -> None:
    """Each documented --json example's members (an array's first row) equal the real command's."""
    repo = git_repo(files={"REVIEW.md": REVIEW_MD, "packs/sec/REVIEW.md": PACK_MD, "packs/sec/rubric.md": "# r\n"})
    _cli(repo, "run", "--json", "--pr", "https://github.com/acme/widgets/pull/42")
    real = {
        "check": _cli(repo, "check", "--json"),
        "ledger": _cli(repo, "ledger", "--json"),
        "export": _cli(repo, "export", "--range", "main..HEAD", "--to", str(tmp_path / "a.json"), "--json"),
        "key": _cli(repo, "key", "--json"),
        "presets": _cli(repo, "presets", "--json"),
        "plugins": _cli(repo, "plugins", "--json"),
        "pack check": _cli(repo, "pack", "check", "packs/sec", "--json"),
    }
    sections = command_sections(doc)
    for path, output in real.items():
        documented = keys_of(first_json(sections[path]))
        real_keys = keys_of(output)
        assert documented == real_keys, f"agentreview {path} --json: doc {sorted(documented)}, real {sorted(real_keys)}"
