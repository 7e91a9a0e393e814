"""A scripted model server on 127.0.0.1 speaking just enough of the Anthropic Messages, OpenAI
Responses and OpenAI Chat Completions APIs to drive the real reviewer CLIs end to end.

The test's ``reply(api, request_json)`` sees every request and answers with text or one tool call,
streamed as server-sent events; a reply may also ``stall`` or be ``broken``, the two transport
faults a lane must survive. With an ``api_key``, a request without it gets 401.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str | None = None
    tool: str | None = None  # a tool/function name the model "calls"
    tool_input: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None  # the Responses API namespace of ``tool`` (Codex groups an MCP server's tools)
    stall: bool = False  # never answer (the connection stays open until the server stops)
    broken: bool = False  # announce the whole stream, send its first event, then drop the connection
    refuse: bool = False  # refuse the key with 401, as for a request without ``api_key``


Script = Callable[[str, dict[str, Any]], Reply]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_events(body: dict[str, Any], reply: Reply) -> list[bytes]:
    model = body.get("model", "claude-stub")
    msg_id = "msg_" + uuid.uuid4().hex[:12]
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    out = [
        _sse("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
    ]  # fmt: skip
    if reply.tool:
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:12], "name": reply.tool, "input": {}}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(reply.tool_input)}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]  # fmt: skip
        stop = "tool_use"
    else:
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": reply.text or ""}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]  # fmt: skip
        stop = "end_turn"
    out += [
        _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return out


def responses_events(body: dict[str, Any], reply: Reply) -> list[bytes]:
    resp_id = "resp_" + uuid.uuid4().hex[:12]
    model = body.get("model", "gpt-stub")
    base = {"id": resp_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    if reply.tool:
        item = {
            "type": "function_call",
            "id": "fc_" + uuid.uuid4().hex[:8],
            "call_id": "call_" + uuid.uuid4().hex[:8],
            "name": reply.tool,
            "arguments": json.dumps(reply.tool_input),
            "status": "completed",
            **({"namespace": reply.namespace} if reply.namespace else {}),
        }
    else:
        item = {
            "type": "message",
            "id": "msg_" + uuid.uuid4().hex[:8],
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text or "", "annotations": []}],
        }
    done = {
        **base,
        "status": "completed",
        "output": [item],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }
    events = [_sse("response.created", {"type": "response.created", "response": base})]
    if not reply.tool:
        events.append(
            _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": reply.text or "",
                },
            )
        )
    events += [
        _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        _sse("response.completed", {"type": "response.completed", "response": done}),
    ]
    return events


def chat_events(body: dict[str, Any], reply: Reply) -> list[bytes]:
    """Chat Completions chunks as the AI SDK's openai-compatible client reads them: ``data:`` lines
    (no ``event:``), the tool call's arguments as one string, usage on the last chunk, then ``[DONE]``."""
    base = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion.chunk", "created": 0,
            "model": body.get("model", "chat-stub")}  # fmt: skip
    if reply.tool:
        call = {"index": 0, "id": "call_" + uuid.uuid4().hex[:8], "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.tool_input)}}  # fmt: skip
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": reply.text or ""}, "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
    ]
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


STREAMS = {"anthropic": anthropic_events, "responses": responses_events, "chat": chat_events}


def api_of(path: str) -> str:
    """Which API a POST path speaks ("" for none this server knows)."""
    for suffix, api in (("/messages", "anthropic"), ("/responses", "responses"), ("/chat/completions", "chat")):
        if path.endswith(suffix):
            return api
    return ""


def _bearer(headers: Any) -> str | None:
    value = headers.get("Authorization") or ""
    return value[len("Bearer ") :] if value.startswith("Bearer ") else None


class ModelServer:
    """Start with ``with ModelServer(script) as server:``; ``server.url`` is the base URL."""

    def __init__(self, script: Script, api_key: str | None = None) -> None:
        self.script = script
        self.api_key = api_key
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.request_headers: list[dict[str, str]] = []  # one per entry of ``requests``
        self.stopping = threading.Event()  # set on exit: releases stalled requests
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, chunks: list[bytes], content_type: str) -> None:
                payload = b"".join(chunks)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # model listings and the like
                self._send(200, [json.dumps({"data": [], "models": []}).encode()], "application/json")

            def do_HEAD(self) -> None:
                self._send(200, [], "text/plain")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith("/messages/count_tokens"):
                    self._send(200, [b'{"input_tokens": 10}'], "application/json")
                    return
                api = api_of(path)
                if not api:
                    self._send(404, [b'{"error": "not found"}'], "application/json")
                    return
                outer.requests.append((api, body))
                outer.request_headers.append(dict(self.headers))
                reply = outer.script(api, body)
                if reply.refuse or (
                    outer.api_key and outer.api_key not in (self.headers.get("x-api-key"), _bearer(self.headers))
                ):
                    refused = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
                    self._send(401, [json.dumps(refused).encode()], "application/json")
                    return
                if api == "anthropic" and not body.get("stream"):
                    content = (
                        [{"type": "tool_use", "id": "toolu_x", "name": reply.tool, "input": reply.tool_input}]
                        if reply.tool
                        else [{"type": "text", "text": reply.text or ""}]
                    )
                    message = {
                        "id": "msg_x",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model"),
                        "content": content,
                        "stop_reason": "tool_use" if reply.tool else "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    }
                    self._send(200, [json.dumps(message).encode()], "application/json")
                    return
                if reply.stall:
                    outer.stopping.wait()
                    return
                events = STREAMS[api](body, reply)
                if reply.broken:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(b"".join(events))))
                    self.end_headers()
                    self.wfile.write(events[0])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._send(200, events, "text/event-stream")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
