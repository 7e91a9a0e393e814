"""Every validator matches a value whole: a pattern anchored with ``$`` also matches before a final newline,
so ``"main\\n"`` or ``"review-x\\n"`` would pass for ``main`` or ``review-x`` and reach a path, git or a URL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentreview.mcp import args as mcp_args
from agentreview.mcp.args import ToolFailure
from agentreview.store.layout import LedgerError, LedgerKey, check_key

ROOT = Path(__file__).resolve().parents[1]


def test_no_validator_is_anchored_with_a_dollar() -> None:
    """Each pattern compiled from ``^...$`` in the source: ``$`` there would take a trailing newline (the YAML
    resolver's patterns excepted: it reads plain scalars, which cannot end in a newline; and a pattern over the lines
    of git's output, where ``$`` is each line's end)."""
    anchored = re.compile(r're\.(?:compile|match|search|fullmatch)\(r?"\^[^"]*\$"')
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for base in ("agentreview", "plugins")
        for path in sorted((ROOT / base).rglob("*.py"))
        if "tests" not in path.parts and path.name != "yaml_safe.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if anchored.search(line) and "\\s*$" not in line and "re.MULTILINE" not in line  # a line of many
    ]
    assert found == []


def test_a_trailing_newline_is_refused_where_a_value_names_a_path_a_run_or_a_url() -> None:
    with pytest.raises(LedgerError):
        check_key(LedgerKey("github.com/acme/w", "a" * 64 + "\n", "default", "b" * 64))
    with pytest.raises(ToolFailure):
        mcp_args.run_id("review-1234\n")
    with pytest.raises(ToolFailure):
        mcp_args.pr_ref({"provider": "github", "repo": "acme/w", "number": 1, "url": "https://github.com/x\n"})
    assert mcp_args.run_id("review-1234") == "review-1234"
