"""Runs a real reviewer CLI and rewrites its output as a future release might: what no scripted
model reply can make a real CLI print (a new init field, a new item type, a known field
carrying an unsafe value). Everything else passes through unchanged.

Usage (as a preset's ``binary``): ``python cli_shim.py <real launcher> <cli> <drift|unsafe> [args...]``,
written into a small executable wrapper by the test (the preset's ``binary`` is one path).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

SYNTHETIC = "synthetic_surface"  # a name no release uses: drift must be judged by shape, not by the name
PLAN_UPDATE = {"id": "item_synthetic", "type": "plan_update", "steps": [{"step": "read the diff", "status": "done"}]}
FILE_CHANGE = {"id": "item_synthetic", "type": "file_change", "changes": [{"path": "app.py", "kind": "update"}],
               "status": "completed"}  # fmt: skip


def rewrite(cli: str, mode: str, event: dict[str, Any], first: bool) -> list[dict[str, Any]]:
    """The events to print in place of ``event`` (the first JSON line when ``first``)."""
    if cli == "claude" and event.get("type") == "system" and event.get("subtype") == "init":
        if mode == "drift":
            return [{**event, SYNTHETIC: {"entries": ["x"]}}]
        return [{**event, "permissionMode": "bypassPermissions"}]
    if cli == "codex" and event.get("type") == "turn.started":
        return [event, {"type": "item.completed", "item": PLAN_UPDATE if mode == "drift" else FILE_CHANGE}]
    if cli == "opencode" and first and "sessionID" in event:
        if mode == "drift":
            part = {"type": "synthetic", "items": ["x"]}
            extra = {"type": "synthetic_part", "sessionID": event["sessionID"], "part": part}
        else:
            part = {"type": "tool", "tool": "write", "callID": "call_synthetic",
                    "state": {"status": "completed", "input": {"filePath": "app.py", "content": "x"}}}  # fmt: skip
            extra = {"type": "tool_use", "sessionID": event["sessionID"], "part": part}
        return [event, extra]
    if cli == "kimi" and event.get("type") == "system.version":
        if mode == "drift":
            return [event, {"role": "plan", "items": ["x"]}]  # a new kind of line (meta lines are metadata)
        call = {"type": "function", "id": "call_synthetic", "function": {"name": "Write", "arguments": "{}"}}
        return [event, {"role": "assistant", "content": "", "tool_calls": [call]}]
    return [event]


def main(argv: list[str]) -> int:
    real, cli, mode, args = argv[0], argv[1], argv[2], argv[3:]
    if any(a in ("--help", "-h", "--version", "-V", "debug", "features", "export") for a in args[:2]):
        proc = subprocess.run([real, *args])  # probes and side commands pass through untouched
        return proc.returncode
    child = subprocess.Popen([real, *args], stdout=subprocess.PIPE)
    assert child.stdout is not None
    first = True
    for raw in child.stdout:
        line = raw.decode("utf-8", "replace")
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            sys.stdout.write(line)
        else:
            for out in rewrite(cli, mode, event, first):
                sys.stdout.write(json.dumps(out) + "\n")
            first = False
        sys.stdout.flush()
    return child.wait()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
