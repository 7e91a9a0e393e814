"""A stand-in ``opencode`` CLI that replays recorded OpenCode 1.18.33 output (reviewer-clis.md section 6).

A real model cannot be made to fail auth, hit a quota or call a denied tool on demand. It emulates
what matters for isolation (``debug agent`` reads the agent file; ``run`` without a private
``XDG_CONFIG_HOME`` loads the user's MCP servers), records every ``run``, and ``export`` names the
model that answered (``control("ran")``).
"""

import json
import os
import re
import sys
import time

from fakelib import control, print_help, record

TOOLS = [
    "invalid",
    "question",
    "bash",
    "read",
    "glob",
    "grep",
    "edit",
    "write",
    "task",
    "webfetch",
    "todowrite",
    "websearch",
    "skill",
]
HELP = """opencode run [message..]
      --pure  -m, --model  --agent  --format  -f, --file  --dir  --auto  --title
"""


def emit(kind, sid="ses_dd6c18f1-fake", **fields):
    sys.stdout.write(json.dumps({"type": kind, "timestamp": 1795988289758, "sessionID": sid, **fields}) + "\n")
    sys.stdout.flush()


def main():
    argv = sys.argv[1:]
    scenario = control("scenario", "success")
    if argv == ["--version"]:
        print("1.18.33")
        return 0
    if "--help" in argv:
        print_help(HELP)
        return 0
    if argv[:2] == ["debug", "agent"]:
        if scenario == "slow_preflight":  # an overloaded machine: the side command outlasts the lane
            time.sleep(60)
        path = os.path.join(os.getcwd(), ".opencode", "agent", argv[2] + ".md")
        text = ""
        if os.path.exists(path):
            with open(path) as fh:
                text = fh.read()
        allowed = set(re.findall(r"^  (\w+): allow$", text, re.M)) if '"*": deny' in text else set(TOOLS)
        if scenario == "drift":
            allowed.add("bash")  # a release where the generated agent no longer turns bash off
        print(
            json.dumps(
                {
                    "name": argv[2],
                    "mode": "primary",
                    "permission": [],
                    "options": {},
                    "native": False,
                    "tools": {t: t in allowed for t in TOOLS},
                }
            )
        )
        return 0
    if argv[:1] == ["export"]:
        provider, _, model = control("ran", "anthropic/claude-sonnet-4").partition("/")
        info = {"role": "assistant", "modelID": model, "providerID": provider, "agent": "x", "finish": "stop"}
        print(json.dumps({"info": {"id": argv[1]}, "messages": [{"info": {"role": "user"}, "parts": []},
                                                                 {"info": info, "parts": []}]}))
        return 0
    record(argv=argv, cwd=os.getcwd())
    if not os.environ.get("XDG_CONFIG_HOME") and os.path.exists(os.path.expanduser("~/.config/opencode/opencode.json")):
        emit("tool_use", part={"type": "tool", "tool": "evil_run", "callID": "c0", "state": {"status": "completed"}})
    verdict = control("verdict", '{"findings": []}')
    if scenario == "hang":
        emit(
            "error",
            error={
                "name": "APIError",
                "data": {
                    "message": "Cannot connect to API: Unable to connect. Is the computer able to access the url?",
                    "isRetryable": True,
                    "metadata": {"url": "https://opencode.ai/zen"},
                },
            },
        )
        time.sleep(300)
    if scenario in ("broken", "server_error"):  # what 1.18.33 printed after its own retries of a broken stream
        emit("step_start", part={"id": "prt_1", "type": "step-start"})
        data = {"message": "Connection reset by server", "isRetryable": True, "metadata": {"code": "ECONNRESET"}}
        if scenario == "server_error":
            data = {"message": "Service Unavailable", "statusCode": 503, "isRetryable": True}
        emit("error", error={"name": "APIError", "data": data})
        return 1
    if scenario in ("auth", "quota"):
        code = 401 if scenario == "auth" else 429
        emit(
            "error",
            error={"name": "APIError", "data": {"message": f"status {code}", "statusCode": code, "isRetryable": False}},
        )
        return 1
    emit("step_start", part={"id": "prt_1", "type": "step-start"})
    if scenario == "tool_breach":  # a denied call still shows as tool_use with an error state
        emit(
            "tool_use",
            part={
                "type": "tool",
                "tool": "bash",
                "callID": "c1",
                "state": {"status": "error", "input": {"command": "touch pwned"}, "error": "denied"},
            },
        )
    if scenario == "malformed":
        verdict = "HIGH app.py:1 x changed without tests"
    emit("text", part={"type": "text", "text": verdict, "time": {"start": 1, "end": 2}})
    emit(
        "step_finish",
        part={
            "reason": "stop",
            "type": "step-finish",
            "tokens": {"total": 13, "input": 10, "output": 3, "reasoning": 0, "cache": {"write": 0, "read": 0}},
            "cost": 0,
        },
    )
    return 0


sys.exit(main())
