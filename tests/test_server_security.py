"""The warm server against a same-uid caller it must not serve, its own death, and code swapped under it.

* A client in a sandbox (lower rlimit, no_new_privs, a smaller capability bounding set, a user
  or network namespace) must run its command itself: its lane's parent chain holds the client,
  not the server. A hostile client that skips the client's checks and claims the server's own
  context is refused by the server, which reads the peer's context from /proc itself.
* A client must not hand its terminal and environment to a server in another context either.
* ``kill -9`` of the server kills its command at once: the client exits 3 with the command
  already gone, nothing more is printed, no lane survives, no ledger entry is recorded.
* A module replaced with its mtime put back (``cp -p`` in place, ``rsync -a``) makes the server stale.

Sandbox vectors the kernel here does not allow (an unprivileged user namespace, dropping a
bounding capability without CAP_SETPCAP) are probed first and skipped with the probe's answer;
the others still run.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, processes_matching, wait_for
from test_server import Server, _alive, _entries_of, _repo, _short_home

from agentreview.server import client, context, protocol, stamp
from agentreview.server.context import ContextError, differences, own_context, peer_context
from agentreview.server.directory import prepare_dir
from agentreview.server.stamp import build_stamp

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
CAP_NET_RAW = 13

# The lane writes its own parent chain: the lane shell, the command (the client itself when it ran
# in-process; a child of the server when it was served), and on up to pid 1.
CHAIN_CHECK = (
    "  - id: chain\n    kind: command\n"
    "    run: 'p=$$; while [ \"$p\" -gt 1 ]; do echo $p; p=$(sed \"s/.*) //\" /proc/$p/stat | cut -d\" \" -f2); "
    "done > \"$CHAIN_OUT\"'\n"
)
CHAIN_BINDING = "  chain:\n    checks: [chain]\n"


def _libc_prctl(option: int, arg: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, arg, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {arg})")


@dataclass
class Vector:
    """One way a same-uid process can sit in a sandbox the server is not in."""

    name: str
    key: str  # the context entry the refusal names
    prefix: list[str] = field(default_factory=list)
    preexec: Callable[[], None] | None = None
    # What the client may say instead of naming ``key``: inside a user namespace it may not read the server's /proc
    client_may_say: str = "\0"

    def probe(self) -> str | None:
        """Why this kernel or user cannot build the sandbox here (None: it can)."""
        proc = subprocess.run([*self.prefix, "true"], capture_output=True, text=True, timeout=30,
                              preexec_fn=self.preexec)
        if proc.returncode != 0:
            return f"{' '.join([*self.prefix, 'true'])} failed here: {proc.stderr.strip() or proc.returncode}"
        return None

    def popen_kw(self) -> dict:
        return {"preexec_fn": self.preexec} if self.preexec else {}


def _lower_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(64, soft // 2), hard))


def _no_new_privs() -> None:
    _libc_prctl(PR_SET_NO_NEW_PRIVS, 1)


def _drop_net_raw() -> None:
    _libc_prctl(PR_CAPBSET_DROP, CAP_NET_RAW)


VECTORS = [
    Vector("rlimit", "rlimit Max open files", preexec=_lower_nofile),
    Vector("no-new-privs", "status NoNewPrivs", preexec=_no_new_privs),
    Vector("bounding-set", "status CapBnd", preexec=_drop_net_raw),
    Vector("user-namespace", "namespace user", prefix=["unshare", "-Ur", "--"],
           client_may_say="the server's process context cannot be compared: cannot read its /proc entries"),
    # as root a network namespace alone; otherwise it needs a user namespace too (-r), as a sandbox would
    Vector("network-namespace", "namespace net", prefix=["unshare", "-n" if os.geteuid() == 0 else "-rn", "--"]),
]


@pytest.fixture(params=VECTORS, ids=[v.name for v in VECTORS])
def vector(request) -> Vector:
    found: Vector = request.param
    if found.prefix and shutil.which(found.prefix[0]) is None:
        pytest.skip(f"{found.prefix[0]} (util-linux) is not installed here")
    why = found.probe()
    if why is not None:
        pytest.skip(why)
    return found


def _env_home() -> tuple[Path, dict[str, str]]:
    home = _short_home()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update(AGENTREVIEW_HOME=str(home), CI="true")
    return home, env


@pytest.fixture(scope="module")
def shared() -> Iterator[Server]:
    home, env = _env_home()
    server = Server(home, env)
    server.start("--idle-timeout", "600")
    try:
        yield server
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def own() -> Iterator[Server]:
    home, env = _env_home()
    server = Server(home, env)
    try:
        yield server
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


def _chain_repo(root: Path, home: Path) -> Repo:
    return _repo(root, home, CHAIN_CHECK, CHAIN_BINDING)


def _chain(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


# ------------------------------------------------------------------------------------ item 2: sandboxes


def test_an_unsandboxed_client_is_served_and_its_lane_descends_from_the_server(shared, tmp_path) -> None:
    """The control for the sandbox tests: the parent chain does show a served command."""
    repo = _chain_repo(tmp_path / "repo", shared.home)
    out = tmp_path / "chain.txt"
    before = shared.served()
    proc = subprocess.Popen([*AGENTREVIEW, "run", "--json", "--no-cache", "--binding", "chain"], cwd=repo.path,
                            env={**repo.env, "CHAIN_OUT": str(out)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert shared.served() == before + 1
    chain = _chain(out)
    assert shared.status()["pid"] in chain and proc.pid not in chain


def test_a_sandboxed_client_runs_its_command_in_process(shared, tmp_path, vector) -> None:
    repo = _chain_repo(tmp_path / "repo", shared.home)
    out = tmp_path / "chain.txt"
    env = {**repo.env, "CHAIN_OUT": str(out), "AGENTREVIEW_DEBUG": "1"}
    before = shared.served()
    proc = subprocess.Popen([*vector.prefix, *AGENTREVIEW, "run", "--json", "--no-cache", "--binding", "chain"],
                            cwd=repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, **vector.popen_kw())
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert json.loads(stdout)["verdict"] == "pass"
    chain = _chain(out)
    assert proc.pid in chain, "the command must run in the client's own process (unshare execs, same pid)"
    assert shared.status()["pid"] not in chain, "the lane ran under the server, outside the sandbox"
    assert shared.served() == before
    assert "running it in-process" in stderr, stderr
    assert vector.key in stderr or vector.client_may_say in stderr, stderr


HOSTILE_CLIENT = textwrap.dedent(
    """
    import json, os, socket, sys
    from agentreview.server import protocol
    path, claimed, result = sys.argv[1:4]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(path)
    buffer = bytearray()
    hello = protocol.receive(sock, buffer)
    request = {"op": "run", "argv": ["run", "--json", "--no-cache", "--binding", "chain"], "cwd": os.getcwd(),
               "env": dict(os.environ), "umask": 0o022, "context": json.loads(open(claimed).read())}
    protocol.send(sock, request, fds=[0, 1, 2])
    reply = None
    while reply is None or ("refused" not in reply and "exit" not in reply):
        reply, rest = protocol.split_frame(bytes(buffer))
        buffer[:] = rest
        if reply is None:
            data, _fds, _flags, _addr = socket.recv_fds(sock, 65536, 4)
            if not data:
                break
            buffer += data
    open(result, "w").write(json.dumps({"refusedAtHello": hello.get("refused"), "reply": reply}))
    """
)


def test_a_hostile_sandboxed_client_claiming_the_servers_context_is_refused(shared, tmp_path, vector) -> None:
    """It skips every client-side check and sends the server's own context as its own: /proc says otherwise."""
    repo = _chain_repo(tmp_path / "repo", shared.home)
    out = tmp_path / "chain.txt"
    claimed = tmp_path / "claimed.json"
    claimed.write_text(json.dumps(own_context()))  # the test process's context is the server's
    result = tmp_path / "result.json"
    before = shared.served()
    proc = subprocess.run(
        [*vector.prefix, sys.executable, "-c", HOSTILE_CLIENT, protocol.socket_path(shared.env), str(claimed),
         str(result)],
        cwd=repo.path, env={**repo.env, "CHAIN_OUT": str(out)}, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, **vector.popen_kw(),
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(result.read_text())
    assert answer["reply"] is not None and "refused" in answer["reply"], answer
    assert vector.key in answer["reply"]["refused"] and vector.key in answer["refusedAtHello"], answer
    assert shared.served() == before and not out.exists(), "the server ran the hostile client's command"
    assert "not running a command: its process context is not the server's" in shared.log()


def test_a_client_whose_own_view_differs_from_proc_is_refused(shared, tmp_path) -> None:
    """Both views must agree: a client whose reported context is not what /proc shows (pid reuse) is refused."""
    repo = _chain_repo(tmp_path / "repo", shared.home)
    out = tmp_path / "chain.txt"
    claimed = tmp_path / "claimed.json"
    claimed.write_text(json.dumps({**own_context(), "rlimit Max open files": "1 1"}))
    result = tmp_path / "result.json"
    before = shared.served()
    proc = subprocess.run(
        [sys.executable, "-c", HOSTILE_CLIENT, protocol.socket_path(shared.env), str(claimed), str(result)],
        cwd=repo.path, env={**repo.env, "CHAIN_OUT": str(out)}, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(result.read_text())
    assert answer["refusedAtHello"] is None, "same context: the greeting must not refuse"
    assert answer["reply"] == {"refused": "the process context it reports is not the one the server read from /proc"}
    assert shared.served() == before and not out.exists()


def test_a_client_does_not_hand_over_to_a_server_in_another_context(own, tmp_path) -> None:
    """A socket planted by a sandboxed process (here: a lower rlimit) gets no argv, environment or terminal."""
    directory = prepare_dir(own.home)
    received = tmp_path / "received.json"
    fake = textwrap.dedent(
        """
        import json, socket, sys
        from agentreview.server import protocol
        from agentreview.server.stamp import build_stamp
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(sys.argv[1])
        listener.listen(1)
        print("ready", flush=True)
        conn, _ = listener.accept()
        conn.settimeout(20)
        got, buffer, fds = [], bytearray(), []
        try:
            protocol.send(conn, {"stamp": build_stamp(), "pid": 0})
            while data := socket.recv_fds(conn, 65536, 4)[:2]:
                if not data[0]:
                    break
                buffer += data[0]
                fds += data[1]
                while (message := protocol.split_frame(bytes(buffer)))[0] is not None:
                    got.append(sorted(message[0]))
                    buffer[:] = message[1]
        except OSError:
            pass
        open(sys.argv[2], "w").write(json.dumps({"messages": got, "fds": len(fds)}))
        """
    )
    server = subprocess.Popen([sys.executable, "-c", fake, str(directory / protocol.SOCKET_NAME), str(received)],
                              stdout=subprocess.PIPE, text=True, preexec_fn=_lower_nofile)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        repo = _chain_repo(tmp_path / "repo", own.home)
        out = tmp_path / "chain.txt"
        proc = subprocess.Popen([*AGENTREVIEW, "run", "--json", "--no-cache", "--binding", "chain"], cwd=repo.path,
                                env={**repo.env, "CHAIN_OUT": str(out), "AGENTREVIEW_DEBUG": "1"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        _, stderr = proc.communicate(timeout=60)
        server.wait(timeout=30)
    finally:
        server.kill()
    assert proc.returncode == 0, stderr
    assert json.loads(received.read_text()) == {"messages": [], "fds": 0}, "the client sent something to it"
    assert proc.pid in _chain(out)
    assert "the server runs in another process context: rlimit Max open files" in stderr


def test_status_says_why_this_process_is_not_served(shared) -> None:
    proc = subprocess.run([*AGENTREVIEW, "server", "status", "--json"], env=shared.env, capture_output=True,
                          text=True, timeout=60, preexec_fn=_lower_nofile)
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert status["running"] and "rlimit Max open files" in status["refused"]
    plain = subprocess.run([*AGENTREVIEW, "server", "status"], env=shared.env, capture_output=True, text=True,
                           timeout=60, preexec_fn=_lower_nofile)
    assert "it does not run commands from this process" in plain.stdout
    assert "refused" not in shared.status()


@pytest.mark.parametrize("source", ["SO_PEERPIDFD", "pidfd_open"])
def test_the_peer_context_is_read_through_a_pidfd_and_refused_once_the_peer_is_gone(tmp_path, monkeypatch,
                                                                                    source) -> None:
    """From the socket (Linux >= 6.5) or, on older kernels, ``pidfd_open`` of the SO_PEERCRED pid."""
    if source == "pidfd_open":
        monkeypatch.delattr(socket, "SO_PEERPIDFD", raising=False)
        monkeypatch.setattr(context, "_GENERIC_MACHINES", frozenset())
    path = str(tmp_path / "s.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(2)
    with listener:
        live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        live.connect(path)
        conn, _ = listener.accept()
        with live, conn:
            assert differences(own_context(), peer_context(conn)) == []
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forked peer connects and exits at once
            dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            dead.connect(path)
            os._exit(0)
        os.waitpid(pid, 0)
        conn, _ = listener.accept()
        with conn, pytest.raises(ContextError, match=f"pid {pid}"):
            peer_context(conn)  # its pid may already be another process's: never read in its place


def test_every_part_of_the_context_counts() -> None:
    own = own_context()
    for key in ("status Uid", "status Gid", "status Groups", "status NoNewPrivs", "status Seccomp", "status CapEff",
                "status CapBnd", "namespace user", "namespace mnt", "namespace net", "namespace pid",
                "rlimit Max open files", "rlimit Max processes", "cgroup", "root directory"):
        assert key in own, f"{key} is not part of the context"
        assert differences(own, {**own, key: own[key] + "x"}) == [key]
    assert differences(own, {k: v for k, v in own.items() if k != "cgroup"}) == ["cgroup"]
    assert differences(own, {**own, "extra": "1"}) == ["extra"]
    assert differences(own, None) and differences(own, "x")


# ------------------------------------------------------------------------------------ item 9: kill -9 of the server


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.slow
def test_sigkill_of_the_server_kills_its_command_and_nothing_is_recorded(own, tmp_path) -> None:
    server_pid = own.start("--idle-timeout", "120")
    marker = f"ars-serverkill-{os.getpid()}-{time.monotonic_ns()}"
    lane = f"  - id: slow\n    kind: command\n    run: 'sleep 4; true # {marker}'\n"
    repo = _repo(tmp_path / "repo", own.home, lane, "")
    proc = subprocess.Popen([*AGENTREVIEW, "run", "--json"], cwd=repo.path, env=repo.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert wait_for(lambda: bool(processes_matching(marker)))
    command_pid = _ppid(processes_matching(marker)[0])
    assert _ppid(command_pid) == server_pid, "the command must run as a child of the server"
    killed_at = time.monotonic()
    os.kill(server_pid, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=30)  # EOF on stdout: nobody holds the caller's terminal any more
    assert proc.returncode == 3, stderr
    assert "the warm server went away before the command finished" in stderr
    assert not _alive(command_pid), "the command outlived the server and its client"
    assert stdout == "", "the command kept writing to the caller's output after the server died"
    assert time.monotonic() - killed_at < 3, "the client waited for the command to finish on its own"
    assert wait_for(lambda: not processes_matching(marker), 10), "a lane outlived the server"
    time.sleep(max(0.0, killed_at + 7 - time.monotonic()))  # past the moment the lane would have passed
    assert _entries_of(repo) == [], "a ledger entry was recorded after the client exited 3"


GUARDED_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from agentreview.server import child
    mode = sys.argv[1]
    death_r, death_w = os.pipe()
    if mode == "pdeathsig":
        child.prepare()
    server = os.getpid()
    if os.fork() == 0:
        child.die_with_server(server, death_r)
        if mode == "pipe":
            os.close(death_w)  # as the real child does; kept open, only the parent-death signal can act
        print(os.getpid(), flush=True)
        time.sleep(30)
        os._exit(0)
    time.sleep(30)
    """
)


@pytest.mark.parametrize("mode", ["pdeathsig", "pipe"])
def test_each_guard_alone_kills_a_child_whose_server_died(mode) -> None:
    """PR_SET_PDEATHSIG without the pipe, the pipe without PR_SET_PDEATHSIG: each is enough."""
    server = subprocess.Popen([sys.executable, "-c", GUARDED_CHILD, mode], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        child_pid = int(server.stdout.readline())  # printed by the child once both guards are armed
        assert _alive(child_pid)
        server.kill()
        server.wait(timeout=10)
        assert wait_for(lambda: not _alive(child_pid), 5), f"the child outlived its server ({mode} alone)"
    finally:
        server.kill()


# ------------------------------------------------------------------------------------ item 10: the stamp


def _replace_keeping_mtime(path: Path, text: str, how: str) -> None:
    """Put ``text`` (same length) in ``path`` and restore its mtime (and its folder's) as cp -p / rsync -a do."""
    old = path.stat()
    folder = path.parent.stat()
    assert len(text.encode()) == old.st_size
    if how == "cp -p":  # in place: same inode, same size, same mtime
        with path.open("r+b") as handle:
            handle.write(text.encode())
    else:  # rsync -a: a temporary file renamed over it, then the folder's mtime restored too
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(text)
        os.utime(temporary, ns=(old.st_atime_ns, old.st_mtime_ns))
        temporary.rename(path)
        os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert path.stat().st_mtime_ns == old.st_mtime_ns and path.stat().st_size == old.st_size
    assert path.parent.stat().st_mtime_ns == folder.st_mtime_ns


@pytest.mark.parametrize("how", ["cp -p", "rsync -a"])
def test_stamp_matches_sees_a_file_replaced_with_its_mtime_restored(tmp_path, monkeypatch, how) -> None:
    module = tmp_path / "module.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.setattr(stamp, "SERVE_MODULE_FILE", str(module))  # one more file in the stamp, ours to replace
    built = build_stamp()
    assert str(module) in [entry[0] for entry in built["files"]]
    assert client.stamp_matches(built)
    time.sleep(0.01)
    _replace_keeping_mtime(module, "VALUE = 2\n", how)
    assert not client.stamp_matches(built), f"a module replaced by {how} keeps the old stamp"


PLUGIN = '"""A plugin that registers nothing: its file is part of the server\'s stamp."""\nVERSION = "1"\n'


def _plugin_dir(root: Path) -> Path:
    packages = root / "extra-packages"
    info = packages / "arsstamp_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arsstamp-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agentreview]\narsstamp = arsstamp_plugin\n")
    (packages / "arsstamp_plugin.py").write_text(PLUGIN)
    return packages


@pytest.mark.slow
@pytest.mark.parametrize("how", ["cp -p", "rsync -a"])
def test_a_plugin_module_replaced_with_its_mtime_restored_makes_the_server_stale(own, tmp_path, how) -> None:
    packages = _plugin_dir(tmp_path)
    path = os.pathsep.join(p for p in (str(packages), os.environ.get("PYTHONPATH", "")) if p)
    env = {**own.env, "PYTHONPATH": path}
    pid = own.start("--idle-timeout", "60", env=env)
    assert own.status()["current"] is True
    time.sleep(0.01)
    _replace_keeping_mtime(packages / "arsstamp_plugin.py", PLUGIN.replace('"1"', '"2"'), how)
    assert own.status()["current"] is False, f"a module replaced by {how} is still served"
    repo = _repo(tmp_path / "repo", own.home)
    proc = subprocess.run([*AGENTREVIEW, "run", "--json", "--binding", "good"], cwd=repo.path,
                          env={**repo.env, "PYTHONPATH": path}, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "pass"
    assert wait_for(lambda: not _alive(pid), 15), "a stale server must exit when a client says so"
    assert "found this server stale" in own.log()

