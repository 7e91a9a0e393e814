"""``agentreview mcp`` does only what its client may: inside the client's roots, a bounded number of runs,
cancelling only its own, writing exports through no link.

Every test drives the real server (a subprocess) with the SDK's stdio client over real git
repositories. The attacks: a ``cwd`` and a ``manifestPath`` in another repository; an ``outPath``
that is a link to a file outside, that climbs out with ``..``, that names
``~/.ssh/authorized_keys`` of a temporary HOME, or that goes through a linked folder (each
refused, the target's bytes unchanged); more runs than ``--max-runs``; cancelling a run another
process started. A client that declares roots confines the server to them, and a changed root
list (``notifications/roots/list_changed``) is read again.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest, wait_for

pytestmark = pytest.mark.timeout(300)

PASSING = manifest("  - id: ok\n    kind: command\n    run: 'true'\n", extra="verdict: { exportDir: .reviews }\n")
SLOW = manifest("  - id: slow\n    kind: command\n    run: 'sleep 120'\n    timeoutMs: 200000\n")


async def until(predicate: Callable[[], Awaitable[bool]], what: str, timeout: float = 120.0) -> None:
    """Poll ``predicate`` every 100 ms; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, what
        await anyio.sleep(0.1)


def reviewed(repo: Repo, text: str = PASSING) -> Repo:
    repo.commit("add review", **{"REVIEW.md": text})
    repo.commit("feature work", **{"src__app.txt": "v1\n"})
    return repo


@contextlib.asynccontextmanager
async def connect(
    repo: Repo, start: Path, *flags: str, roots: list[Path] | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """The server started in ``start`` with ``flags``; with ``roots`` the client declares them (a list the
    test may change, then send roots/list_changed)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentreview", "mcp", *flags], env=env or repo.env, cwd=str(start)
    )

    async def list_roots(_context: Any) -> types.ListRootsResult:
        assert roots is not None
        return types.ListRootsResult(roots=[types.Root(uri=path.as_uri()) for path in roots])

    callback = list_roots if roots is not None else None
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(
            read, write, list_roots_callback=callback
        ) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any], *, error: bool = False) -> Any:
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error is error, text
    return text if error else json.loads(text)


def refused_in_one_line(text: str, *words: str) -> None:
    assert "\n" not in text.strip(), text
    for word in words:
        assert word in text, text


@pytest.fixture
def two(tmp_path: Path) -> tuple[Repo, Repo, Path]:
    """``inside/repo`` (the server starts in ``inside``) and ``outside/repo``, each with a passing review."""
    inside = reviewed(feature_repo(tmp_path / "inside"))
    outside = Repo(tmp_path / "outside" / "repo", inside.home)
    outside.commit("initial", **{"README.md": "hello\n"})
    outside.git("switch", "-q", "-c", "feature")
    reviewed(outside, manifest(f"  - id: pwn\n    kind: command\n    run: 'touch {tmp_path}/pwned'\n"))
    return inside, outside, tmp_path


def test_cwd_and_manifest_outside_the_start_directory_are_refused(two: tuple[Repo, Repo, Path]) -> None:
    inside, outside, tmp = two

    async def main() -> None:
        async with connect(inside, tmp / "inside") as session:
            text = await call(session, "review_run", {"cwd": str(outside.path)}, error=True)
            refused_in_one_line(text, "cwd", "outside the roots", str(tmp / "inside"))
            text = await call(
                session, "review_run", {"cwd": str(inside.path), "manifestPath": str(outside.path / "REVIEW.md")},
                error=True,
            )  # fmt: skip
            refused_in_one_line(text, "manifestPath", "outside the roots")
            text = await call(session, "review_ledger", {"cwd": str(outside.path)}, error=True)
            refused_in_one_line(text, "cwd", "outside the roots")
            text = await call(session, "review_export", {"runId": "review-" + "0" * 8 + "-0000-4000-8000-"
                                                          + "0" * 12, "cwd": str(outside.path)}, error=True)
            refused_in_one_line(text, "cwd", "outside the roots")
            done = await call(session, "review_run", {"cwd": str(inside.path)})
            assert done["verdict"] == "pass", done

    anyio.run(main)
    assert not (tmp / "pwned").exists()  # the other repository's commands never ran


def test_a_root_on_the_command_line_lets_the_server_work_there(two: tuple[Repo, Repo, Path]) -> None:
    inside, outside, tmp = two

    async def main() -> None:
        async with connect(inside, tmp / "inside", "--root", str(tmp / "outside")) as session:
            done = await call(session, "review_run", {"cwd": str(outside.path)})
            assert done["status"] == "done", done

    anyio.run(main)
    assert (tmp / "pwned").exists()


def test_a_client_with_roots_confines_the_server_to_them_and_changes_are_read_again(
    two: tuple[Repo, Repo, Path],
) -> None:
    inside, outside, tmp = two
    declared = [outside.path]

    async def main() -> None:
        # started in `inside`, but the client's roots are what count
        async with connect(inside, tmp / "inside", roots=declared) as session:
            text = await call(session, "review_run", {"cwd": str(inside.path), "wait": False}, error=True)
            refused_in_one_line(text, "outside the roots", "the client's roots", str(outside.path))
            ledger = await call(session, "review_ledger", {"cwd": str(outside.path)})
            assert ledger["total"] == 0
            declared[:] = [inside.path]
            await session.send_roots_list_changed()

            async def now_inside() -> bool:
                result = await session.call_tool("review_ledger", {"cwd": str(inside.path)})
                return not result.is_error

            # the notification is handled before a later call, but poll with a bound
            await until(now_inside, "the changed roots were never read")
            await call(session, "review_ledger", {"cwd": str(outside.path)}, error=True)

    anyio.run(main)


def test_a_ledger_listing_without_cwd_shows_only_the_repositories_inside_the_roots(
    two: tuple[Repo, Repo, Path],
) -> None:
    """The attack: a client confined to ``inside`` asks review_ledger() (no cwd), or names the other
    repository by repoRemote or by a range of two shas, to read ``outside``'s reviews, settled or running."""
    inside, outside, tmp = two
    mine = inside.run_json(expect=0)["attestation"]
    theirs = outside.run_json(expect=0)["attestation"]
    outside.commit("slow review", **{"REVIEW.md": SLOW})
    detached = subprocess.run([*AGENTREVIEW, "run", "--detach", "--json"], cwd=outside.path, env=outside.env,
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert detached.returncode == 0, detached.stderr
    running = json.loads(detached.stdout)["runId"]
    target = theirs["target"]
    attempts: list[dict[str, Any]] = [
        {}, {"includeRunning": True}, {"repoRemote": target["repoRemote"], "includeRunning": True},
        {"repoRemote": target["repoRemote"], "cwd": str(inside.path)},
        {"range": f"{target['baseSha']}..{target['headSha']}"}, {"range": theirs["rangeSha"]},
    ]  # fmt: skip

    async def listed(session: ClientSession, **filters: Any) -> list[str]:
        return [row["runId"] for row in (await call(session, "review_ledger", filters))["attestations"]]

    async def main() -> None:
        async with connect(inside, tmp / "inside", "--root", str(tmp / "outside")) as session:
            # the other run is listed once its record names its repository (a detached CLI run's does soon)
            for _ in range(600):
                if running in await listed(session, includeRunning=True):
                    break
                await anyio.sleep(0.1)
            assert await listed(session, includeRunning=True) == [running, theirs["runId"], mine["runId"]]
        async with connect(inside, tmp / "inside") as session:  # no client roots: the start directory
            for filters in attempts:
                rows = await listed(session, **filters)
                assert rows == ([mine["runId"]] if "repoRemote" not in filters and "range" not in filters else [])
            for exported in (
                {"runId": theirs["runId"]}, {"runId": theirs["runId"], "cwd": str(inside.path), "outPath": "t.json"},
                {"repoRemote": target["repoRemote"], "rangeSha": theirs["rangeSha"], "outPath": "t.json",
                 "cwd": str(inside.path)},
            ):  # fmt: skip
                text = await call(session, "review_export", exported, error=True)
                refused_in_one_line(text, "recorded in a repository outside the roots", "pass cwd")
        async with connect(inside, tmp / "inside", roots=[outside.path]) as session:  # the client's roots
            assert await listed(session, includeRunning=True) == [running, theirs["runId"]]
            assert await listed(session, repoRemote=mine["target"]["repoRemote"]) == []

    try:
        anyio.run(main)
    finally:
        assert not (inside.path / "t.json").exists()
        subprocess.run([*AGENTREVIEW, "cancel", running], cwd=outside.path, env=outside.env, capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_clone_outside_the_roots_is_the_same_repository_but_not_its_export_folder(tmp_path: Path) -> None:
    """Two clones of one remote share their ledger entries: the one inside the roots lists and exports
    (to an outPath of its own) what the other recorded, but the default export folder, in the other
    clone, is refused, and so is an export that names no cwd."""
    inside = feature_repo(tmp_path / "inside")
    outside = Repo(tmp_path / "outside" / "repo", inside.home)
    outside.commit("initial", **{"README.md": "hello\n"})
    outside.git("switch", "-q", "-c", "feature")
    for clone in (inside, outside):
        clone.git("remote", "add", "origin", "https://github.com/example/shared.git")
    theirs = reviewed(outside).run_json(expect=0)["attestation"]

    async def main() -> None:
        async with connect(inside, tmp_path / "inside") as session:
            own = await call(session, "review_ledger", {"cwd": str(inside.path)})
            assert [row["runId"] for row in own["attestations"]] == [theirs["runId"]]
            assert (await call(session, "review_ledger", {}))["total"] == 0  # recorded outside the roots
            text = await call(session, "review_export", {"runId": theirs["runId"]}, error=True)
            refused_in_one_line(text, "outside the roots", "pass cwd")
            text = await call(session, "review_export", {"runId": theirs["runId"], "cwd": str(inside.path)},
                              error=True)  # fmt: skip
            refused_in_one_line(text, "export folder", str(outside.path), "pass outPath")
            written = await call(session, "review_export", {"runId": theirs["runId"], "cwd": str(inside.path),
                                                            "outPath": "out/theirs.json"})  # fmt: skip
            assert Path(written["path"]) == (inside.path / "out" / "theirs.json").resolve()

    anyio.run(main)
    assert not (outside.path / ".reviews").exists()


def test_out_path_is_confined_and_never_follows_a_link(two: tuple[Repo, Repo, Path], tmp_path: Path) -> None:
    inside, _outside, tmp = two
    home = tmp / "fakehome"
    (home / ".ssh").mkdir(parents=True)
    keys = home / ".ssh" / "authorized_keys"
    keys.write_text("ssh-ed25519 AAAA the-owner\n")
    secret_dir = tmp / "elsewhere"
    secret_dir.mkdir()
    victim = secret_dir / "victim.json"
    victim.write_text("untouched\n")
    (inside.path / ".reviews").mkdir()
    os.symlink(victim, inside.path / ".reviews" / "link.json")
    os.symlink(secret_dir, inside.path / "linked-dir")
    env = {**inside.env, "HOME": str(home)}

    async def main() -> None:
        async with connect(inside, tmp / "inside", env=env) as session:
            run_id = (await call(session, "review_run", {"cwd": str(inside.path)}))["runId"]
            attempts = {
                ".reviews/link.json": "link",
                str(inside.path / ".reviews" / "link.json"): "link",
                "linked-dir/x.json": "link",
                "../../elsewhere/victim.json": "'..'",
                ".reviews/../../../elsewhere/victim.json": "'..'",
                str(keys): "outside",
                "~/.ssh/authorized_keys": "outside",
                str(victim): "outside",
            }
            for out_path, word in attempts.items():
                text = await call(
                    session, "review_export", {"runId": run_id, "outPath": out_path, "cwd": str(inside.path)},
                    error=True,
                )  # fmt: skip
                refused_in_one_line(text, "outPath" if word != "link" else "link", word)
            # inside a root, and into the export folder: written
            ok = await call(
                session, "review_export", {"runId": run_id, "outPath": "out/a.json", "cwd": str(inside.path)}
            )
            assert Path(ok["path"]) == (inside.path / "out" / "a.json").resolve()
            assert json.loads(Path(ok["path"]).read_text())["runId"] == run_id
            default = await call(session, "review_export", {"runId": run_id})
            assert Path(default["path"]).parent == (inside.path / ".reviews").resolve()

    anyio.run(main)
    assert keys.read_text() == "ssh-ed25519 AAAA the-owner\n"
    assert victim.read_text() == "untouched\n"
    assert (inside.path / ".reviews" / "link.json").is_symlink()
    assert sorted(p.name for p in secret_dir.iterdir()) == ["victim.json"]


def test_the_confined_writer_replaces_a_link_swapped_in_never_writes_through_it(tmp_path: Path) -> None:
    """The last moment: the name becomes a link after the checks; the rename replaces the link itself."""
    from agentreview.mcp.args import ToolFailure
    from agentreview.mcp.confine import write_below

    base = tmp_path / "repo"
    (base / "exports").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    os.symlink(victim, base / "exports" / "a.json")
    with pytest.raises(ToolFailure, match="link"):
        write_below(base, ("exports", "a.json"), b"{}\n")
    os.symlink(tmp_path, base / "hop")
    with pytest.raises(ToolFailure, match="link"):
        write_below(base, ("hop", "victim"), b"{}\n")
    assert victim.read_text() == "untouched\n"
    written = write_below(base, ("exports", "new", "b.json"), b"{}\n")
    assert written.read_bytes() == b"{}\n" and not written.is_symlink()


def test_runs_in_flight_are_bounded_and_cancel_stops_only_this_servers_runs(tmp_path: Path) -> None:
    repo = reviewed(feature_repo(tmp_path), SLOW)
    foreign = subprocess.run(
        [*AGENTREVIEW, "run", "--detach", "--json"], cwd=repo.path, env=repo.env, capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert foreign.returncode == 0, foreign.stderr
    foreign_id = json.loads(foreign.stdout)["runId"]

    async def main() -> None:
        async with connect(repo, tmp_path, "--max-runs", "1") as session:
            mine = (await call(session, "review_run", {"cwd": str(repo.path), "wait": False}))["runId"]
            text = await call(session, "review_run", {"cwd": str(repo.path), "wait": False}, error=True)
            refused_in_one_line(text, "still running", "--max-runs", "1")
            text = await call(session, "review_cancel", {"runId": foreign_id}, error=True)
            refused_in_one_line(text, "not started by this server", "--cancel-any")
            cancelled = await call(session, "review_cancel", {"runId": mine})
            assert cancelled["cancelled"] is True, cancelled

            async def settled() -> bool:
                view = await call(session, "review_status", {"runId": mine})
                return view["status"] != "running"

            await until(settled, "the cancelled run never settled")
            again = await call(session, "review_run", {"cwd": str(repo.path), "wait": False})
            await call(session, "review_cancel", {"runId": again["runId"]})
        async with connect(repo, tmp_path, "--cancel-any") as session:
            cancelled = await call(session, "review_cancel", {"runId": foreign_id})
            assert cancelled["cancelled"] is True, cancelled

    anyio.run(main)

    def foreign_over() -> bool:
        proc = subprocess.run([*AGENTREVIEW, "status", foreign_id, "--json"], cwd=repo.path, env=repo.env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        return json.loads(proc.stdout)["status"] != "running"

    assert wait_for(foreign_over, timeout=60)


@pytest.mark.parametrize("flags", [["--max-runs", "0"], ["--root", "/no/such/dir"]], ids=["max-runs", "root"])
def test_bad_server_options_exit_64_with_one_line(tmp_path: Path, flags: list[str]) -> None:
    proc = subprocess.run([*AGENTREVIEW, "mcp", *flags], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 64, proc.stderr
    assert flags[0] in proc.stderr and "Traceback" not in proc.stderr


def test_review_presets_answers_what_agentreview_presets_lists(tmp_path: Path) -> None:
    repo = feature_repo(tmp_path)
    repo.home.mkdir(parents=True, exist_ok=True)
    (repo.home / "presets.toml").write_text('[presets.mine]\nprovider = "exec"\ncommand = ["/no/such/reviewer"]\n')
    cli = subprocess.run([*AGENTREVIEW, "presets", "--json"], cwd=repo.path, env=repo.env, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert cli.returncode == 0, cli.stderr

    async def main() -> None:
        async with connect(repo, tmp_path) as session:
            tool = next(t for t in (await session.list_tools()).tools if t.name == "review_presets")
            assert tool.title and tool.annotations and tool.annotations.read_only_hint is True
            assert tool.annotations.destructive_hint is False and tool.annotations.open_world_hint is False
            assert tool.description and tool.description.split(": ")[0] == (
                "Call to see which reviewer presets agent lanes can name and whether each can run on this host"
            )
            assert tool.output_schema and set(tool.output_schema["required"]) == {"presets", "total"}
            answer = await call(session, "review_presets", {})
            assert answer["presets"] == json.loads(cli.stdout)
            assert answer["total"] == len(answer["presets"]) >= 1
            mine = next(row for row in answer["presets"] if row["name"] == "mine")
            assert mine["source"] == "user"

    anyio.run(main)
