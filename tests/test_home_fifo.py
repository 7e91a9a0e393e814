"""Nothing planted under AGENTREVIEW_HOME can hang a command.

A FIFO opened for reading blocks until a writer comes, forever if none does. Each test plants
one (``os.mkfifo``, no writer ever) where agentreview reads or writes a file of its home, then
runs the real console script as a process with a timeout: it must finish, with its normal
answer and a warning, or with a clear error naming the file.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import Repo, manifest

from agentreview.engine.coordination import InflightRegistry, InflightRun
from agentreview.model.attestation import Attestation
from agentreview.model.errors import AgentreviewError
from agentreview.store.layout import INDEX_NAME
from agentreview.store.ledger import Ledger, LedgerKey

AGENTREVIEW = str(Path(sys.executable).parent / "agentreview")
TIMEOUT_S = 120
MSHA = "a" * 64
BASE, HEAD, OTHER_HEAD = "1" * 40, "2" * 40, "3" * 40


def cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it; a hang fails the test through the timeout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update(AGENTREVIEW_HOME=str(home), CI="true")
    return subprocess.run(
        [AGENTREVIEW, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def attestation(n: int, head: str = HEAD) -> Attestation:
    return Attestation.build(
        run_id=f"review-{n:04d}", review_id="widgets", manifest_sha=MSHA, binding="default",
        repo_remote="github.com/acme/widgets", base_sha=BASE, head_sha=head,
        lanes=[{"id": "types", "kind": "command", "status": "pass", "blocking": True, "findings": [], "durationMs": 1}],
        daemon="agentreview-test@host", rubrics=[], created_at=f"2025-01-01T00:00:{n:02d}.000Z",
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def ledger(home: Path) -> Iterator[Ledger]:
    """A ledger holding one entry, review-0001; the index is closed before a command runs."""
    led = Ledger(home / "reviews")
    led.put(attestation(1), {"repoRoot": "/src/widgets", "manifestPath": "/src/widgets/REVIEW.md"})
    led.close()
    yield led
    led.close()


def listed(home: Path) -> tuple[list[dict[str, Any]], str]:
    """``ledger --json`` rows and stderr, after checking that ``ledger`` (the table) finishes too."""
    table = cli(home, "ledger")
    assert table.returncode == 0, table.stderr
    as_json = cli(home, "ledger", "--json")
    assert as_json.returncode == 0, as_json.stderr
    return json.loads(as_json.stdout), table.stderr + as_json.stderr


# --------------------------------------------------------------------------- the ledger


def test_a_fifo_in_place_of_the_annotations_is_ignored_with_a_warning(home: Path, ledger: Ledger) -> None:
    key = LedgerKey.of(attestation(1))
    sidecar = ledger.annotations_path(*key)
    os.mkfifo(sidecar)
    rows, err = listed(home)
    assert [r["runId"] for r in rows] == ["review-0001"] and "pr" not in rows[0]
    assert f"annotations {sidecar}" in err and "not a regular file" in err


def test_a_fifo_in_place_of_an_entry_is_skipped_with_a_warning(home: Path, ledger: Ledger) -> None:
    planted = ledger.entry_path(*LedgerKey.of(attestation(2, head=OTHER_HEAD)))
    os.mkfifo(planted)
    reindexed = cli(home, "ledger", "--reindex")  # planted behind the index: found when the files are re-checked
    assert reindexed.returncode == 0, reindexed.stderr
    assert f"ledger entry {planted} is not a regular file" in reindexed.stderr
    rows, _err = listed(home)
    assert [r["runId"] for r in rows] == ["review-0001"]


def test_a_fifo_in_place_of_the_index_falls_back_to_scanning(home: Path, ledger: Ledger) -> None:
    index = home / "reviews" / INDEX_NAME
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    os.mkfifo(index)
    rows, err = listed(home)
    assert [r["runId"] for r in rows] == ["review-0001"]
    assert f"ledger index {index} cannot be used" in err and "not a regular file" in err
    assert Path(index).exists() and not Path(index).is_file(), "the planted file is reported, not silently replaced"


def test_a_directory_in_place_of_the_index_survives_reindex(home: Path, ledger: Ledger) -> None:
    index = home / "reviews" / INDEX_NAME
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.mkdir()
    proc = cli(home, "ledger", "--reindex", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["runId"] for r in json.loads(proc.stdout)] == ["review-0001"]
    assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_a_fifo_beside_the_index_falls_back_to_scanning(home: Path, ledger: Ledger, suffix: str) -> None:
    index = home / "reviews" / INDEX_NAME
    Path(f"{index}{suffix}").unlink(missing_ok=True)
    os.mkfifo(f"{index}{suffix}")
    rows, err = listed(home)
    assert [r["runId"] for r in rows] == ["review-0001"]
    assert f"{INDEX_NAME}{suffix} is not a regular file" in err


def test_a_fifo_in_place_of_the_index_lock_builds_the_index_anyway(home: Path, ledger: Ledger) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home / 'reviews' / INDEX_NAME}{suffix}").unlink(missing_ok=True)
    (home / "reviews" / ".index.lock").unlink(missing_ok=True)
    os.mkfifo(home / "reviews" / ".index.lock")
    rows, err = listed(home)
    assert [r["runId"] for r in rows] == ["review-0001"]
    assert "index lock" in err and "indexing without it" in err
    assert (home / "reviews" / INDEX_NAME).is_file()


# --------------------------------------------------------------------------- configuration


def test_a_fifo_in_place_of_config_toml_is_a_clear_error(home: Path) -> None:
    home.mkdir()
    os.mkfifo(home / "config.toml")
    proc = cli(home, "key", "--json")
    assert proc.returncode == 3, proc.stderr
    assert f"{home / 'config.toml'}: cannot read configuration: is not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["review_ed25519.pub", "review_ed25519"])
def test_a_fifo_in_place_of_a_key_file_is_a_clear_error(home: Path, name: str) -> None:
    keys = home / "keys"
    keys.mkdir(parents=True, mode=0o700)
    if name.endswith(".pub"):  # a real private key, so the public one would be restored into the FIFO
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "review_ed25519")], check=True)
        (keys / name).unlink()
    os.mkfifo(keys / name)
    proc = cli(home, "key", "--json")
    assert proc.returncode == 3, proc.stderr
    assert f"{keys / name} is not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_fifo_in_place_of_presets_toml_is_a_clear_error(home: Path) -> None:
    home.mkdir()
    os.mkfifo(home / "presets.toml")
    for args in (["presets"], ["presets", "--json"]):
        proc = cli(home, *args)
        assert proc.returncode == 3, proc.stderr
        assert f"{home / 'presets.toml'}: cannot read presets: is not a regular file" in proc.stderr
        assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- a run


@pytest.fixture
def repo(tmp_path: Path, home: Path) -> Repo:
    repo = Repo(tmp_path / "repo", home)
    text = manifest("  - id: ok\n    kind: command\n    run: 'true'\n")
    repo.commit("initial", **{"README.md": "hello\n", "REVIEW.md": text})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("feature", **{"app.txt": "v1\n"})
    return repo


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    proc.kill()
    proc.wait()


def run(repo: Repo, *args: str) -> dict[str, Any]:
    proc = cli(repo.home, "run", "--json", *args, cwd=repo.path)
    assert proc.stdout, proc.stderr
    return {**json.loads(proc.stdout), "returncode": proc.returncode, "stderr": proc.stderr}


def test_fifos_in_the_inflight_directory_cannot_hang_or_fool_supersede(
    repo: Repo, sleeper: subprocess.Popen[bytes]
) -> None:
    first = run(repo)
    assert first["returncode"] == 0 and first["verdict"] == "pass", first
    slug_dirs = [p for p in (repo.home / "reviews").iterdir() if p.is_dir()]
    assert len(slug_dirs) == 1
    inflight = slug_dirs[0] / "inflight"
    inflight.mkdir(exist_ok=True)
    # A record and a lock that are FIFOs.
    os.mkfifo(inflight / "review-fifo.json")
    os.mkfifo(inflight / "review-fifo.lock")
    # A plausible record of an older run of this line, whose lock is a FIFO: not a live run, so
    # supersede must not signal its pid (here a bystander process), and the record is cleared.
    base = repo.git("merge-base", "main", "HEAD")
    victim = {"run_id": "review-planted", "pid": sleeper.pid, "repo_root": str(repo.path), "binding": "default",
              "base_sha": base, "head_sha": repo.git("rev-parse", "HEAD")}
    (inflight / "review-planted.json").write_text(json.dumps(victim))
    os.mkfifo(inflight / "review-planted.lock")
    repo.commit("newer", **{"app.txt": "v2\n"})
    second = run(repo, "--supersede")
    assert second["returncode"] == 0 and second["verdict"] == "pass", second
    assert sleeper.poll() is None, "supersede signalled a process whose lock is not a lock"
    assert not (inflight / "review-planted.json").exists()
    assert sorted(p.name for p in inflight.iterdir()) == ["review-fifo.json", "review-fifo.lock",
                                                           "review-planted.lock"]


def test_a_fifo_in_place_of_config_toml_leaves_a_run_unsigned_not_hung(repo: Repo) -> None:
    repo.home.mkdir(parents=True, exist_ok=True)
    os.mkfifo(repo.home / "config.toml")
    result = run(repo)
    assert result["returncode"] == 0 and result["verdict"] == "pass", result
    assert "is not a regular file" in json.dumps(result)


@pytest.mark.timeout(TIMEOUT_S)
def test_supersede_writes_its_marker_over_a_planted_fifo(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    registry = InflightRegistry(tmp_path)
    registry.dir.mkdir()
    victim = InflightRun("review-old", sleeper.pid, "/src/w", "default", BASE, HEAD)
    (registry.dir / "review-old.json").write_text(json.dumps(victim.__dict__))
    held = os.open(registry.dir / "review-old.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # a live run holds its lock
        os.mkfifo(registry.dir / "review-old.superseded")
        me = InflightRun("review-new", os.getpid(), "/src/w", "default", BASE, OTHER_HEAD)
        assert registry.supersede(me, lambda _old, _new: True) == ["review-old"]
    finally:
        os.close(held)
    assert registry.superseded_by("review-old") == "review-new"
    assert sleeper.wait(60) == -signal.SIGTERM


@pytest.mark.timeout(TIMEOUT_S)
def test_advertising_over_a_planted_fifo_lock_is_a_clear_error(tmp_path: Path) -> None:
    registry = InflightRegistry(tmp_path)
    registry.dir.mkdir()
    os.mkfifo(registry.dir / "review-mine.lock")
    me = InflightRun("review-mine", os.getpid(), "/src/w", "default", BASE, HEAD)
    with pytest.raises(AgentreviewError, match=r"review-mine\.lock: not a regular file"), registry.advertise(me):
        pass
    assert (registry.dir / "review-mine.lock").exists(), "a file we refused is not ours to remove"
    assert registry.running() == []


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_fifo_in_place_of_the_index_cannot_hang_the_checkpoint_beside_a_fetch(home: Path, suffix: str) -> None:
    """A fetch copies the index's log into it on a connection of its own while it imports; with a FIFO planted
    where the index (or its log) lives, that connection must not be opened at all (sqlite would wait on it
    forever, and the fetch with it)."""
    reviews = home / "reviews"
    reviews.mkdir(parents=True, exist_ok=True)
    os.mkfifo(reviews / f"{INDEX_NAME}{suffix}")
    if suffix:
        (reviews / INDEX_NAME).write_bytes(b"")
    probe = (
        "import sys; from pathlib import Path; from agentreview.store.index import LedgerIndex; "
        "index = LedgerIndex(Path(sys.argv[1]), print); index.digests('x/foreign'); index.checkpoint(); print('done')"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(reviews)], capture_output=True, text=True,
                          timeout=TIMEOUT_S)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.strip().endswith("done"), proc.stderr
