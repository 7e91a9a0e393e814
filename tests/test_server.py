"""The warm server end to end: real server processes, real Unix sockets, real forks, real lanes.

Each server lives in a short /tmp home (a Unix socket path must fit in 107 bytes, pytest's
tmp paths may not). Runs go through ``python -m agentreview`` exactly as a user's do; the
server's ``served`` count proves which ones it ran.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest, processes_matching, wait_for

from agentreview.server import client, protocol
from agentreview.server.directory import ServerDirError, check_dir, prepare_dir
from agentreview.server.loop import KILL_AFTER_S
from agentreview.server.stamp import build_stamp

CHECKS = (
    "  - id: ok\n    kind: command\n    run: 'true'\n"
    "  - id: probe\n    kind: command\n    run: 'echo \"probe=$PROBE\" > \"${PROBE_OUT:-/dev/null}\"'\n"
    "  - id: bad\n    kind: command\n    run: 'exit 1'\n"
)
BINDINGS = "  good:\n    checks: [ok, probe]\n  blocked:\n    checks: [ok, bad]\n"


def _short_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="ars-", dir="/tmp"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]


class Server:
    """A real ``agentreview server`` for one home, driven through the CLI."""

    def __init__(self, home: Path, env: dict[str, str]):
        self.home = home
        self.env = env

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTREVIEW, "server", *args], env=env or self.env, capture_output=True, text=True, timeout=60
        )

    def start(self, *args: str, env: dict[str, str] | None = None) -> int:
        proc = self.cli("start", *args, env=env)
        assert proc.returncode == 0, proc.stderr
        return self.status()["pid"]

    def status(self) -> dict:
        """The server's own status reply (asked in-process: a CLI round trip per poll would be slow)."""
        return client.request(self.env, "status") or {"running": False, "socket": protocol.socket_path(self.env)}

    def served(self) -> int:
        return self.status()["served"]

    def log(self) -> str:
        path = self.home / "server" / protocol.LOG_NAME
        return path.read_text() if path.exists() else ""

    def shutdown(self) -> None:
        reply = client.request(self.env, "stop")
        if reply is not None and not wait_for(lambda: not _alive(reply["pid"]), 10):
            os.kill(reply["pid"], signal.SIGKILL)


def _repo(root: Path, home: Path, checks: str = CHECKS, bindings: str = BINDINGS) -> Repo:
    repo = Repo(root, home)
    repo.commit("initial", **{"README.md": "hello\n", "REVIEW.md": manifest(checks, bindings)})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("feature", **{"app.txt": "v1\n"})
    return repo


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Server, Path]]:
    """One warm server for the tests that leave it running (starting one costs about a second)."""
    home = _short_home()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update(AGENTREVIEW_HOME=str(home), CI="true", AGENTREVIEW_SESSION_ID="server-session", PROBE="server")
    server = Server(home, env)
    server.start("--idle-timeout", "600")
    try:
        yield server, home
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def own() -> Iterator[Server]:
    """A fresh home (and so a server of its own) for tests that stop, stale or idle out their server."""
    home = _short_home()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update(AGENTREVIEW_HOME=str(home), CI="true")
    server = Server(home, env)
    try:
        yield server
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


def _run(
    repo: Repo, *args: str, env: dict[str, str], cwd: Path | None = None, umask: int = -1
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREVIEW, *args], cwd=cwd or repo.path, env=env, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, umask=umask,
    )


def _projection(stdout: str) -> object:
    try:
        data = json.loads(stdout)
    except ValueError:
        return stdout
    if not isinstance(data, dict):
        return data
    lanes = (data.get("attestation") or {}).get("lanes", [])
    return (
        data.get("status"), data.get("verdict"), data.get("exitCode"), data.get("error"),
        sorted((lane["id"], lane["status"], lane.get("exitCode")) for lane in lanes),
    )


# ------------------------------------------------------------------------------------------- parity


@pytest.mark.parametrize(
    ("args", "expect", "in_repo"),
    [
        (["run", "--json", "--no-cache", "--binding", "good"], 0, True),
        (["run", "--json", "--no-cache", "--binding", "blocked"], 1, True),
        (["run", "--json", "--no-such-option"], 64, True),
        (["run", "--json"], 3, False),
        (["ledger", "--json"], 0, True),
    ],
    ids=["pass", "block", "usage", "not-a-repo", "ledger"],
)
def test_a_served_command_answers_as_in_process(shared, tmp_path, args, expect, in_repo) -> None:
    server, home = shared
    repo = _repo(tmp_path / "repo", home)
    cwd = repo.path if in_repo else tmp_path
    before = server.served()
    served = _run(repo, *args, env=repo.env, cwd=cwd)
    assert server.served() == before + 1, "the command did not go through the server"
    local = _run(repo, *args, env={**repo.env, "AGENTREVIEW_NO_SERVER": "1"}, cwd=cwd)
    assert server.served() == before + 1, "AGENTREVIEW_NO_SERVER=1 must run in-process"
    assert (served.returncode, local.returncode) == (expect, expect), (served.stderr, local.stderr)
    assert _projection(served.stdout) == _projection(local.stdout)
    if expect in (3, 64):
        assert served.stderr == local.stderr
    if expect == 64:
        assert served.stderr.startswith("agentreview run: ") and "--no-such-option" in served.stderr


def test_the_command_gets_the_callers_cwd_env_umask_and_streams(shared, tmp_path) -> None:
    server, home = shared
    repo = _repo(tmp_path / "repo", home)
    out = tmp_path / "probe.txt"
    env = {**repo.env, "AGENTREVIEW_SESSION_ID": "client-session", "PROBE": "client", "PROBE_OUT": str(out)}
    (repo.path / "sub").mkdir()
    before = server.served()
    proc = _run(repo, "run", "--json", "--binding", "good", env=env, cwd=repo.path / "sub", umask=0o027)
    assert server.served() == before + 1
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["attestation"]["requester"]["sessionId"] == "client-session"
    assert Path(data["ledgerPath"]).is_relative_to(home.resolve())
    assert out.read_text() == "probe=client\n"  # the server was started with PROBE=server
    assert out.stat().st_mode & 0o777 == 0o640, "the lane must write with the caller's umask (027)"
    plain = _run(repo, "run", "--binding", "good", "--no-cache", env=env)
    assert server.served() == before + 2
    assert plain.returncode == 0 and "[review] " in plain.stderr and "pass" in plain.stdout, plain


def _under_pty(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run ``argv`` with a pseudo-terminal as its stdin/stdout/stderr; its exit code and everything it wrote."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the forked test child
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    output = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output


def test_the_command_sees_the_callers_terminal(shared, tmp_path) -> None:
    """isatty() of the rebuilt streams is the caller's: on a terminal, run draws its live table (rich escapes)."""
    server, home = shared
    repo = _repo(tmp_path / "repo", home)
    env = {k: v for k, v in repo.env.items() if k != "CI"}
    env["TERM"] = "xterm-256color"
    before = server.served()
    code, output = _under_pty([*AGENTREVIEW, "run", "--binding", "good", "--no-cache"], repo.path, env)
    assert code == 0, output
    assert server.served() == before + 1
    assert b"\x1b[" in output and b"[review] " not in output, output
    piped = _run(repo, "run", "--binding", "good", "--no-cache", env=env)
    assert piped.returncode == 0 and "\x1b[" not in piped.stderr and "[review] " in piped.stderr


# ------------------------------------------------------------------------------------------- signals


def _entries_of(repo: Repo) -> list[Path]:
    """Ledger entries recorded for ``repo`` (the shared home also holds other tests' entries)."""
    remote = f"local:{repo.path.resolve()}"
    return [f for f in repo.ledger_files() if remote in f.read_text()]


def _slow_lane(marker: str, seconds: int) -> str:
    return f"  - id: slow\n    kind: command\n    run: 'sleep {seconds}; true # {marker}'\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_client_cancels_the_run(shared, tmp_path, signum) -> None:
    server, home = shared
    marker = f"ars-cancel-{os.getpid()}-{time.monotonic_ns()}"
    repo = _repo(tmp_path / "repo", home, _slow_lane(marker, 301), "")
    before = server.served()
    proc = subprocess.Popen(
        [*AGENTREVIEW, "run", "--json"], cwd=repo.path, env=repo.env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    assert wait_for(lambda: bool(processes_matching(marker)))
    assert server.served() == before + 1
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, err
    assert json.loads(out)["status"] == "cancelled"
    assert wait_for(lambda: not processes_matching(marker), 10), "the lane outlived the cancel"
    assert _entries_of(repo) == []


def test_sigkill_of_the_client_kills_the_command_and_its_lanes(shared, tmp_path) -> None:
    server, home = shared
    marker = f"ars-orphan-{os.getpid()}-{time.monotonic_ns()}"
    repo = _repo(tmp_path / "repo", home, _slow_lane(marker, 302), "")
    proc = subprocess.Popen([*AGENTREVIEW, "run", "--json"], cwd=repo.path, env=repo.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: bool(processes_matching(marker)))
    proc.kill()
    proc.wait(timeout=10)
    # Sooner than the server's SIGKILL escalation (KILL_AFTER_S): the SIGTERM cancel did it.
    within = KILL_AFTER_S - 2
    assert wait_for(lambda: not processes_matching(marker), within), "the lane outlived its client"
    assert wait_for(lambda: server.status()["active"] == 0, within), "the forked command outlived its client"
    assert _entries_of(repo) == []
    assert "went away: SIGTERM" in server.log()


def test_a_killed_command_relays_128_plus_n_and_its_watchdog_kills_the_lanes(shared, tmp_path) -> None:
    """SIGKILL of the forked command itself: no clean-up ran, so the command plugin's watchdog must act."""
    server, home = shared
    marker = f"ars-dogs-{os.getpid()}-{time.monotonic_ns()}"
    repo = _repo(tmp_path / "repo", home, _slow_lane(marker, 303), "")
    proc = subprocess.Popen([*AGENTREVIEW, "run", "--json"], cwd=repo.path, env=repo.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: bool(processes_matching(marker)))
    server_pid = server.status()["pid"]
    # The lane shell's parent is the forked command (a child of the server), not the client.
    command_pid = int(Path(f"/proc/{processes_matching(marker)[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert command_pid != proc.pid
    assert int(Path(f"/proc/{command_pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == server_pid
    os.kill(command_pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert wait_for(lambda: not processes_matching(marker), 15), "the watchdog did not kill the lane"
    assert _entries_of(repo) == []


# ------------------------------------------------------------------------------------------- fallbacks


def test_a_stale_socket_falls_back_in_process(own, tmp_path) -> None:
    directory = prepare_dir(own.home)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(directory / protocol.SOCKET_NAME))
    dead.close()  # the file stays, nobody listens: a server that was SIGKILLed
    repo = _repo(tmp_path / "repo", own.home)
    started = time.monotonic()
    proc = _run(repo, "run", "--json", "--binding", "good", env=repo.env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "pass"
    assert time.monotonic() - started < 30
    pid = own.start("--idle-timeout", "60")  # start replaces the dead socket
    assert own.status()["running"] and _alive(pid)


@pytest.mark.slow
def test_a_server_of_other_code_is_told_to_go_and_the_command_runs_in_process(own, tmp_path) -> None:
    """A server whose stamp names a directory that changed since (a package installed) is stale."""
    packages = tmp_path / "extra-packages"
    packages.mkdir()
    env = {**own.env, "PYTHONPATH": str(packages)}
    pid = own.start("--idle-timeout", "60", env=env)
    status = own.status()
    assert status["current"] is True
    (packages / "newly_installed.py").write_text("")
    os.utime(packages, ns=(time.time_ns(), time.time_ns() + 10_000_000))  # the stamp no longer matches
    assert own.status()["current"] is False
    repo = _repo(tmp_path / "repo", own.home)
    proc = _run(repo, "run", "--json", "--binding", "good", env=repo.env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "pass"
    assert wait_for(lambda: not _alive(pid), 15), "a stale server must exit when a client says so"
    assert "found this server stale" in own.log()
    assert not (own.home / "server" / protocol.SOCKET_NAME).exists()


@pytest.mark.slow
def test_start_replaces_a_server_of_other_code(own, tmp_path) -> None:
    packages = tmp_path / "extra-packages"
    packages.mkdir()
    old = own.start("--idle-timeout", "60", env={**own.env, "PYTHONPATH": str(packages)})
    (packages / "newly_installed.py").write_text("")
    os.utime(packages, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert own.status()["current"] is False
    new = own.start("--idle-timeout", "60")
    assert new != old and not _alive(old)
    assert own.status()["current"] is True


def test_the_client_compares_the_stamp_before_sending_anything(own, tmp_path) -> None:
    """A listener with a foreign stamp gets 'stale' and nothing else: no argv, no environment, no fds."""
    directory = prepare_dir(own.home)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(directory / protocol.SOCKET_NAME))
    listener.listen(1)
    received: list[dict] = []

    def fake_server() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(10)
            protocol.send(conn, {"stamp": {**build_stamp(), "version": "0.0.0-other"}})
            buffer = bytearray()
            while (message := protocol.receive(conn, buffer)) is not None:
                received.append(message)

    thread = threading.Thread(target=fake_server, daemon=True)
    thread.start()
    repo = _repo(tmp_path / "repo", own.home)
    proc = _run(repo, "run", "--json", "--binding", "good", env=repo.env)
    thread.join(10)
    listener.close()
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "pass"
    assert received == [{"op": "stale"}]


def test_stamp_matches_only_the_same_code() -> None:
    stamp = build_stamp()
    assert client.stamp_matches(stamp)
    assert not client.stamp_matches({**stamp, "version": "9.9.9"})
    assert not client.stamp_matches({**stamp, "python": "other"})
    own_init = next(f for f in stamp["files"] if f[0].endswith(os.path.join("agentreview", "__init__.py")))
    for field in range(len(own_init[1])):  # size, mtime_ns, ctime_ns, inode, device: each one counts
        changed = [value + 1 if i == field else value for i, value in enumerate(own_init[1])]
        files = [[path, changed] if path == own_init[0] else [path, seen] for path, seen in stamp["files"]]
        assert not client.stamp_matches({**stamp, "files": files}), f"field {field} of the fingerprint is ignored"
    assert not client.stamp_matches({**stamp, "files": [f for f in stamp["files"] if f != own_init]})
    assert not client.stamp_matches(None) and not client.stamp_matches({**stamp, "files": "x"})
    plugin_entries = [f for f, _ in stamp["files"] if f.endswith(os.path.join("agentreview_command", "plugin.py"))]
    assert plugin_entries, "each installed plugin's entry module is part of the stamp"


# ------------------------------------------------------------------------------------------- security


def test_peer_uid_is_the_kernels_answer() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert protocol.peer_uid(left) == os.getuid()
        assert protocol.peer_allowed(protocol.peer_uid(left))
    assert not protocol.peer_allowed(os.getuid() + 1)
    assert not protocol.peer_allowed(0, own_uid=1000)


def test_a_server_dir_others_can_enter_is_refused(own, tmp_path) -> None:
    directory = prepare_dir(own.home)
    directory.chmod(0o755)
    proc = own.cli("start")
    assert proc.returncode == 3
    assert "lets others in" in proc.stderr and "chmod 700" in proc.stderr
    assert not (directory / protocol.SOCKET_NAME).exists()
    directory.chmod(0o700)
    with pytest.raises(ServerDirError, match="owned by uid"):
        check_dir(directory, uid=os.getuid() + 1)
    (own.home / "server").rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (own.home / "server").symlink_to(tmp_path / "elsewhere")  # a private dir, but reached through a link
    with pytest.raises(ServerDirError, match="not a directory"):
        prepare_dir(own.home)


def test_the_socket_is_private(own) -> None:
    own.start("--idle-timeout", "60")
    directory = own.home / "server"
    assert directory.stat().st_mode & 0o777 == 0o700
    assert (directory / protocol.SOCKET_NAME).lstat().st_mode & 0o777 == 0o600


@pytest.mark.skipif(os.getuid() != 0, reason="acting as another user needs root")
def test_another_users_connection_is_dropped_even_through_open_permissions(own, tmp_path) -> None:
    """Defence in depth: with the directory and socket opened up, SO_PEERCRED still drops uid 65534."""
    own.start("--idle-timeout", "60")
    directory = own.home / "server"
    os.chmod(own.home, 0o755)
    directory.chmod(0o711)
    (directory / protocol.SOCKET_NAME).chmod(0o666)
    path = str(directory / protocol.SOCKET_NAME)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked test child, as user nobody
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(5)
            sock.connect(path)
            code = 0 if sock.recv(100) == b"" else 2  # EOF, not the greeting
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "uid 65534 got a greeting (or could not connect)"
    assert "refused a connection from uid 65534" in own.log()


# ------------------------------------------------------------------------------------------- lifecycle


@pytest.mark.slow
def test_idle_timeout_exits_and_removes_the_socket(own) -> None:
    pid = own.start("--idle-timeout", "3")
    assert wait_for(lambda: not _alive(pid), 15)
    assert not (own.home / "server" / protocol.SOCKET_NAME).exists()
    assert "idle for 3 s: exiting" in own.log()
    assert own.status() == {"running": False, "socket": protocol.socket_path(own.env)}


@pytest.mark.slow
def test_start_is_idempotent_and_stop_stops(own) -> None:
    pid = own.start("--idle-timeout", "60")
    again = own.cli("start")
    assert again.returncode == 0 and f"already running (pid {pid}" in again.stdout
    cli_status = own.cli("status", "--json")
    assert cli_status.returncode == 0, cli_status.stderr
    status = json.loads(cli_status.stdout)
    assert status["running"] and status["current"] and status["pid"] == pid
    assert status["idleTimeoutSeconds"] == 60 and status["served"] == 0 and status["active"] == 0
    assert "agentreview server: running (pid" in own.cli("status").stdout
    stopped = own.cli("stop")
    assert stopped.returncode == 0 and f"stopped (pid {pid})" in stopped.stdout
    assert not _alive(pid)
    assert own.cli("stop").stdout.strip() == "agentreview server: not running"
    assert own.cli("status").stdout.strip() == "agentreview server: not running"


def test_the_client_path_imports_only_the_standard_library(shared, tmp_path) -> None:
    server, home = shared
    report = tmp_path / "modules.json"
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "from agentreview.cli import entry\n"
        "code = entry._served(['ledger', '--json'])\n"
        f"open({str(report)!r}, 'w').write(json.dumps([code, sorted(set(sys.modules) - before)]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env["AGENTREVIEW_HOME"] = str(home)
    before = server.served()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    served, modules = json.loads(report.read_text())
    assert served == 0 and server.served() == before + 1
    ours = {m for m in modules if m.split(".")[0] == "agentreview"}
    assert ours == {"agentreview", "agentreview.cli", "agentreview.cli.entry", "agentreview.server",
                    "agentreview.server.client", "agentreview.server.context", "agentreview.server.protocol"}
    foreign = [m for m in modules if m.split(".")[0] not in sys.stdlib_module_names and m not in ours]
    assert foreign == [], f"the client path imported {foreign}"
