"""``review_run`` runs that belong to their request, and runIds that hold, against a real ``agentreview mcp``.

The server is a real subprocess (driven by the MCP SDK's stdio client, or by raw JSON-RPC lines
where the test must close the connection itself), over real git repositories with command
lanes. A slow lane is ``exec sleep`` behind a pid file, so the test knows the lane's process and
can assert that it is gone; a gated lane waits for a file the test creates, so "started" is
observed before "finished" without relying on timing.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest
from test_mcp import call, until

from agentreview.runs.registry import RunRegistry

pytestmark = pytest.mark.timeout(300)

SLOW_S = "302"


@contextlib.asynccontextmanager
async def connect(repo: Repo) -> AsyncIterator[ClientSession]:
    """``agentreview mcp`` started by the SDK's stdio client, initialized, logging collected by the caller."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentreview", "mcp"], env=repo.env, cwd=str(repo.home.parent)
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, logging_callback=LOGS.collect) as session,
        ):
            await session.initialize()
            yield session


class _Logs:
    """The ``notifications/message`` entries the server sent (one client at a time per test)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any]] = []

    async def collect(self, params: Any) -> None:
        self.entries.append((params.level, params.data))


LOGS = _Logs()


WAIT_S = 90.0  # a lane's start or end, polled: the margin a loaded 2-core machine needs


def serve(repo: Repo, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    LOGS.entries.clear()

    async def main() -> None:
        async with connect(repo) as session:
            await body(session)

    anyio.run(main)


def poll(predicate: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def slow_lane(pidfile: Path) -> str:
    """A lane that writes its pid, then becomes ``sleep 302``: its process is the pid in the file."""
    return f"  - id: slow\n    kind: command\n    run: 'echo $$ > {pidfile}; exec sleep {SLOW_S}'\n"


def gated_lane(lane_id: str, gate: Path) -> str:
    """A lane that passes once ``gate`` exists (bounded: it fails after two minutes)."""
    loop = f"for i in $(seq 1 1200); do [ -e {gate} ] && exit 0; sleep 0.1; done; exit 1"
    return f"  - id: {lane_id}\n    kind: command\n    run: '{loop}'\n"


def lane_alive(pidfile: Path) -> bool:
    """Whether the slow lane's process (the pid in ``pidfile``, still ``sleep 302``) is alive."""
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError):
        return False
    return cmdline == f"sleep\0{SLOW_S}\0".encode() and state != "Z"


def run_view(repo: Repo, run_id: str) -> dict[str, Any]:
    view = RunRegistry(repo.home).view(run_id)
    assert view is not None, run_id
    return view


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return feature_repo(tmp_path)


def start_feature(repo: Repo, checks: str, extra: str = "verdict: { exportDir: .reviews }\n") -> str:
    repo.commit("add review", **{"REVIEW.md": manifest(checks, extra=extra)})
    return repo.commit("feature work", **{"src__app.txt": "v1\n"})


# ---------------------------------------------------------------- the runId first, then each lane


def test_a_waiting_run_sends_its_run_id_first_then_each_lane_started_and_finished(repo: Repo, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    start_feature(repo, gated_lane("gated", gate) + "  - id: quick\n    kind: command\n    run: 'true'\n")

    async def body(session: ClientSession) -> None:
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))
            if message == "lane gated: started":
                gate.touch()  # the lane was seen running: now let it finish

        result = await session.call_tool("review_run", {"cwd": str(repo.path)}, progress_callback=on_progress)
        view = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert not result.is_error and view["status"] == "done" and view["verdict"] == "pass", view
        run_id = view["runId"]
        assert progress[0] == (0, None, f"review {run_id}: started"), progress
        assert [done for done, _, _ in progress] == [0, 1, 2, 3, 4]
        assert all(total == 4 for _, total, _ in progress[1:]), progress
        messages = [m for _, _, m in progress]
        for lane in ("gated", "quick"):
            assert messages.index(f"lane {lane}: started") < messages.index(f"lane {lane}: pass"), messages
        # the same steps as log messages, each naming the run
        events = [data for level, data in LOGS.entries if isinstance(data, dict) and data.get("runId") == run_id]
        assert events[0]["event"] == "run_started" and run_id in events[0]["message"], LOGS.entries
        assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "done", events
        assert sorted((e["event"], e.get("lane")) for e in events[1:-1]) == [
            ("lane_finished", "gated"), ("lane_finished", "quick"), ("lane_started", "gated"), ("lane_started", "quick")
        ]  # fmt: skip
        assert {level for level, _ in LOGS.entries} == {"info"}
        # the run view's new fields
        assert view["cached"] is False and view["reviewId"] == "demo" and "signingError" not in view, view
        ledger_path = Path(view["ledgerPath"])
        assert ledger_path in repo.ledger_files()
        assert json.loads(ledger_path.read_text())["attestation"]["runId"] == run_id

    serve(repo, body)


def test_a_signing_failure_is_in_the_run_view(repo: Repo) -> None:
    repo.git("config", "user.email", "not an address")  # the signing principal, which cannot contain spaces
    start_feature(repo, "  - id: ok\n    kind: command\n    run: 'true'\n")

    async def body(session: ClientSession) -> None:
        view = await call(session, "review_run", {"cwd": str(repo.path)})
        assert view["verdict"] == "pass" and "allowed_signers" in view["signingError"], view
        assert "signature" not in view["attestation"]["attestor"]
        assert (await call(session, "review_status", {"runId": view["runId"]}))["signingError"] == view["signingError"]

    serve(repo, body)


# ---------------------------------------------------------------- runs that belong to their request


def test_a_cancelled_request_cancels_its_run_and_records_nothing(repo: Repo, tmp_path: Path) -> None:
    pidfile = tmp_path / "slow.pid"
    start_feature(repo, slow_lane(pidfile))

    async def body(session: ClientSession) -> None:
        sent: list[str] = []

        async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
            sent.append(message or "")

        async with anyio.create_task_group() as tg:

            async def waiting_call() -> None:
                await session.call_tool("review_run", {"cwd": str(repo.path)}, progress_callback=on_progress)

            tg.start_soon(waiting_call)

            async def lane_running() -> bool:
                return bool(sent) and lane_alive(pidfile)

            await until(lane_running, WAIT_S)
            tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled for the call
        run_id = sent[0].removeprefix("review ").removesuffix(": started")
        assert run_id.startswith("review-"), sent

        async def cancelled() -> bool:
            return (await call(session, "review_status", {"runId": run_id}))["status"] == "cancelled"

        await until(cancelled, WAIT_S)

        async def lane_gone() -> bool:
            return not lane_alive(pidfile)

        await until(lane_gone, 30)
        assert (await call(session, "review_ledger", {"includeRunning": True}))["total"] == 0

    serve(repo, body)
    assert repo.ledger_files() == []


class RawServer:
    """``agentreview mcp`` spoken to in raw JSON-RPC lines, so the test decides how the connection ends."""

    def __init__(self, repo: Repo) -> None:
        self.proc = subprocess.Popen(
            [*AGENTREVIEW, "mcp"], cwd=repo.home.parent, env=repo.env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def next(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 90.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if predicate(message):
                return message
            assert time.monotonic() < deadline, "timed out"

    def initialize(self) -> None:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        self.send({"id": 1, "method": "initialize", "params": hello})
        self.next(lambda m: m.get("id") == 1)
        self.send({"method": "notifications/initialized"})

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_a_client_that_goes_away_takes_its_waiting_run_with_it(repo: Repo, tmp_path: Path, how: str) -> None:
    pidfile = tmp_path / "slow.pid"
    start_feature(repo, slow_lane(pidfile))
    server = RawServer(repo)
    try:
        server.initialize()
        server.send({"id": 2, "method": "tools/call", "params": {
            "name": "review_run", "arguments": {"cwd": str(repo.path)}, "_meta": {"progressToken": "p"}}})  # fmt: skip
        first = server.next(lambda m: m.get("method") == "notifications/progress")
        assert first["params"]["progressToken"] == "p" and first["params"]["progress"] == 0, first
        run_id = first["params"]["message"].removeprefix("review ").removesuffix(": started")
        logged = server.next(lambda m: m.get("method") == "notifications/message")
        assert logged["params"]["data"]["runId"] == run_id and logged["params"]["data"]["event"] == "run_started"
        poll(lambda: lane_alive(pidfile))
        if how == "SIGTERM":
            server.proc.send_signal(signal.SIGTERM)
        else:
            assert server.proc.stdin is not None
            server.proc.stdin.close()
        server.proc.wait(timeout=90)
    finally:
        server.close()
    poll(lambda: run_view(repo, run_id)["status"] == "cancelled")
    poll(lambda: not lane_alive(pidfile), 30)
    assert repo.ledger_files() == []


def test_a_detached_call_keeps_its_run_when_the_request_is_cancelled(repo: Repo, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    start_feature(repo, gated_lane("gated", gate))

    async def body(session: ClientSession) -> None:
        sent: list[str] = []

        async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
            sent.append(message or "")

        async with anyio.create_task_group() as tg:

            async def waiting_call() -> None:
                await session.call_tool("review_run", {"cwd": str(repo.path), "detach": True},
                                        progress_callback=on_progress)  # fmt: skip

            tg.start_soon(waiting_call)

            async def lane_started() -> bool:
                return "lane gated: started" in sent

            await until(lane_started, WAIT_S)
            tg.cancel_scope.cancel()
        run_id = sent[0].removeprefix("review ").removesuffix(": started")
        # the cancelled request left the run alone: it is still running, then finishes once the gate opens
        assert (await call(session, "review_status", {"runId": run_id}))["status"] == "running"
        gate.touch()

        async def done() -> bool:
            return (await call(session, "review_status", {"runId": run_id}))["status"] == "done"

        await until(done, WAIT_S)
        view = await call(session, "review_status", {"runId": run_id})
        assert view["verdict"] == "pass" and view["attestation"]["runId"] == run_id, view

    serve(repo, body)
    assert len(repo.ledger_files()) == 1


# ---------------------------------------------------------------- runIds that hold


def test_a_cache_hit_is_cached_and_every_run_id_keeps_resolving(repo: Repo) -> None:
    head = start_feature(repo, "  - id: ok\n    kind: command\n    run: 'true'\n")

    async def body(session: ClientSession) -> None:
        first = await call(session, "review_run", {"cwd": str(repo.path)})
        assert first["cached"] is False
        hit = await call(session, "review_run", {"cwd": str(repo.path)})
        # answered from the ledger: its own runId (the one sent at its start), cached, the attestation it serves
        assert hit["cached"] is True and hit["runId"] != first["runId"], hit
        assert hit["attestation"] == first["attestation"] and hit["ledgerPath"] == first["ledgerPath"]
        status = await call(session, "review_status", {"runId": hit["runId"]})
        assert status["cached"] is True and status["attestation"]["runId"] == first["runId"]
        exported = await call(session, "review_export", {"runId": hit["runId"]})
        assert exported["runId"] == first["runId"] and exported["verdict"] == "pass"
        assert Path(exported["path"]) == repo.path / ".reviews" / f"demo-default-{head[:12]}.json"
        again = await call(session, "review_export", {"runId": first["runId"], "outPath": "out/first.json",
                                                      "cwd": str(repo.path)})  # fmt: skip
        assert again["runId"] == first["runId"]
        # a fresh run of the same range replaces the entry: the earlier runIds say they were superseded
        fresh = await call(session, "review_run", {"cwd": str(repo.path), "nocache": True})
        assert fresh["cached"] is False and fresh["attestation"]["runId"] == fresh["runId"]
        for earlier in (first["runId"], hit["runId"]):
            view = await call(session, "review_status", {"runId": earlier})
            assert view["status"] == "done" and view["superseded"] is True, view
            assert view["supersededBy"] == fresh["runId"] and "attestation" not in view, view
            text = await call(session, "review_export", {"runId": earlier}, error=True)
            assert f"superseded: run '{fresh['runId']}'" in text and "\n" not in text, text
        rows = (await call(session, "review_ledger", {"cwd": str(repo.path)}))["attestations"]
        assert [row["runId"] for row in rows] == [fresh["runId"]]

    serve(repo, body)


def test_a_cached_run_id_resolves_after_its_record_is_pruned_then_says_it_expired(repo: Repo) -> None:
    """A cache hit's runId is in no ledger entry: pruning its record keeps it in ``runs/served/``, so it
    still resolves to the attestation it served; past that bound it is an unknown-or-expired error."""
    start_feature(repo, "  - id: ok\n    kind: command\n    run: 'true'\n")
    registry = RunRegistry(repo.home)

    async def body(session: ClientSession) -> None:
        first = await call(session, "review_run", {"cwd": str(repo.path)})
        hits = [await call(session, "review_run", {"cwd": str(repo.path)}) for _ in range(2)]
        assert all(hit["cached"] is True for hit in hits), hits
        registry.prune(keep=0)  # every finished record goes; the cached ones are kept as served
        for run_id in (first["runId"], *(hit["runId"] for hit in hits)):
            assert not registry.record_path(run_id).exists()
        for hit in hits:
            view = await call(session, "review_status", {"runId": hit["runId"]})
            assert (view["runId"], view["status"], view["cached"]) == (hit["runId"], "done", True), view
            assert view["attestation"] == first["attestation"] and view["ledgerPath"] == first["ledgerPath"]
            exported = await call(session, "review_export", {"runId": hit["runId"]})
            assert exported["runId"] == first["runId"]
        # the served records are bounded: a later cache hit pruned with room for one keeps only itself
        await call(session, "review_run", {"cwd": str(repo.path)})
        registry.prune(keep=0, keep_served=1)
        oldest = hits[0]["runId"]
        for tool in ("review_status", "review_export"):
            text = await call(session, tool, {"runId": oldest}, error=True)
            assert "\n" not in text and f"review run '{oldest}' not found: unknown on this host, or expired" in text
            assert "review_ledger" in text, text
        assert (await call(session, "review_status", {"runId": first["runId"]}))["cached"] is False  # its own entry

    serve(repo, body)


def test_a_run_answered_from_the_ledger_has_its_record_removed_and_still_resolves(repo: Repo) -> None:
    """A run whose record was pruned still resolves from the ledger, with its ledgerPath."""
    start_feature(repo, "  - id: ok\n    kind: command\n    run: 'true'\n")

    async def body(session: ClientSession) -> None:
        first = await call(session, "review_run", {"cwd": str(repo.path)})
        RunRegistry(repo.home).record_path(first["runId"]).unlink()
        view = await call(session, "review_status", {"runId": first["runId"]})
        assert (view["status"], view["cached"], view["reviewId"]) == ("done", False, "demo"), view
        assert view["ledgerPath"] == first["ledgerPath"] and view["attestation"] == first["attestation"]

    serve(repo, body)


def test_ledger_subtree_lists_the_sessions_under_a_requester(repo: Repo) -> None:
    start_feature(repo, "  - id: ok\n    kind: command\n    run: 'true'\n")

    async def body(session: ClientSession) -> None:
        ids = {}
        for n, requester in enumerate(("lead", "lead/helper-1", "leader")):
            repo.commit(f"step {n}", **{f"src__step{n}.txt": "x\n"})  # a new range each: no cache hit
            asked = {"cwd": str(repo.path), "requesterSessionId": requester}
            ids[requester] = (await call(session, "review_run", asked))["runId"]

        async def listed(**filters: Any) -> list[str]:
            return [row["runId"] for row in (await call(session, "review_ledger", filters))["attestations"]]

        assert await listed(requesterSessionId="lead") == [ids["lead"]]
        assert sorted(await listed(requesterSessionId="lead", subtree=True)) == sorted(
            [ids["lead"], ids["lead/helper-1"]]
        )
        assert await listed(requesterSessionId="lead", subtree=True, limit=1) == [ids["lead/helper-1"]]
        text = await call(session, "review_ledger", {"subtree": True}, error=True)
        assert "subtree needs requesterSessionId" in text

    serve(repo, body)


def test_running_rows_come_first_newest_first_and_a_just_started_run_is_listed(tmp_path: Path) -> None:
    one = feature_repo(tmp_path)
    two = Repo(tmp_path / "repo2", tmp_path / "home")
    two.commit("initial", **{"README.md": "hello\n"})
    two.git("switch", "-q", "-c", "feature")
    gates = {"one": tmp_path / "gate-one", "two": tmp_path / "gate-two"}
    start_feature(one, gated_lane("gated", gates["one"]))
    start_feature(two, gated_lane("gated", gates["two"]))

    async def body(session: ClientSession) -> None:
        first = (await call(session, "review_run", {"cwd": str(one.path), "wait": False}))["runId"]
        # listed under its repository from the moment review_run answered
        rows = (await call(session, "review_ledger", {"cwd": str(one.path), "includeRunning": True}))["attestations"]
        assert [row["runId"] for row in rows] == [first]

        second = (await call(session, "review_run", {"cwd": str(two.path), "wait": False}))["runId"]
        rows = (await call(session, "review_ledger", {"includeRunning": True}))["attestations"]
        assert [row["runId"] for row in rows] == [second, first] and rows[0]["status"] == "running", rows
        for gate in gates.values():
            gate.touch()

        async def settled() -> bool:
            views = [await call(session, "review_status", {"runId": r}) for r in (first, second)]
            return all(v["status"] == "done" for v in views)

        await until(settled, WAIT_S)
        rows = (await call(session, "review_ledger", {"includeRunning": True}))["attestations"]
        assert {row["runId"] for row in rows} == {first, second} and all("status" not in row for row in rows)

    serve(one, body)
