"""``agentreview presets --probe``: a provider's real admission, with no paid model call.

The CLI starts as a lane would, against a local server answering ``401`` and with no credential, and its
output is audited: drift shows before a lane pays for a model call.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agentreview.api import PresetSpec, ReviewerRequest, home_dir

PROBE_BUDGET_S = 60.0
PROBE_KEY = "agentreview-probe-no-credential"
REFUSAL = b'{"type":"error","error":{"type":"authentication_error","message":"agentreview probe: no model call"}}'


class _Refuse(BaseHTTPRequestHandler):
    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= 1 << 20:
            self.rfile.read(length)
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REFUSAL)))
        self.end_headers()
        self.wfile.write(REFUSAL)

    do_GET = do_POST = do_PUT = _refuse

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def refusing_server() -> Iterator[str]:
    """A server on 127.0.0.1 answering every request 401 at once; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def probe_request(spec: PresetSpec) -> Iterator[ReviewerRequest]:
    """A reviewer request for a probe: a throwaway work dir as repository and private home root (under the
    agentreview home, not the system temp dir, where Codex's sandbox helper refuses to start)."""
    parent = home_dir() / "probes"
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(prefix="probe-", dir=parent) as tmp:
        work = Path(tmp)
        (work / "rubric.md").write_text("probe\n")
        yield ReviewerRequest(
            preset=spec,
            prompt="Answer with {} only.",
            answer_prompt="Answer with {} only.",
            read_prompt="Answer with {} only.",
            check_id="probe",
            repo_root=work,
            base_sha="",
            head_sha="",
            rubric_path=work / "rubric.md",
            verdict_path=work / "verdict.json",
            work_dir=work,
            deadline=time.monotonic() + PROBE_BUDGET_S,
            cancel=threading.Event(),
        )


def verdict(stop: list[str], drift: list[str], notes: tuple[str, ...] = ()) -> str | None:
    """The probe's line from what the provider's audit found (``None``: it would run)."""
    if stop:
        return "would stop: " + "; ".join(dict.fromkeys(stop))
    if drift:
        return "would fall back: " + "; ".join(dict.fromkeys(drift))
    return "usable (" + "; ".join(notes) + ")" if notes else None
