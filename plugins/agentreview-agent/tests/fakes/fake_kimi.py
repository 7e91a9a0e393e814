"""A stand-in ``kimi`` (Kimi Code 2.1.0) CLI that replays recorded output (reviewer-clis.md section 6).

A real model cannot be made to fail auth, hit a quota or call a tool on demand. It records every run
and emulates the tool allow-list: without ``[tools] enabled`` the user's ``mcp.json`` servers are used.
"""

import os
import sys
import time
import tomllib

from fakelib import control, emit, print_help, record, top_listing

HELP = "Usage: kimi [options]\n  -p, --prompt  --output-format  --add-dir  --skills-dir  -m, --model  --yolo\n"


def main():
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print("2.1.0")
        return 0
    if "--help" in argv:
        print_help(HELP)
        return 0
    home = os.environ.get("KIMI_CODE_HOME") or os.path.expanduser("~/.kimi-code")
    with open(os.path.join(home, "config.toml"), "rb") as fh:
        config = tomllib.load(fh)
    record(argv=argv, cwd=os.getcwd(), listing=top_listing(home), config=config)
    scenario = control("scenario", "success")
    emit({"role": "meta", "type": "system.version", "version": "2.1.0"})
    if "enabled" not in config.get("tools", {}) and os.path.exists(os.path.join(home, "mcp.json")):
        emit(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "id": "t0", "function": {"name": "mcp__evil__run", "arguments": "{}"}}
                ],
            }
        )
    if scenario == "auth":
        print("error: failed to run prompt: provider.auth_error: 401 invalid x-api-key", file=sys.stderr)
        return 1
    if scenario == "quota":
        emit(
            {
                "role": "meta",
                "type": "turn.step.retrying",
                "failed_attempt": 1,
                "next_attempt": 2,
                "max_attempts": 2,
                "delay_ms": 523.5,
                "error_name": "RateLimitError",
                "error_message": "429",
                "status_code": 429,
            }
        )
        print("error: failed to run prompt: provider.rate_limit: 429 too many requests", file=sys.stderr)
        return 1
    if scenario in ("broken", "server_error"):  # what 2.1.0 printed when the model stream broke (or a 503)
        status = {"status_code": 503} if scenario == "server_error" else {}
        for attempt in (1, 2):
            emit({"role": "meta", "type": "turn.step.retrying", "failed_attempt": attempt,
                  "next_attempt": attempt + 1, "max_attempts": 3, "delay_ms": 571.5, "error_name": "APIConnectionError",
                  "error_message": "terminated", **status})  # fmt: skip
        failure = "provider.connection_error: terminated"
        if status:
            failure = "provider.server_error: 503 service unavailable"
        print(f"error: failed to run prompt: {failure}", file=sys.stderr)
        return 1
    if scenario == "hang":
        time.sleep(300)
    if scenario == "tool_breach":
        emit(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "type": "function",
                        "id": "t1",
                        "function": {"name": "Bash", "arguments": '{"command": "touch pwned"}'},
                    }
                ],
            }
        )
        emit({"role": "tool", "tool_call_id": "t1", "content": "denied"})
    if scenario == "drift":  # an unknown meta event and an allowed read: tolerated
        emit({"role": "meta", "type": "context.compacted", "tokens": 12})
        emit(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "id": "t2", "function": {"name": "Read", "arguments": '{"path": "app.py"}'}}
                ],
            }
        )
        emit({"role": "tool", "tool_call_id": "t2", "content": "x = 2"})
    verdict = control("verdict", '{"findings": []}')
    if scenario == "malformed":
        verdict = "P1 app.py:1 x changed | add a test"
    emit({"role": "assistant", "content": verdict})
    emit(
        {
            "role": "meta",
            "type": "session.resume_hint",
            "session_id": "session_5672-fake",
            "command": "kimi -r session_5672-fake",
            "content": "To resume this session: kimi -r session_5672-fake",
        }
    )
    return 0


sys.exit(main())
