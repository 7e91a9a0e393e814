"""What ``tools/list`` tells a host about each tool, read on the wire from a real ``agentreview mcp``:
a human title, annotations that say the truth (hosts approve calls by them: a read-only tool
runs without asking), and a description whose first sentence stands alone (a host that defers
its tools shows the model only that line)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp_wire import Wire
from reviewrepo import Repo, feature_repo

pytestmark = pytest.mark.timeout(120)

# readOnly, destructive, idempotent, openWorld
HINTS = {
    "review_run": (False, False, False, False),
    "review_status": (True, False, True, False),
    "review_cancel": (False, False, True, False),
    "review_ledger": (True, False, True, False),
    "review_export": (False, False, True, False),
    "review_pr": (False, False, False, True),
}
READ_ONLY_LATER = {"review_presets"}  # read-only whenever it is served


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    repo: Repo = feature_repo(tmp_path_factory.mktemp("tools"))
    with Wire(repo.env, Path(repo.path)) as wire:
        wire.initialize()
        listed = wire.request("tools/list", {})["result"]["tools"]
    return {tool["name"]: tool for tool in listed}


def test_every_tool_has_a_title_and_truthful_annotations(tools: dict[str, dict[str, Any]]) -> None:
    assert set(HINTS) <= set(tools)
    for name, tool in tools.items():
        assert tool.get("title") and tool["title"][0].isupper() and "_" not in tool["title"], name
        hints = tool["annotations"]
        assert hints["title"] == tool["title"], name
        if name in READ_ONLY_LATER:
            assert hints["readOnlyHint"] is True and hints["openWorldHint"] is False, name
            continue
        got = (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"], hints["openWorldHint"])
        assert got == HINTS[name], name


def test_first_sentence_stands_alone_and_says_when_to_call(tools: dict[str, dict[str, Any]]) -> None:
    for name, tool in tools.items():
        first = re.split(r"(?<=\.)\s", tool["description"], maxsplit=1)[0]
        assert first.startswith("Call "), (name, first)
        assert len(first) <= 240, (name, len(first))
        assert not re.match(r"(?i)call (it|this)\b", first), (name, first)
