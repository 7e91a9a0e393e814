"""Driving real agent hosts (Claude Code, Codex, OpenCode) against ``agentreview mcp``.

Each host runs unchanged with ``agentreview mcp`` as its MCP server; its model is the scripted server of
the agent-lane tests (``model_server.py``, on 127.0.0.1), speaking the host's API. The scripted model
(:class:`Chain`) calls review_run, then review_status, review_ledger and review_export, each with what
the previous tool result said (the runId comes only from review_run's result), and finally answers with
the runId, verdict and export path it read. It reads every tool result from the request the host sends
next, so a chain that completes proves the host relayed each call and handed each result back to the
model. The host's own side requests (titles, summaries: no tools offered) get a short text.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "agentreview-agent" / "tests"))
import reviewer_clis  # noqa: E402
from model_server import ModelServer, Reply  # noqa: E402

__all__ = ["STEPS", "Chain", "ModelServer", "Reply", "assert_chain", "codex_output", "documented", "host_binary",
           "host_env", "releases", "review_repo", "server_command"]  # fmt: skip

STEPS = ("review_run", "review_status", "review_ledger", "review_export")
BLOCKING = manifest(
    "  - id: ok\n    kind: command\n    run: 'true'\n"
    "  - id: lint\n    kind: command\n    run: 'echo src/app.txt:1: trailing spaces; exit 1'\n",
    extra="verdict: { exportDir: .reviews }\n",
)
# what a host's own environment may carry that would point it (or the server) elsewhere than the test's
FOREIGN = ("AGENTREVIEW_", "AGENTPROTO_", "ANTHROPIC_", "CLAUDE", "CODEX_", "OPENAI_", "OPENCODE", "XDG_", "MCP_")


def releases(cli: str) -> list[str]:
    """The sets (``pinned``, ``newest``) that install a distinct release of ``cli``: each is driven once."""
    return [r.set_name for r in reviewer_clis.releases() if r.cli == cli]


def host_binary(cli: str, set_name: str = "pinned") -> str:
    """The installed launcher of ``cli`` in ``set_name`` (scripts/install-reviewer-clis), else a skip."""
    found = reviewer_clis.binary(cli, set_name)
    if not found:
        pytest.skip(reviewer_clis.missing(f"{set_name} {cli}"))
    return found


def server_command() -> str:
    """The ``agentreview`` script of this interpreter's environment: what a host is told to start."""
    return str(Path(sys.executable).parent / "agentreview")


def review_repo(tmp_path: Path) -> tuple[Repo, str]:
    """A feature branch whose REVIEW.md blocks (lane ``lint`` fails) and its head sha."""
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    repo.commit("initial", **{"README.md": "hello\n"})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("add review", **{"REVIEW.md": BLOCKING})
    return repo, repo.commit("feature work", **{"src__app.txt": "v1  \n"})


def host_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment a host runs in: this one without any host's or agentreview's own settings, HOME and
    the XDG folders under ``tmp_path`` (so no user config is read or written), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
    home = tmp_path / "userhome"
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_CACHE_HOME=str(home / ".cache"))  # fmt: skip
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def documented(host: str, lang: str) -> str:
    """The ``lang`` code block docs/cli.md shows for ``host`` (the first after the paragraph that starts
    with the host's name, under "Adding it to an agent"): each host test configures its host with it."""
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text[text.index("### Adding it to an agent") :]
    found = re.search(rf"\n{re.escape(host)}[ ,]", section)
    assert found, f"docs/cli.md shows no configuration for {host}"
    after = section[found.start() :]
    start = after.index(f"```{lang}\n") + len(lang) + 4
    return after[start : after.index("```", start)]


def _text(content: Any) -> str:
    """A tool result's content as text: a string, or the text of its content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(part.get("text", "") if isinstance(part, dict) else part) for part in content)
    return ""


def offered(api: str, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Name -> declaration of each tool the host offers the model in this request."""
    tools = body.get("tools") or []
    # a Responses API namespace groups tools (Codex: one per MCP server): its tools by their own names
    tools = [inner for t in tools for inner in (t.get("tools") or [] if t.get("type") == "namespace" else [t])]
    if api == "chat":
        return {t["function"]["name"]: t["function"] for t in tools if isinstance(t.get("function"), dict)}
    return {t["name"]: t for t in tools if isinstance(t, dict) and t.get("name")}


def completed_calls(api: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool name, result text) of every tool call the conversation holds a result for, in order."""
    names: dict[str, str] = {}
    results: list[tuple[str, str]] = []
    if api == "anthropic":
        for message in body.get("messages") or []:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
                elif block.get("type") == "tool_result":
                    results.append((block["tool_use_id"], _text(block.get("content"))))
    elif api == "responses":
        for item in body.get("input") or []:
            if item.get("type") == "function_call":
                names[item["call_id"]] = item["name"]
            elif item.get("type") == "function_call_output":
                output = item.get("output")
                results.append((item["call_id"], _text(output.get("content") if isinstance(output, dict) else output)))
    else:
        for message in body.get("messages") or []:
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
            if message.get("role") == "tool":
                results.append((message["tool_call_id"], _text(message.get("content"))))
    return [(names.get(call_id, ""), text) for call_id, text in results]


def codex_output(text: str) -> str:
    """The tool's text from Codex's framing of an MCP result (``Wall time: 1.02 seconds\nOutput:\n<text>``)."""
    head, sep, rest = text.partition("\nOutput:\n")
    return rest if sep and head.startswith("Wall time:") else text


@dataclass
class Chain:
    """The scripted model: review_run -> review_status -> review_ledger -> review_export, then an answer.

    ``name`` maps a tool (``review_run``) to what the host calls it (``mcp__agentreview__review_run``).
    ``seen`` records, per step, the JSON of the result the model read for it; ``offered`` the declaration
    of each tool the host showed the model; ``searched`` the tools the model had to ask the host's tool
    search for (a host that defers MCP tools shows only their names until the model searches for them).
    """

    name: dict[str, str]
    cwd: Path
    requester: str
    search_tool: str | None = None  # the host's tool search (Claude Code's ToolSearch), when it defers MCP tools
    namespace: str | None = None  # the Responses API namespace the host puts the tools in (Codex)
    unwrap: Callable[[str], str] = lambda text: text  # the tool's own text from the host's framing of it
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    offered: dict[str, dict[str, Any]] = field(default_factory=dict)
    searched: list[str] = field(default_factory=list)  # the tools the model asked the tool search for

    def answer(self) -> str:
        run, export = self.seen["review_run"], self.seen["review_export"]
        return f"Review {run['runId']}: verdict {run['verdict']}, exported to {export['path']}."

    def __call__(self, api: str, body: dict[str, Any]) -> Reply:
        tools = offered(api, body)
        ours = {host: short for short, host in self.name.items()}
        if not tools:
            return Reply(text="Review request")  # the host's side requests: titles and the like
        self.offered.update({ours[n]: t for n, t in tools.items() if n in ours})
        done = completed_calls(api, body)
        results = [(ours[called], text) for called, text in done if called in ours]
        for step, text in results:
            try:
                self.seen[step] = json.loads(self.unwrap(text))
            except ValueError:  # the host's own refusal, or an error line: the chain stops there
                self.seen[step] = {"notJson": text}
                return Reply(text=f"{step} failed: {text}")
        if len(results) == len(STEPS):
            return Reply(text=self.answer())
        step = STEPS[len(results)]
        if self.search_tool and self.name[step] not in tools and self.name[step] not in self.searched:
            # the tool is deferred: ask for it by name, as the host's ToolSearch description says (once: a
            # search that did not load it leaves the call to fail with the host's own error)
            self.searched.append(self.name[step])
            return Reply(tool=self.search_tool, tool_input={"query": f"select:{self.name[step]}", "max_results": 5})
        return Reply(tool=self.name[step], tool_input=self.arguments(step), namespace=self.namespace)

    def arguments(self, step: str) -> dict[str, Any]:
        if step == "review_run":
            return {"cwd": str(self.cwd), "requesterSessionId": self.requester}
        if step == "review_ledger":
            return {"cwd": str(self.cwd), "requesterSessionId": self.requester}
        return {"runId": self.seen["review_run"]["runId"]}  # only the first result knows it


def assert_chain(chain: Chain, repo: Repo, head: str, final: str) -> None:
    """The chain completed through the host, each result reached the model, and the review is real."""
    assert set(chain.seen) == set(STEPS), (final, chain.seen)
    run, status, ledger, export = (chain.seen[step] for step in STEPS)
    # review_run waited for the blocking review; review_status answered the same run
    assert run["status"] == "done" and run["verdict"] == "block", run
    assert [lane["id"] for lane in run["lanes"] if lane["status"] != "pass"] == ["lint"], run
    assert status["runId"] == run["runId"] and status["verdict"] == "block", status
    # review_ledger lists it, review_export wrote it where the model was told
    assert [row["runId"] for row in ledger["attestations"]] == [run["runId"]], ledger
    assert export["runId"] == run["runId"] and export["verdict"] == "block", export
    assert Path(export["path"]).parent == repo.path / ".reviews", export
    exported = json.loads(Path(export["path"]).read_text())
    assert exported["target"]["headSha"] == head and exported["runId"] == run["runId"], exported
    # the ledger outside the host agrees, and the host passed the model's answer through
    rows = json.loads(subprocess.run([*AGENTREVIEW, "ledger", "--json", "--requester", chain.requester],
                                     env=repo.env, capture_output=True, text=True, timeout=120).stdout)  # fmt: skip
    assert [(r["runId"], r["headSha"], r["verdict"]) for r in rows] == [(run["runId"], head, "block")], rows
    assert chain.answer() in final, final
