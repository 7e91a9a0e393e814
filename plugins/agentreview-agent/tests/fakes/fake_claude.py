"""A stand-in ``claude`` CLI that replays recorded Claude Code 2.1.197 output (reviewer-clis.md section 6).

A real model cannot be made to fail auth, hit a quota, breach a tool or drift its init on demand, so
this replays them. It emulates how the real CLI finds its configuration (``mcpServers``,
``permissions.defaultMode``) so a test can prove what the provider's flags keep out, and records
every invocation. Scenario: ``control("scenario")`` (default ``success``); verdict: ``control("verdict")``.
"""

import json
import os
import sys
import time

from fakelib import arg, control, emit, print_help, record

HELP = """Usage: claude [options] [prompt]
  --add-dir <directories...>  --disable-slash-commands  --json-schema <schema>  --mcp-config <configs...>
  --model <model>  --no-session-persistence  --output-format <format>  --permission-mode <mode>
  -p, --print  --safe-mode  --setting-sources <sources>  --strict-mcp-config  --tools <tools...>  --verbose
"""


def listing(directory):
    out = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, directory)
            out[rel] = (
                ("link:" + os.readlink(path)) if os.path.islink(path) else ("dir" if os.path.isdir(path) else "file")
            )
    return out


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def _load_json(path):
    text = _read(path)
    return json.loads(text) if text else {}


def main():
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print("2.1.197 (Claude Code)")
        return 0
    if "--help" in argv:
        print_help(HELP)
        return 0
    prompt = sys.stdin.read()
    home = os.path.expanduser("~")
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    settings = {}
    if arg(argv, "--setting-sources") != "":
        settings = _load_json(os.path.join(config_dir, "settings.json"))
    mcp = {}
    if "--strict-mcp-config" not in argv:
        mcp.update(settings.get("mcpServers", {}))
        mcp.update(_load_json(os.path.join(home, ".claude.json")).get("mcpServers", {}))
    mcp.update(json.loads(arg(argv, "--mcp-config", default="{}")).get("mcpServers", {}))
    record(
        argv=argv,
        cwd=os.getcwd(),
        stdin=prompt,
        config_dir=config_dir,
        config_listing=listing(config_dir) if os.path.isdir(config_dir) else None,
        work_listing=sorted(os.listdir(os.path.dirname(config_dir))),
        diff_text=_read(os.path.join(os.path.dirname(config_dir), "range.diff")),
    )
    scenario = control("scenario", "success")
    tools = [t for t in arg(argv, "--tools", default="Bash,Edit,Read,Write").split(",") if t]
    if "--json-schema" in argv:
        tools.append("StructuredOutput")
    mode = arg(argv, "--permission-mode") or settings.get("permissions", {}).get("defaultMode", "default")
    init = {
        "type": "system",
        "subtype": "init",
        "cwd": os.getcwd(),
        "session_id": "1ed4-fake",
        "tools": tools,
        "mcp_servers": [{"name": n, "status": "connected"} for n in mcp],
        "model": "claude-opus-4-8[1m]",
        "permissionMode": mode,
        "slash_commands": [],
        "apiKeySource": "ANTHROPIC_API_KEY",
        "claude_code_version": "2.1.197",
        "output_style": "default",
        "agents": ["claude", "Explore", "general-purpose", "Plan"],
        "skills": [],
        "plugins": [],
        "analytics_disabled": False,
        "product_feedback_disabled": False,
        "uuid": "u-1",
        "fast_mode_state": "off",
    }
    verdict = json.loads(control("verdict", '{"decision": "approve", "summary": "ok", "findings": []}'))
    ok = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "api_error_status": None,
        "num_turns": 2,
        "result": json.dumps(verdict),
        "stop_reason": "end_turn",
        "session_id": "1ed4-fake",
        "total_cost_usd": 0.0007,
        "permission_denials": [],
        "terminal_reason": "completed",
        "structured_output": verdict,
    }

    if scenario == "auth":  # not logged in: no init line was recorded
        emit(
            {
                "type": "assistant",
                "message": {
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": "Not logged in · Please run /login"}],
                },
                "error": "authentication_failed",
            }
        )
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": None,
                "num_turns": 1,
                "result": "Not logged in · Please run /login",
                "terminal_reason": "completed",
            }
        )
        return 1
    if scenario == "drift_tolerated":  # new scalar and empty-container fields: not judged
        init["new_scalar_field"] = "x"
        init["new_empty_list"] = []
        init["plugins"] = [{"name": "anything", "path": "/x"}]  # vocabulary, never judged
    if scenario == "drift_container":  # a new non-empty container: could be an invocable surface
        init["connectors"] = ["gmail"]
    if scenario == "unsafe_mode":
        init["permissionMode"] = "bypassPermissions"
    emit(init)
    if scenario == "bad_key":
        emit(
            {
                "type": "system",
                "subtype": "api_retry",
                "attempt": 1,
                "max_retries": 1,
                "retry_delay_ms": 612.3,
                "error_status": 401,
                "error": "authentication_failed",
            }
        )
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": 401,
                "result": "Invalid API key · Fix external API key",
            }
        )
        return 1
    if scenario == "quota":
        emit({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "rateLimitType": "five_hour"}})
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": 429,
                "result": "You've hit your limit · resets 5pm",
            }
        )
        return 1
    if scenario == "hang":
        time.sleep(300)
        return 0
    if scenario == "hang_with_helper":  # a helper process in the CLI's group, as a real CLI spawns one
        import subprocess

        subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
        time.sleep(300)
        return 0
    if scenario == "tool_breach":  # the model asks for a shell; the CLI reports the attempt
        emit(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "touch pwned"}}
                    ]
                },
            }
        )
        emit(
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "is_error": True,
                            "content": "<tool_use_error>Error: No such tool available: Bash</tool_use_error>",
                        }
                    ]
                },
            }
        )
        emit(ok)
        return 0
    if scenario == "malformed":
        ok = dict(
            ok,
            result="HIGH src/app.py:12 SQL injection via f-string; token=sk-abcdefghijklmnopqrstuvwxyz0123",
            structured_output=None,
        )
    if scenario == "prose":
        ok = dict(ok, result="I reviewed it and it seems good to me.", structured_output=None)
    emit(
        {
            "type": "assistant",
            "message": {
                "model": "claude-opus-4-8",
                "content": [{"type": "tool_use", "id": "toolu_9", "name": "StructuredOutput", "input": verdict}],
            },
        }
    )
    emit(ok)
    return 0


sys.exit(main())
