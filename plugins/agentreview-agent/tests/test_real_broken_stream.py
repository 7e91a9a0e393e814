"""A broken model stream with the real Claude Code CLI: a scripted server on 127.0.0.1 starts the answer's
event stream, then neither sends another byte nor closes the connection (a dead connection the CLI
keeps waiting on). The idle-output watchdog turns it into a fallback-eligible ``stream_stalled`` well
inside the lane's budget; the test asserts the classification, never a duration. Skipped only when the
CLI binary is absent."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import reviewer_clis

from agentreview.model.contracts import PresetSpec
from conftest import APPROVING_REVIEWER

pytestmark = pytest.mark.slow



class _Stalling(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        start = {"type": "message_start", "message": {
            "id": "msg_stall", "type": "message", "role": "assistant", "model": "claude-stub", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 0}}}  # fmt: skip
        self.wfile.write(f"event: message_start\ndata: {json.dumps(start)}\n\n".encode())
        self.wfile.flush()
        self.release.wait(300)  # the stream is broken: nothing more, and the connection stays open

    def log_message(self, format: str, *args: object) -> None:
        return


def test_claude_on_a_stream_that_stops_falls_back(lane, monkeypatch, tmp_path: Path) -> None:
    from agentreview_agent.providers.claude import ClaudeProvider

    binary = reviewer_clis.binary("claude")
    if not binary:
        pytest.skip(reviewer_clis.missing("claude"))
    _Stalling.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stalling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "stub-key")
        monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        lane.providers["claude"] = ClaudeProvider()
        lane.presets["claude"] = PresetSpec(
            name="claude", provider="claude", options={"binary": str(binary), "idle_timeout": 5}
        )
        lane.presets["backup"] = PresetSpec(
            name="backup", provider="exec", options={"command": [sys.executable, "-c", APPROVING_REVIEWER]}
        )
        outcome = lane.run(lane.check(preset="claude", fallbackPresets=["backup"], timeoutMs=240000))
    finally:
        _Stalling.release.set()
        server.shutdown()
        server.server_close()
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    (failure,) = outcome.fallbacks
    assert failure.preset == "claude" and failure.error.startswith("stream_stalled: claude produced no output")
