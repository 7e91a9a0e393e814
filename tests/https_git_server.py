"""A real HTTPS git server on 127.0.0.1 for tests: smart HTTP through ``git http-backend``.

Import the fixtures into a test module::

    from https_git_server import GitHttpsServer, https_git_server, tls_material  # noqa: F401

``https_git_server`` starts a threaded ``http.server`` wrapped in TLS with a
throw-away self-signed certificate (made by ``openssl req -x509``), serves every
bare repository under its project root as CGI, records each request in ``hits``
and sets ``GIT_SSL_CAINFO`` for the test so git trusts it. Nothing else touches
the network.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

_GIT_ENV_FIXED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Pack Author",
    "GIT_AUTHOR_EMAIL": "author@example.test",
    "GIT_COMMITTER_NAME": "Pack Author",
    "GIT_COMMITTER_EMAIL": "author@example.test",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}


@dataclass(frozen=True)
class Symlink:
    """A file entry that is a symlink to ``target``."""

    target: str


@dataclass(frozen=True)
class Executable:
    """A file entry with the executable bit."""

    content: str | bytes


FileSpec = str | bytes | Symlink | Executable


def git(args: list[str], cwd: Path) -> str:
    """Run git with a fixed identity and dates, no user or system config; return stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_GIT_ENV_FIXED)
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def write_files(root: Path, files: Mapping[str, FileSpec]) -> None:
    """Write ``files`` (path -> content, :class:`Symlink` or :class:`Executable`) below ``root``."""
    for rel, spec in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        if isinstance(spec, Symlink):
            path.symlink_to(spec.target)
            continue
        content = spec.content if isinstance(spec, Executable) else spec
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        path.chmod(0o755 if isinstance(spec, Executable) else 0o644)


def init_repo(root: Path, files: Mapping[str, FileSpec], *, track: bool = True) -> Path:
    """A local git repository at ``root`` holding ``files``, committed when ``track``."""
    root.mkdir(parents=True, exist_ok=True)
    git(["init", "--quiet", "--initial-branch=main"], root)
    write_files(root, files)
    if track:
        git(["add", "-A"], root)
        git(["commit", "--quiet", "--allow-empty", "-m", "init"], root)
    return root


@dataclass
class GitHttpsServer:
    project_root: Path
    work_root: Path
    ca_file: Path
    base_url: str = ""
    hits: list[str] = field(default_factory=list)
    # Serve the "dumb" HTTP protocol (static files, no http-backend): it cannot serve a
    # shallow fetch of one commit, so a client must fall back to fetching the branches.
    dumb: bool = False
    _httpd: ThreadingHTTPServer | None = None

    def make_repo(self, name: str, files: Mapping[str, FileSpec], *, allow_sha_want: bool = True) -> str:
        """Create bare ``<name>.git`` with one commit holding ``files``; return that commit's sha."""
        work = self.work_root / name
        work.mkdir(parents=True)
        git(["init", "--quiet", "--initial-branch=main"], work)
        bare = self.project_root / f"{name}.git"
        git(["init", "--quiet", "--bare", "--initial-branch=main", str(bare)], self.project_root)
        git(["config", "http.receivepack", "false"], bare)
        if allow_sha_want:
            git(["config", "uploadpack.allowAnySHA1InWant", "true"], bare)
        return self.commit(name, files)

    def commit(self, name: str, files: Mapping[str, FileSpec], message: str = "pack", *, add_all: bool = True) -> str:
        """Add a commit to ``name`` with ``files`` written over the previous content; return its sha.

        With ``add_all=False`` the work repository's index is committed as it is.
        """
        work = self.work_root / name
        write_files(work, files)
        if add_all:
            git(["add", "-A"], work)
        git(["commit", "--quiet", "--allow-empty", "-m", message], work)
        bare = self.project_root / f"{name}.git"
        git(["push", "--quiet", str(bare), "HEAD:refs/heads/main"], work)
        git(["update-server-info"], bare)  # for the dumb protocol
        return git(["rev-parse", "HEAD"], work)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}.git"

    def ref(self, name: str, sha: str) -> str:
        """The uses[].pack reference for commit ``sha`` of repository ``name``."""
        return f"git+{self.url(name)}#{sha}"

    def start(self, cert: Path, key: Path) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                self._cgi()

            def do_POST(self) -> None:
                self._cgi()

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _static(self, path: str) -> None:
                root = server.project_root.resolve()
                target = (root / unquote(path).lstrip("/")).resolve()
                if not target.is_relative_to(root) or not target.is_file():
                    self.send_error(404)
                    return
                data = target.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _cgi(self) -> None:
                server.hits.append(f"{self.command} {self.path}")
                path, _, query = self.path.partition("?")
                if server.dumb:
                    self._static(path)
                    return
                body = self._body()
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull,
                    "GIT_PROJECT_ROOT": str(server.project_root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": unquote(path),
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_ADDR": self.client_address[0],
                }
                if self.headers.get("Git-Protocol"):
                    env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=30)
                head, sep, payload = proc.stdout.partition(b"\r\n\r\n")
                if not sep:
                    head, _, payload = proc.stdout.partition(b"\n\n")
                status, headers = 200, []
                for line in head.decode("latin-1").splitlines():
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        self.base_url = f"https://127.0.0.1:{httpd.server_address[1]}"
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        """Shut the server down (later fetches fail to connect, as when offline)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A throw-away self-signed certificate for 127.0.0.1 and its key, written to ``folder``."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="session")
def tls_material(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A throw-away self-signed certificate for 127.0.0.1 and its key."""
    return self_signed_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def https_git_server(
    tmp_path: Path, tls_material: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitHttpsServer]:
    """A running HTTPS git server; ``GIT_SSL_CAINFO`` points at its certificate for this test."""
    cert, key = tls_material
    project = tmp_path / "git-server"
    project.mkdir()
    server = GitHttpsServer(project_root=project, work_root=tmp_path / "git-work", ca_file=cert)
    server.start(cert, key)
    monkeypatch.setenv("GIT_SSL_CAINFO", str(cert))
    try:
        yield server
    finally:
        server.stop()
