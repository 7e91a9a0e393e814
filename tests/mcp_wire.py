"""``agentreview mcp`` as a real subprocess spoken to in raw bytes: one JSON-RPC message a line on
stdin, each line of stdout read back with a deadline. No SDK client in between, so what is
asserted is exactly what a host receives."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from reviewrepo import AGENTREVIEW

PROTOCOL = "2025-11-25"
CLIENT = {"name": "wire-test", "version": "1.0"}


class Wire:
    """The server process; ``send`` writes bytes, ``receive`` returns the next message (a deadline,
    never a hang)."""

    def __init__(self, env: dict[str, str], cwd: Path, *extra: str):
        self.proc = subprocess.Popen(
            [*AGENTREVIEW, "mcp", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send(self, data: bytes | dict[str, Any] | list[Any]) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw if raw.endswith(b"\n") else raw + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict[str, Any]:
        """The next message the server wrote (a notification, request or response)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message within {timeout}s; stderr: {self.stderr!r}") from None
        message = json.loads(line)
        assert isinstance(message, dict), line
        return message

    def response(self, request_id: Any, timeout: float = 60.0) -> dict[str, Any]:
        """The response to ``request_id`` (``None`` for an error answering no id), skipping notifications."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(max(0.1, deadline - time.monotonic()))
            if "method" not in message and message.get("id") == request_id:
                return message
            assert time.monotonic() < deadline, f"no response to {request_id!r}"

    def silent(self, wait: float = 1.0) -> bool:
        """True if the server writes nothing for ``wait`` seconds (a notification gets no answer)."""
        try:
            line = self.lines.get(timeout=wait)
        except queue.Empty:
            return True
        self.lines.put(line)
        return False

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """Send a request and return its response (the whole message: ``result`` or ``error``)."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(self.next_id, timeout)

    def initialize(self, protocol: str = PROTOCOL) -> dict[str, Any]:
        """``initialize`` then ``notifications/initialized``; the initialize result."""
        answer = self.request("initialize", {"protocolVersion": protocol, "capabilities": {}, "clientInfo": CLIENT})
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    def call(self, tool: str, arguments: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        """``tools/call``: the whole response message."""
        return self.request("tools/call", {"name": tool, "arguments": arguments}, timeout)

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
