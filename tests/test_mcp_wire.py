"""JSON-RPC exactly, on the raw bytes of a real ``agentreview mcp`` over stdio (no SDK client in
between): every line gets the answer JSON-RPC and MCP prescribe, the capabilities are the same
under every protocol version the server accepts, arguments are as strict as the advertised
schema (one line naming the argument when not), and every reply's structuredContent validates
against its tool's outputSchema."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp_wire import CLIENT, Wire
from reviewrepo import Repo, feature_repo, manifest
from test_mcp import PASSING, GitHubStub, start_feature

pytestmark = pytest.mark.timeout(300)

CAPABILITIES = {"logging": {}, "tools": {"listChanged": False}}
HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
NO_RUN = "review-00000000-0000-4000-8000-000000000000"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return feature_repo(tmp_path)


def wire(repo: Repo, env: dict[str, str] | None = None) -> Wire:
    return Wire(env or repo.env, repo.home.parent)


def error_of(answer: dict[str, Any], code: int, request_id: Any) -> str:
    """The error's message, asserting its code and id (and that it is one line)."""
    assert answer.get("id", "absent") == request_id, answer
    assert "result" not in answer and answer["error"]["code"] == code, answer
    message = answer["error"]["message"]
    assert message and "\n" not in message, answer
    return str(message)


def test_lines_that_are_not_one_request_are_answered_with_id_null(repo: Repo) -> None:
    with wire(repo) as server:
        for line, code in [
            (b"not json", -32700),
            (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
            (b"\xff\xfe{}", -32700),
            (b"[1,2,3]", -32600),
            (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),
            (b"42", -32600),
            (b'"initialize"', -32600),
            (b"null", -32600),
            (b"[" * 100_000 + b"]" * 100_000, -32700),  # past the recursion limit: a parse error, not a crash
        ]:
            server.send(line)
            error_of(server.receive(), code, None)
        # a request whose id is no id (null, a bool, an object) cannot be answered by id
        for bad_id in (None, True, {"n": 1}):
            server.send({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
            error_of(server.receive(), -32600, None)
        server.send({"jsonrpc": "1.0", "id": 5, "method": "ping"})
        assert "2.0" in error_of(server.receive(), -32600, 5)
        server.send({"jsonrpc": "2.0", "id": 6, "method": 7})
        error_of(server.receive(), -32600, 6)
        # and it still serves
        assert server.initialize()["capabilities"] == CAPABILITIES


def test_lifecycle_before_and_after_initialize(repo: Repo) -> None:
    with wire(repo) as server:
        before = error_of(server.request("tools/list", {}), -32600, 1)
        assert "before initialize" in before and "send initialize first" in before
        assert server.request("ping")["result"] == {}  # ping is allowed before initialize
        error_of(server.request("tools/call", {"name": "review_ledger", "arguments": {}}), -32600, 3)
        error_of(server.request("no/such/method"), -32601, 4)  # unknown is unknown, initialized or not
        result = server.initialize("2025-11-25")
        assert result["protocolVersion"] == "2025-11-25" and result["serverInfo"]["name"] == "agentreview"
        assert result["capabilities"] == CAPABILITIES
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT}
        again = server.request("initialize", hello)
        assert "already" in error_of(again, -32600, server.next_id)
        names = {tool["name"] for tool in server.request("tools/list", {})["result"]["tools"]}
        assert {"review_run", "review_status", "review_ledger"} <= names
        for method in ("prompts/list", "resources/list", "resources/templates/list", "completion/complete",
                       "no/such/method"):  # fmt: skip
            assert method in error_of(server.request(method, {}), -32601, server.next_id)
        server.send({"jsonrpc": "2.0", "method": "notifications/no_such_thing"})
        assert server.silent(1.0)  # a notification is never answered
        assert server.request("ping")["result"] == {}


def test_unknown_tool_and_malformed_call_are_invalid_params(repo: Repo) -> None:
    with wire(repo) as server:
        server.initialize()
        text = error_of(server.call("no_such_tool", {}), -32602, server.next_id)
        assert "no_such_tool" in text and "review_run" in text
        no_name = server.request("tools/call", {"arguments": {}})
        assert "name" in error_of(no_name, -32602, server.next_id)
        not_object = server.request("tools/call", {"name": "review_ledger", "arguments": [1]})
        assert "object" in error_of(not_object, -32602, server.next_id)
        assert server.call("review_ledger", {})["result"]["structuredContent"] == {"total": 0, "attestations": []}


STRICT = [
    ("review_run", {"cwd": "{repo}", "wait": "yes"}, "review_run: argument 'wait' must be true or false, not \"yes\""),
    ("review_run", {"cwd": "{repo}", "wait": 0}, "review_run: argument 'wait' must be true or false, not 0"),
    ("review_run", {"cwd": "{repo}", "nocache": "true"}, "argument 'nocache' must be true or false"),
    ("review_run", {"cwd": "{repo}", "waitt": True}, "review_run has no argument 'waitt'; the arguments are base, "),
    ("review_run", {"wait": False}, "review_run: argument 'cwd' is required: Absolute path of the repository"),
    ("review_run", {"cwd": ["{repo}"]}, "review_run: argument 'cwd' must be a string, not ["),
    ("review_run", {"cwd": "{repo}", "pr": "https://github.com/a/b/pull/1"},
     "argument 'pr' must be an object {number, provider, repo, url} (or left out)"),
    ("review_run", {"cwd": "{repo}", "pr": {"provider": "github", "repo": "a/b", "number": "1", "url": "https://x"}},
     "review_run: argument 'pr.number' must be an integer of at least 1, not \"1\""),
    ("review_run", {"cwd": "{repo}", "pr": {"provider": "github", "repo": "a/b", "url": "https://x"}},
     "review_run: argument 'pr.number' is required"),
    ("review_run", {"cwd": "{repo}", "pr": {"provider": "github", "repo": "a/b", "number": 1, "url": "https://x",
                                             "draft": True}},
     "review_run: argument 'pr' has no member 'draft'; its members are number, provider, repo, url"),
    ("review_ledger", {"limit": "5"}, "review_ledger: argument 'limit' must be an integer from 1 to 500, not \"5\""),
    ("review_ledger", {"limit": 5.5}, "argument 'limit' must be an integer from 1 to 500, not 5.5"),
    ("review_ledger", {"includeRunning": 1}, "argument 'includeRunning' must be true or false, not 1"),
    ("review_ledger", {"subtreee": "src"}, "review_ledger has no argument 'subtreee'"),
    ("review_status", {"runId": 12}, "review_status: argument 'runId' must be a string, not 12"),
    ("review_export", {"runId": NO_RUN, "outPath": 5}, "argument 'outPath' must be a string (or left out), not 5"),
]  # fmt: skip


def test_arguments_are_as_strict_as_the_schema_one_line_naming_the_argument(repo: Repo) -> None:
    start_feature(repo)
    with wire(repo) as server:
        server.initialize()
        for tool, arguments, expected in STRICT:
            arguments = {k: (str(repo.path) if v == "{repo}" else v) for k, v in arguments.items()}
            result = server.call(tool, arguments)["result"]
            text = result["content"][0]["text"]
            assert result["isError"] is True and expected in text, (tool, arguments, text)
            assert "\n" not in text and "pydantic" not in text and "validation error" not in text, text
        assert server.call("review_ledger", {"limit": 5})["result"]["isError"] is False
    assert repo.ledger_files() == []  # nothing refused ever started a review
    assert not (repo.home / "reviews" / "runs").exists() or not list((repo.home / "reviews" / "runs").iterdir())


def test_capabilities_are_the_same_under_every_protocol_version(repo: Repo) -> None:
    for version in HANDSHAKE_VERSIONS:
        with wire(repo) as server:
            result = server.initialize(version)
            assert (result["protocolVersion"], result["capabilities"]) == (version, CAPABILITIES)
    with wire(repo) as server:  # 2026-07-28: no handshake, server/discover advertises
        discovered = server.request("server/discover", {"_meta": ENVELOPE})["result"]
        assert MODERN in discovered["supportedVersions"] and discovered["capabilities"] == CAPABILITIES
        listed = server.request("tools/list", {"_meta": ENVELOPE})["result"]
        assert {"review_run", "review_ledger"} <= {tool["name"] for tool in listed["tools"]}
        unknown = server.request("tools/call", {"name": "nope", "arguments": {}, "_meta": ENVELOPE})
        error_of(unknown, -32602, server.next_id)
        bad = server.request("tools/call", {"name": "review_ledger", "arguments": {"limit": "5"}, "_meta": ENVELOPE})
        assert bad["result"]["isError"] is True and bad["result"]["resultType"] == "complete", bad
        error_of(server.request("prompts/list", {"_meta": ENVELOPE}), -32601, server.next_id)


def waiting_run(server: Wire, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A waiting ``review_run`` with a progress token: its result, and every notification sent before it."""
    server.next_id += 1
    request_id = server.next_id
    params = {"name": "review_run", "arguments": arguments, "_meta": {"progressToken": "p-1"}}
    server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    sent: list[dict[str, Any]] = []
    deadline = time.monotonic() + 120
    while True:
        message = server.receive(max(0.1, deadline - time.monotonic()))
        if "method" not in message and message.get("id") == request_id:
            return message["result"], sent
        sent.append(message)


def test_log_messages_are_advertised_and_set_level_filters_them(repo: Repo) -> None:
    """The server sends notifications/message, so it advertises ``logging`` and serves
    ``logging/setLevel``: below the level set, no log message reaches the client (progress still does)."""
    start_feature(repo)
    with wire(repo) as server:
        assert server.initialize()["capabilities"]["logging"] == {}
        bad = error_of(server.request("logging/setLevel", {"level": "loud"}), -32602, server.next_id)
        assert "'loud'" not in bad and '"loud"' in bad and "warning" in bad, bad
        assert server.request("logging/setLevel", {"level": "warning"})["result"] == {}
        result, sent = waiting_run(server, {"cwd": str(repo.path)})
        assert result["structuredContent"]["status"] == "done", result
        methods = [message["method"] for message in sent]
        # a run that ends done logs at info only: filtered out, while its progress still arrives
        assert "notifications/message" not in methods and "notifications/progress" in methods, sent
        assert server.request("logging/setLevel", {"level": "info"})["result"] == {}
        result, sent = waiting_run(server, {"cwd": str(repo.path), "nocache": True})
        logs = [message["params"] for message in sent if message["method"] == "notifications/message"]
        run_id = result["structuredContent"]["runId"]
        assert logs and logs[0]["data"]["event"] == "run_started", logs
        assert logs[-1]["data"] == {"runId": run_id, "event": "run_finished", "status": "done",
                                    "message": f"review {run_id}: done (pass)"}  # fmt: skip
        assert {log["level"] for log in logs} == {"info"} and {log["logger"] for log in logs} == {"agentreview"}
    with wire(repo) as server:  # 2026-07-28: the method is gone (a request's _meta log level opts in)
        server.request("server/discover", {"_meta": ENVELOPE})
        gone = error_of(server.request("logging/setLevel", {"level": "info", "_meta": ENVELOPE}), -32601,
                        server.next_id)  # fmt: skip
        assert "io.modelcontextprotocol/logLevel" in gone, gone


class Checked:
    """Calls tools on a server and validates every reply's structuredContent against the outputSchema
    the server advertised for that tool; counts what it validated, per tool and shape."""

    def __init__(self, server: Wire):
        self.server = server
        tools = server.request("tools/list", {})["result"]["tools"]
        self.validators = {tool["name"]: Draft202012Validator(tool["outputSchema"]) for tool in tools}
        for tool in tools:
            Draft202012Validator.check_schema(tool["outputSchema"])
            assert tool["outputSchema"]["type"] == "object", tool["name"]
        self.seen: set[tuple[str, bool]] = set()

    def __call__(self, tool: str, arguments: dict[str, Any], *, error: bool = False) -> dict[str, Any]:
        result = self.server.call(tool, arguments)["result"]
        assert result["isError"] is error, result
        content = result.get("structuredContent")
        if content is None:  # an error with no structured reply (a refused argument): text only
            assert error, result
            return {}
        problems = [e.message for e in self.validators[tool].iter_errors(content)]
        assert problems == [], (tool, content, problems)
        self.seen.add((tool, error))
        return dict(content)


def until_settled(check: Checked, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        view = check("review_status", {"runId": run_id})
        if view["status"] != "running":
            return view
        assert time.monotonic() < deadline, view
        time.sleep(0.2)


def test_every_reply_validates_against_its_tools_output_schema(repo: Repo) -> None:
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    start_feature(repo)
    with wire(repo) as server:
        server.initialize()
        check = Checked(server)
        cwd = str(repo.path)
        started = check("review_run", {"cwd": cwd, "wait": False})
        assert started["status"] == "running"
        done = until_settled(check, started["runId"])
        assert done["status"] == "done" and done["verdict"] == "pass"
        check("review_run", {"cwd": cwd})  # waiting, answered from the ledger
        ledger = check("review_ledger", {"cwd": cwd, "includeRunning": True})
        assert ledger["total"] == 1
        check("review_export", {"runId": started["runId"]})
        check("review_cancel", {"runId": NO_RUN})
        check("review_cancel", {"runId": started["runId"]})  # already done: cancelled false
        # a review that cannot run is a failed view, an error result with the same shape
        repo.commit("break review", **{"REVIEW.md": "---\nkind: review\nid: demo\nchecks: nonsense\n---\n"})
        failed = check("review_run", {"cwd": cwd}, error=True)
        assert failed["status"] == "failed"
        repo.commit("slow review", **{"REVIEW.md": manifest("  - id: slow\n    kind: command\n    run: 'sleep 120'\n")})
        slow = check("review_run", {"cwd": cwd, "wait": False})
        deadline = time.monotonic() + 60
        while not any(row.get("status") == "running" for row in
                      check("review_ledger", {"cwd": cwd, "includeRunning": True})["attestations"]):  # fmt: skip
            assert time.monotonic() < deadline, "the slow review was never listed as running"
            time.sleep(0.2)
        assert check("review_cancel", {"runId": slow["runId"]})["runId"] == slow["runId"]
        check("review_status", {"runId": slow["runId"]})
    assert {tool for tool, _ in check.seen} >= {"review_run", "review_status", "review_ledger", "review_export",
                                               "review_cancel"}  # fmt: skip
    assert ("review_run", True) in check.seen


def test_review_pr_replies_validate_against_its_output_schema(repo: Repo) -> None:
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    head = start_feature(repo, PASSING)
    run_id = repo.run_json(expect=0)["runId"]
    stub = GitHubStub(head, "t0ken")
    env = {k: v for k, v in repo.env.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    try:
        with wire(repo, {**env, "GITHUB_API_URL": stub.url, "GH_TOKEN": "t0ken"}) as server:
            server.initialize()
            check = Checked(server)
            linked = check("review_pr", {"runId": run_id})
            assert linked["ok"] is True and linked["pr"]["number"] == 7
            refused = check("review_pr", {"prUrl": "https://example.com/x"}, error=True)
            assert refused["ok"] is False and refused["error"]["code"]
    finally:
        stub.close()


def test_the_server_answers_a_last_line_then_exits_when_the_client_closes_stdin(repo: Repo) -> None:
    """The client writes a last line and closes stdin at once (the MCP stdio shutdown): its answer still
    arrives (the filter relays everything before the process ends), and the server exits 0."""
    with wire(repo) as server:
        server.initialize()
        server.send(b"not json")
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        error_of(server.receive(), -32700, None)
        assert server.proc.wait(timeout=60) == 0
