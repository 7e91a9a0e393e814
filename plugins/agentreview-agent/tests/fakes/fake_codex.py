"""A stand-in ``codex`` CLI that replays recorded Codex 0.171.0 output (reviewer-clis.md section 6).

A real model cannot be made to fail auth, hit a quota, reconnect forever or change a file on demand,
so this replays them. It emulates config discovery (an MCP server in ``$CODEX_HOME/config.toml``
without ``--ignore-user-config`` shows as an ``mcp_tool_call``) and records every invocation.
Scenario: ``control("scenario")`` (default ``success``); verdict: ``control("verdict")`` (JSON).
"""

import os
import sys
import time
import tomllib

from fakelib import arg, control, emit, print_help, record, top_listing

HELP = """Run Codex non-interactively
Usage: codex exec [OPTIONS] [PROMPT]
  -c, --config <key=value>  --enable <FEATURE>  --disable <FEATURE>  -m, --model <MODEL>
  -s, --sandbox <SANDBOX_MODE>  -C, --cd <DIR>  --skip-git-repo-check  --ephemeral  --ignore-user-config
  --ignore-rules  --output-schema <FILE>  --json  -o, --output-last-message <FILE>
"""
FEATURES = ["hooks", "unified_exec", "shell_tool", "multi_agent", "goals", "apps", "plugins", "view_image"]


def main():
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print("codex-cli 0.171.0")
        return 0
    if argv[:2] == ["features", "list"]:
        for name in FEATURES:
            print(f"{name:40} stable             true")
        return 0
    if "--help" in argv:
        print_help(HELP)
        return 0
    prompt = sys.stdin.read()
    home = os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
    if not os.path.isdir(home):
        print(f"Error finding codex home: CODEX_HOME points to {home!r}, but that path does not exist", file=sys.stderr)
        return 1
    config = {}
    if "--ignore-user-config" not in argv and os.path.exists(os.path.join(home, "config.toml")):
        with open(os.path.join(home, "config.toml"), "rb") as fh:
            config = tomllib.load(fh)
    record(argv=argv, cwd=os.getcwd(), stdin=prompt, home=home, listing=top_listing(home))
    out = arg(argv, "-o", "--output-last-message")
    if out:
        open(out, "w").close()  # the real CLI creates it empty at start
    scenario = control("scenario", "success")
    verdict = control("verdict", '{"decision": "approve", "summary": "ok", "findings": []}')
    emit({"type": "thread.started", "thread_id": "01a2293e-fake"})
    emit(
        {
            "type": "item.completed",
            "item": {
                "id": "item_0",
                "type": "error",
                "message": "Model metadata for `gpt-5` not found. Defaulting to fallback metadata; "
                "this can degrade performance and cause issues.",
            },
        }
    )
    if scenario == "auth":
        url = "http://127.0.0.1:18401/v1/responses"
        emit(
            {
                "type": "error",
                "message": f"Reconnecting... 5/5 (unexpected status 401 Unauthorized: invalid x-api-key, url: {url})",
            }
        )
        emit({"type": "error", "message": f"unexpected status 401 Unauthorized: invalid x-api-key, url: {url}"})
        emit(
            {
                "type": "turn.failed",
                "error": {"message": f"unexpected status 401 Unauthorized: invalid x-api-key, url: {url}"},
            }
        )
        return 1
    if scenario == "quota":
        msg = "You've hit your usage limit. Upgrade to Pro or try again later (429 Too Many Requests)"
        emit({"type": "turn.failed", "error": {"message": msg}})
        return 1
    if scenario == "hang":  # offline: reconnects forever
        while True:
            emit(
                {
                    "type": "error",
                    "message": "Reconnecting... waiting for network (Connection failed: error sending request)",
                }
            )
            time.sleep(0.2)
    emit({"type": "turn.started"})
    if config.get("mcp_servers"):
        name = next(iter(config["mcp_servers"]))
        emit(
            {
                "type": "item.completed",
                "item": {
                    "id": "item_m",
                    "type": "mcp_tool_call",
                    "server": name,
                    "tool": "run",
                    "arguments": {},
                    "status": "completed",
                },
            }
        )
    if scenario == "tool_breach":
        emit(
            {
                "type": "item.completed",
                "item": {
                    "id": "item_f",
                    "type": "file_change",
                    "changes": [{"path": "app.py", "kind": "update"}],
                    "status": "failed",
                },
            }
        )
    if scenario == "drift":  # harmless noise the audit must tolerate
        emit({"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion)"})
        emit(
            {
                "type": "item.completed",
                "item": {
                    "id": "item_w",
                    "type": "error",
                    "message": "Falling back from WebSockets to HTTPS transport. stream disconnected",
                },
            }
        )
        emit(
            {
                "type": "item.completed",
                "item": {
                    "id": "item_c",
                    "type": "command_execution",
                    "command": "/bin/bash -lc 'git diff'",
                    "aggregated_output": "",
                    "exit_code": 0,
                    "status": "completed",
                },
            }
        )
        emit({"type": "turn.plan_updated", "plan": []})
    if scenario == "new_item":  # an item type a later Codex adds (drift, not a breach)
        emit({"type": "item.completed", "item": {"id": "item_p", "type": "plan_update", "steps": ["read the diff"]}})
    if scenario == "declined":  # a command the approval policy declined
        emit(
            {
                "type": "item.completed",
                "item": {"id": "item_d", "type": "command_execution", "command": "/bin/bash -lc 'rm -rf x'",
                         "aggregated_output": "", "exit_code": None, "status": "declined"},
            }
        )  # fmt: skip
    if scenario == "unknown_item":
        emit({"type": "item.completed", "item": {"id": "item_u", "type": "collab_tool_call", "tool": "spawn"}})
    if scenario == "malformed":
        verdict = "P1 src/app.py:12 user input reaches eval() | validate it first"
    emit({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": verdict}})
    emit(
        {
            "type": "turn.completed",
            "usage": {
                "input_tokens": 10,
                "cached_input_tokens": 0,
                "cache_write_input_tokens": 0,
                "output_tokens": 5,
                "reasoning_output_tokens": 0,
            },
        }
    )
    if out:
        with open(out, "w") as fh:
            fh.write(verdict)
    return 0


sys.exit(main())
