"""The server's edge on the wire: a filter between the client's stdio and the SDK's, relaying at the fd level.

It answers as JSON-RPC and MCP say where the SDK does not (parse errors, unknown methods and tools, the handshake,
argument schemas, capabilities, ``logging/setLevel``) without forking the SDK; docs/cli.md tables each answer.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

JSON = dict[str, Any]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

# What this server offers, the same whatever protocol version a client speaks.
CAPABILITIES: JSON = {"logging": {}, "tools": {"listChanged": False}}
# The requests served: the lifecycle's, and those of each capability above.
SERVED = frozenset({"initialize", "ping", "server/discover", "tools/list", "tools/call", "logging/setLevel"})
# The log levels, least severe first (RFC 5424, as MCP names them).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# Requests a client may send before ``initialize`` in the handshake era.
BEFORE_INITIALIZE = frozenset({"initialize", "ping"})
ENVELOPE_VERSION = "io.modelcontextprotocol/protocolVersion"


def encode(message: JSON) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def error(request_id: Any, code: int, message: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def valid_id(value: Any) -> bool:
    """An id MCP allows: a string or an integer (never null, never a bool)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def shown(value: Any, width: int = 40) -> str:
    """``value`` as JSON on one short line, for a message."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def modern(params: Any) -> bool:
    """Whether a request carries the 2026-07-28 per-request envelope (its protocol version in ``_meta``)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ENVELOPE_VERSION in meta


class Edge:
    """The filter's state and decisions, free of I/O: each client line is forwarded to the SDK,
    answered here, or dropped; each SDK line goes to the client, rewritten where it must be."""

    def __init__(self, input_schemas: Mapping[str, JSON]):
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

        self.tools = {name: Draft202012Validator(schema) for name, schema in input_schemas.items()}
        self.schemas = dict(input_schemas)
        self.initialize_seen = False
        self.era: str | None = None  # "handshake" or "modern", decided by the first request
        self.pending: dict[Any, str] = {}  # ids of initialize / server/discover requests in flight
        self.log_level = 0  # the index in LOG_LEVELS of the least severe message passed on
        self.lock = threading.Lock()

    # -- from the client --------------------------------------------------------------------

    def inbound(self, line: bytes) -> tuple[bytes | None, bytes | None]:
        """``(to_server, to_client)`` for one line the client wrote."""
        if not line.strip():
            return None, None
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # nested deep to crash the proxy
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return None, error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({reason})")
        if isinstance(message, list):
            batch = "Invalid Request: batches are not supported; send one message a line"
            return None, error(None, INVALID_REQUEST, batch)
        if not isinstance(message, dict):
            return None, error(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object")
        with self.lock:
            answer = self._check(message)
        return (None, answer) if answer is not None else (line if line.endswith(b"\n") else line + b"\n", None)

    def _check(self, message: JSON) -> bytes | None:
        """None to forward ``message`` to the SDK, else the answer to write back."""
        request_id = message.get("id") if valid_id(message.get("id")) else None
        if message.get("jsonrpc") != "2.0":
            return error(request_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
        method = message.get("method")
        if "method" not in message:
            if not valid_id(message.get("id")) or ("result" in message) == ("error" in message):
                return error(None, INVALID_REQUEST, "Invalid Request: a response needs an id and a result or an error")
            return None
        if not isinstance(method, str):
            return error(request_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        params = message.get("params")
        if "params" in message and not isinstance(params, dict):
            if "id" not in message:
                return None  # a notification gets no answer; the SDK drops it
            return error(request_id, INVALID_PARAMS, f"Invalid params: {shown(method, 80)} takes an object")
        if "id" not in message:
            return None  # a notification: the SDK handles or drops it, and never answers
        if not valid_id(message["id"]):
            return error(None, INVALID_REQUEST, "Invalid Request: the id must be a string or an integer")
        if not _well_formed(message):
            return error(request_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request")
        return self._request(message["id"], method, params, modern(params))

    def _request(self, request_id: Any, method: str, params: JSON | None, enveloped: bool) -> bytes | None:
        if method not in SERVED:
            return error(request_id, METHOD_NOT_FOUND, f"Method not found: {shown(method, 80)}")
        handshake = not enveloped or method == "initialize"
        if handshake and self.era != "modern":
            if method == "initialize":
                if self.initialize_seen:
                    return error(request_id, INVALID_REQUEST, "Invalid Request: initialize was already received")
            elif not self.initialize_seen and method not in BEFORE_INITIALIZE:
                first = "send initialize first (or, at protocol 2026-07-28, the envelope in params._meta)"
                early = f"Invalid Request: {shown(method, 80)} before initialize; {first}"
                return error(request_id, INVALID_REQUEST, early)
        if method == "logging/setLevel":
            return self._set_level(request_id, params or {}, enveloped)
        if method == "tools/call":
            answer = self._tool_call(request_id, params or {}, enveloped)
            if answer is not None:
                return answer
        # Forwarded: the SDK's first request decides its era, and so this one's.
        if self.era is None:
            self.era = "handshake" if handshake else "modern"
        if method == "initialize" and self.era == "handshake":
            self.initialize_seen = True
        if method in ("initialize", "server/discover"):
            self.pending[request_id] = method
        return None

    def _set_level(self, request_id: Any, params: JSON, enveloped: bool) -> bytes:
        """``logging/setLevel``: pass on only the log messages at ``level`` or above."""
        if enveloped:
            gone = "Method not found: logging/setLevel is gone at 2026-07-28; set io.modelcontextprotocol/logLevel"
            return error(request_id, METHOD_NOT_FOUND, f"{gone} in the request's _meta")
        level = params.get("level")
        if level not in LOG_LEVELS:
            levels = ", ".join(LOG_LEVELS)
            return error(request_id, INVALID_PARAMS, f"Invalid params: level {shown(level)} must be one of {levels}")
        self.log_level = LOG_LEVELS.index(level)
        return encode({"jsonrpc": "2.0", "id": request_id, "result": {}})

    def below_level(self, message: JSON) -> bool:
        """Whether ``message`` is a log message less severe than the level the client set."""
        if message.get("method") != "notifications/message" or not self.log_level:
            return False
        params = message.get("params")
        level = params.get("level") if isinstance(params, dict) else None
        return level in LOG_LEVELS and LOG_LEVELS.index(level) < self.log_level

    def _tool_call(self, request_id: Any, params: JSON, enveloped: bool) -> bytes | None:
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str):
            return error(request_id, INVALID_PARAMS, "Invalid params: tools/call needs the tool's name")
        if name not in self.tools:
            known = ", ".join(sorted(self.tools))
            return error(request_id, INVALID_PARAMS, f"Unknown tool: {shown(name)}; the tools are {known}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error(request_id, INVALID_PARAMS, f"Invalid params: {name}'s arguments must be an object")
        complaint = self.complaint(name, arguments)
        if complaint is None:
            return None
        result: JSON = {"content": [{"type": "text", "text": complaint}], "isError": True}
        if enveloped:
            result["resultType"] = "complete"
        return encode({"jsonrpc": "2.0", "id": request_id, "result": result})

    def complaint(self, tool: str, arguments: JSON) -> str | None:
        """One line naming the first argument that breaks ``tool``'s input schema and how to fix it."""
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

        found = best_match(self.tools[tool].iter_errors(arguments))
        if found is None:
            return None
        if found.validator == "anyOf":  # a value of the right kind that is wrong inside: say where
            deeper = [inner for inner in found.context or [] if inner.validator != "type"]
            found = best_match(deeper) or found
        path = [str(part) for part in found.absolute_path]
        where = self.schemas[tool]
        for part in path:  # the schema of the property at ``path`` (through pr's object)
            where = _object_branch(where).get("properties", {}).get(part, {})
        if found.validator == "required":
            missing = next(key for key in found.validator_value if key not in found.instance)
            name = ".".join([*path, missing])
            wanted = _object_branch(where).get("properties", {}).get(missing, {})
            return f"{tool}: argument '{name}' is required: {_description(wanted)}"
        if found.validator == "additionalProperties":
            known = sorted(_object_branch(where).get("properties", {}))
            extra = sorted(set(found.instance) - set(known))
            unknown = ", ".join(repr(name) for name in extra)
            if path:
                members = ", ".join(known)
                return f"{tool}: argument '{'.'.join(path)}' has no member {unknown}; its members are {members}"
            return f"{tool} has no argument {unknown}; the arguments are {', '.join(known)}"
        name = ".".join(path) or "arguments"
        return f"{tool}: argument '{name}' must be {_expected(where)}, not {shown(found.instance)}"


def _well_formed(message: JSON) -> bool:
    """Whether the SDK's own JSON-RPC model takes ``message`` (else it would drop it unanswered)."""
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError:
        return False
    return True


def _object_branch(schema: JSON) -> JSON:
    """The object schema inside ``schema`` (``pr`` is ``anyOf: [object, null]``)."""
    return next((dict(branch) for branch in schema.get("anyOf", []) if branch.get("type") == "object"), schema)


def _description(schema: JSON) -> str:
    return str(schema.get("description") or schema.get("title") or "see the tool's input schema").rstrip(".")


def _expected(schema: JSON) -> str:
    """What a value of ``schema`` is, in words."""
    nullable = any(branch.get("type") == "null" for branch in schema.get("anyOf", []))
    branches = [branch for branch in schema.get("anyOf", []) if branch.get("type") != "null"] or [schema]
    words = " or ".join(_expected_one(branch) for branch in branches)
    return f"{words} (or left out)" if nullable else words


def _expected_one(schema: JSON) -> str:
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "boolean":
        return "true or false"
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"an integer from {low} to {high}"
        return f"an integer of at least {low}" if low is not None else "an integer"
    if kind == "object":
        members = sorted(schema.get("properties", {}))
        return "an object {" + ", ".join(members) + "}" if members else "an object"
    if kind == "string" and "pattern" in schema:
        return f"a string: {_description(schema)}"
    return {"string": "a string", "array": "an array", "number": "a number"}.get(str(kind), "a valid value")


# -- from the SDK ---------------------------------------------------------------------------


def outbound(edge: Edge, line: bytes) -> bytes | None:
    """One line the SDK wrote, as the client gets it: the answers to ``initialize`` and
    ``server/discover`` advertise :data:`CAPABILITIES`; a log message below the client's level is
    dropped (None); everything else unchanged."""
    with edge.lock:
        if not edge.pending and not edge.log_level:
            return line
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return line
        if not isinstance(message, dict):
            return line
        if edge.below_level(message):
            return None
        if "method" in message or message.get("id") not in edge.pending:
            return line
        method = edge.pending.pop(message["id"])
        if isinstance(message.get("result"), dict):
            message["result"]["capabilities"] = json.loads(json.dumps(CAPABILITIES))
        elif method == "initialize" and edge.era == "handshake":
            edge.initialize_seen = False  # refused: the client may try again
        return encode(message)


# -- the plumbing ---------------------------------------------------------------------------


def serve_stdio(run_sdk: Callable[[], None], input_schemas: Mapping[str, JSON]) -> None:
    """Serve on the real stdin/stdout through the edge; ``run_sdk`` runs the SDK's stdio server on fds 0 and 1,
    by then two pipes behind it, and returns when the client closes its stdin."""
    edge = Edge(input_schemas)
    sys.stdout.flush()
    client_in = os.fdopen(os.dup(0), "rb", buffering=0)
    client_out = os.fdopen(os.dup(1), "wb", buffering=0)
    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    os.dup2(to_sdk_r, 0)
    os.dup2(from_sdk_w, 1)
    os.close(to_sdk_r)
    os.close(from_sdk_w)
    write_lock = threading.Lock()

    def write(data: bytes) -> None:
        with write_lock:
            client_out.write(data)
            client_out.flush()

    def relay_in() -> None:
        sdk = os.fdopen(to_sdk_w, "wb", buffering=0)
        try:
            for line in _lines(client_in):
                try:
                    to_server, to_client = edge.inbound(line)
                except Exception as exc:  # a fault of this filter never stalls the client: the SDK answers
                    print(f"agentreview mcp: edge: {type(exc).__name__}: {exc}", file=sys.stderr)
                    to_server, to_client = line, None
                if to_server is not None:
                    sdk.write(to_server)
                if to_client is not None:
                    write(to_client)
        except (OSError, ValueError):
            pass
        finally:
            sdk.close()  # the SDK sees EOF and returns

    def relay_out() -> None:
        with os.fdopen(from_sdk_r, "rb", buffering=0) as sdk:
            for line in _lines(sdk):
                if line == END:
                    return
                try:
                    passed = outbound(edge, line)
                    if passed is not None:
                        write(passed)
                except (OSError, ValueError):
                    return

    threading.Thread(target=relay_in, name="mcp-edge-in", daemon=True).start()
    out = threading.Thread(target=relay_out, name="mcp-edge-out", daemon=True)
    out.start()
    try:
        run_sdk()
    finally:
        # fd 1 is the pipe again once the SDK is done: what it wrote comes first, then this mark,
        # so every answer reaches the client before the process ends.
        os.write(1, END)
        out.join(timeout=30)


END = b"\x00agentreview-mcp-edge-end\n"


def _lines(stream: BinaryIO) -> Any:
    """The lines of ``stream`` as they arrive (no read-ahead that would hold a line back)."""
    buffered = b""
    while True:
        chunk = stream.read(65536)
        if not chunk:
            if buffered:
                yield buffered
            return
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            yield line + b"\n"
