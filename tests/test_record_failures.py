"""Recording on a file system that refuses the write: one clear line, exit 3, no debris.

The file systems are real: a small tmpfs mounted in a private mount namespace (``unshare
--user --map-root-user --mount``, so no privileges are needed and the mount vanishes with the
namespace) and filled with ``cat /dev/zero`` — by the test before the run, or by a lane during
it, so that the disk is full exactly when the run records — or remounted read-only. The
file-size limit (``RLIMIT_FSIZE``, with SIGXFSZ ignored) is the one simulated cause.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest

# Runs "$@" with a fresh tmpfs at $FS_DIR: "full" fills it first, "ro" makes it read-only, "lane"
# leaves the filling to the review's own lane. What is left on it is listed before it vanishes.
ON_SMALL_FS = r"""
set -e
mount -t tmpfs -o size=512k tmpfs "$FS_DIR"
mkdir -p "$FS_DIR/pre"
case "$FS_MODE" in
  full) cat /dev/zero > "$FS_DIR/filler" 2>/dev/null || true ;;
  ro) mount -o remount,ro "$FS_DIR" ;;
esac
set +e
"$@" >"$OUT_DIR/stdout" 2>"$OUT_DIR/stderr"
echo $? >"$OUT_DIR/rc"
find "$FS_DIR" -mindepth 1 -printf '%P\t%s\n' >"$OUT_DIR/listing"
"""
UNSHARE = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def _namespaces_available(tmp: Path) -> bool:
    probe = tmp / "probe"
    probe.mkdir()
    try:
        done = subprocess.run(
            [*UNSHARE, "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.fixture(scope="module")
def small_fs_available(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not _namespaces_available(tmp_path_factory.mktemp("probe")):
        pytest.skip("this kernel refuses unprivileged mount namespaces: no real small file system to fill")


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    left: dict[str, int]  # path on the small file system -> size, after the run


def on_small_fs(repo: Repo, fs_dir: Path, mode: str, *args: str, env: dict[str, str] | None = None) -> Outcome:
    out = fs_dir.parent / f"out-{fs_dir.name}-{time.monotonic_ns()}"
    out.mkdir()
    fs_dir.mkdir(parents=True, exist_ok=True)
    run_env = {**(env or repo.env), "FS_DIR": str(fs_dir), "FS_MODE": mode, "OUT_DIR": str(out)}
    subprocess.run(
        [*UNSHARE, "sh", "-c", ON_SMALL_FS, "sh", *AGENTREVIEW, "run", *args],
        cwd=repo.path, env=run_env, stdin=subprocess.DEVNULL, timeout=120, check=True,
    )
    left = {}
    for line in (out / "listing").read_text().splitlines():
        name, size = line.rsplit("\t", 1)
        left[name] = int(size)
    return Outcome(int((out / "rc").read_text()), (out / "stdout").read_text(), (out / "stderr").read_text(), left)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = feature_repo(tmp_path)
    # the signing key exists before the ledger's file system fills up
    subprocess.run([*AGENTREVIEW, "key"], cwd=r.path, env=r.env, capture_output=True, check=True, timeout=60)
    return r


def start(repo: Repo, lane: str = "true", extra: str = "") -> str:
    repo.commit("review", **{"REVIEW.md": manifest(f"  - id: ok\n    kind: command\n    run: '{lane}'\n", extra=extra)})
    return repo.commit("work", **{"src__a.txt": "1\n"})


def assert_no_debris(left: dict[str, int]) -> None:
    """No temporary file of an atomic write, and no in-flight record, lock or scratch of the run."""
    assert not [name for name in left if ".tmp." in name], left
    assert not [name for name in left if "/inflight/" in name or "/runs/" in name], left


def one_line(stderr: str) -> str:
    """The error: one line besides the ``[review]`` progress lines, and no raw OS error text."""
    lines = [line for line in stderr.splitlines() if not line.startswith("[review] ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "Errno" not in stderr and "OSError" not in stderr, stderr
    return lines[0]


def test_a_disk_that_fills_during_the_run_fails_recording_with_one_line(
    repo: Repo, small_fs_available: None
) -> None:
    """The lane fills the ledger's file system, so the disk is full exactly when the run records."""
    ledger = repo.home / "reviews"
    start(repo, lane=f"cat /dev/zero > {ledger}/filler 2>/dev/null; true")
    done = on_small_fs(repo, ledger, "lane")
    assert done.rc == 3 and done.stdout == ""
    line = one_line(done.stderr)
    assert line.startswith("agentreview run: the review ended 'pass' but was not recorded: cannot write "), line
    written = line.split("cannot write ", 1)[1].split(": ", 1)[0]
    assert written.startswith(str(ledger)) and written.endswith(".json") and "/default/" in written
    assert line.endswith(": no space left on the device — free space on that file system and run again")
    assert_no_debris(done.left)
    assert not [name for name in done.left if name.endswith(".json")], "no entry, whole or empty"


def test_a_full_disk_before_the_run_names_the_in_flight_file(repo: Repo, small_fs_available: None) -> None:
    ledger = repo.home / "reviews"
    start(repo)
    done = on_small_fs(repo, ledger, "full", "--json")
    assert done.rc == 3
    data = json.loads(done.stdout)
    assert data["status"] == "failed" and data["exitCode"] == 3
    assert "/inflight/" in data["error"] and data["error"].startswith(f"cannot write {ledger}/")
    assert "no space left on the device — free space on that file system" in data["error"]
    assert "Errno" not in data["error"]
    assert_no_debris(done.left)


def test_a_read_only_ledger_says_so(repo: Repo, small_fs_available: None) -> None:
    ledger = repo.home / "reviews"
    start(repo)
    done = on_small_fs(repo, ledger, "ro")
    assert done.rc == 3
    line = one_line(done.stderr)
    assert line.startswith(f"agentreview run: cannot write {ledger}/"), line
    assert "the file system is read-only — make it writable or use a writable location" in line


def test_a_full_export_directory_names_the_export_and_keeps_the_record(
    repo: Repo, tmp_path: Path, small_fs_available: None
) -> None:
    exports = tmp_path / "exports"
    start(repo)
    done = on_small_fs(repo, exports, "full", "--export-to", str(exports / "att.json"))
    assert done.rc == 3
    line = one_line(done.stderr)
    assert line.startswith(f"agentreview run: cannot write {exports}/att.json: no space left on the device"), line
    assert line.endswith("(the review is recorded: agentreview export writes it again)")
    assert len(repo.ledger_files()) == 1
    assert_no_debris(done.left)


def _limit_file_size() -> None:  # runs in the child before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_a_file_size_limit_while_recording_is_one_line_and_no_debris(repo: Repo) -> None:
    """RLIMIT_FSIZE: the in-flight record (~300 bytes) fits, the ledger entry (~2 KiB) does not."""
    start(repo)
    proc = subprocess.run(
        [*AGENTREVIEW, "run"], cwd=repo.path, env=repo.env, capture_output=True, text=True, timeout=60,
        preexec_fn=_limit_file_size,
    )
    assert proc.returncode == 3, proc.stderr
    line = one_line(proc.stderr)
    assert "but was not recorded: cannot write " in line
    assert line.endswith(
        "file too large for this process's file-size limit — raise the limit (ulimit -f) and run again"
    )
    home = repo.home / "reviews"
    assert not [p for p in home.rglob("*") if ".tmp." in p.name]
    assert not list(home.rglob("inflight/*")) and repo.ledger_files() == []


def test_debris_of_a_run_that_died_is_removed_by_the_next_run(repo: Repo) -> None:
    """A killed writer leaves its in-flight record, lock and a 0-byte temporary file; they do not stay forever."""
    start(repo)
    repo.run_json(expect=0)  # creates the repository's ledger directories
    inflight = next((repo.home / "reviews").glob("*/inflight"))
    gone_pid = _exited_pid()
    record = {"run_id": "review-dead", "pid": gone_pid, "repo_root": str(repo.path), "binding": "default",
              "base_sha": "0" * 40, "head_sha": "1" * 40}
    (inflight / "review-dead.json").write_text(json.dumps(record))
    (inflight / "review-dead.lock").write_text("")
    temp = inflight / f"review-dead.json.tmp.{gone_pid}.0a1b2c3d4e5f"
    temp.write_text("")
    old = time.time() - 3600
    os.utime(temp, (old, old))
    fresh = inflight / f"review-busy.json.tmp.{os.getpid()}.0a1b2c3d4e5f"  # a live writer's: kept
    fresh.write_text("")
    repo.commit("more", **{"src__b.txt": "2\n"})
    repo.run_json(expect=0)
    assert sorted(p.name for p in inflight.iterdir()) == [fresh.name]


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_atomic_write_on_a_full_file_system_raises_one_line_and_unlinks_its_temp(
    tmp_path: Path, small_fs_available: None
) -> None:
    code = (
        "import errno, os, sys\n"
        "from pathlib import Path\n"
        "from agentreview.host.files import FileWriteError, atomic_write_bytes\n"
        "from agentreview.model.errors import AgentreviewError\n"
        "target = Path(os.environ['FS_DIR']) / 'pre' / 'entry.json'\n"
        "try:\n"
        "    atomic_write_bytes(target, b'x' * 65536)\n"
        "except FileWriteError as exc:\n"
        "    assert isinstance(exc, OSError) and isinstance(exc, AgentreviewError) and exc.exit_code == 3\n"
        "    assert exc.errno == errno.ENOSPC and exc.filename == str(target), (exc.errno, exc.filename)\n"
        "    print(exc)\n"
        "else:\n"
        "    sys.exit('the write succeeded on a full file system')\n"
    )
    fs_dir = tmp_path / "fs"
    fs_dir.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "FS_DIR": str(fs_dir), "FS_MODE": "full", "OUT_DIR": str(out)}
    subprocess.run([*UNSHARE, "sh", "-c", ON_SMALL_FS, "sh", sys.executable, "-c", code], env=env, check=True,
                   timeout=60)
    assert (out / "rc").read_text().strip() == "0", (out / "stderr").read_text()
    assert (out / "stdout").read_text().strip() == (
        f"cannot write {fs_dir}/pre/entry.json: no space left on the device — free space on that file system and "
        "run again"
    )
    listing = (out / "listing").read_text().split()
    assert "pre" in listing and not [name for name in listing if ".tmp." in name]


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        (errno.EDQUOT, "disk quota exceeded — free space within your quota (or raise it) and run again"),
        (errno.EACCES, "permission denied — check the permissions of /srv/ledger and run again"),
        (errno.EIO, "Input/output error — check that file system and the permissions of /srv/ledger, then run again"),
    ],
)
def test_every_write_error_reads_as_the_file_and_the_fix(code: int, fix: str) -> None:
    from agentreview.host.files import FileWriteError, describe_os_error

    cause = OSError(code, os.strerror(code), "/srv/ledger/x.json.tmp.1.ab")
    assert describe_os_error(cause, "/srv/ledger/x.json") == f"cannot write /srv/ledger/x.json: {fix}"
    exc = FileWriteError("/srv/ledger/x.json", cause)
    assert str(exc) == f"cannot write /srv/ledger/x.json: {fix}" and exc.filename == "/srv/ledger/x.json"
