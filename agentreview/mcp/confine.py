"""Where the MCP server may work: the client's roots, and the export file written without following a link.

A tool's paths are chosen by a model reading the change author's text, so each must lie, links resolved, inside
:class:`Roots`; :func:`write_below` opens every folder with ``O_NOFOLLOW``, so a planted link is refused.
"""

from __future__ import annotations

import contextlib
import os
import stat
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

import anyio

from agentreview.mcp.args import ToolFailure
from agentreview.model.record import record

ROOTS_TIMEOUT_S = 30.0  # how long a tool call waits for the client's roots/list


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def _below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@record
class Roots:
    """The directories this server works in, and where they came from (for the refusal's words)."""

    dirs: tuple[Path, ...]
    source: str

    @classmethod
    def of_server(cls, start: Path, extra: Sequence[Path] = ()) -> Roots:
        """A client without roots: the start directory and the ``--root`` folders."""
        return cls(tuple(Path(_real(p)) for p in (start, *extra)), "the server's start directory and --root")

    @classmethod
    def of_client(cls, uris: Iterable[str]) -> Roots:
        """The client's declared roots (``file://`` URIs; any other scheme names no directory here)."""
        dirs = []
        for uri in uris:
            parts = urllib.parse.urlsplit(uri)
            if parts.scheme == "file" and parts.netloc in ("", "localhost"):
                path = urllib.parse.unquote(parts.path)
                if os.path.isabs(path):
                    dirs.append(Path(_real(path)))
        return cls(tuple(dirs), "the client's roots")

    def holding(self, path: str | os.PathLike[str]) -> Path | None:
        """The root whose real path holds ``path``'s real path; None when none does."""
        real = _real(path)
        return next((root for root in self.dirs if _below(real, str(root))), None)

    @property
    def shown(self) -> str:
        """Where the roots came from and which they are, as refusals name them."""
        return f"{self.source}: " + (", ".join(str(d) for d in self.dirs) or "none declared")

    def refusal(self, name: str, value: str) -> ToolFailure:
        return ToolFailure(
            f"{name} {value!r} is outside the roots this server works in ({self.shown}) — "
            "give a path inside one of them"
        )

    def directory(self, path: Path | None, name: str = "cwd") -> Path | None:
        """``path`` (already checked to be an existing absolute directory) when it is inside a root."""
        if path is not None and self.holding(path) is None:
            raise self.refusal(name, str(path))
        return path

    def repository(self, cwd: Path) -> None:
        """Refuse a ``cwd`` whose repository's root (where the review's commands run) is outside every root;
        a ``cwd`` that is no repository is left to the run to report."""
        from agentreview.host import git

        try:
            top = git.repo_root(cwd)
        except git.GitError:
            return
        if self.holding(top) is None:
            raise self.refusal("cwd", f"{cwd} (repository {top})")

    def manifest(self, value: str | None, cwd: Path) -> None:
        """Refuse a ``manifestPath`` (absolute, or relative to ``cwd``) whose real path is outside every root."""
        if value is not None and self.holding(cwd / Path(value).expanduser()) is None:
            raise self.refusal("manifestPath", value)


def export_base(
    out_path: str, relative_to: Path, roots: Roots | None, export_dir: Path | None
) -> tuple[Path, tuple[str, ...]]:
    """Where ``outPath`` is written: the base folder it is allowed under (the export folder, else its root) and
    its parts below it. ``..`` is refused; containment is decided on the path as written, never resolved: the
    links on the way are refused when the file is written (:func:`write_below`)."""
    given = Path(out_path).expanduser()
    if ".." in given.parts:
        raise ToolFailure(f"outPath {out_path!r} may not contain '..' — give the path inside the folder itself")
    target = os.path.normpath(given if given.is_absolute() else relative_to / given)
    if roots is None:  # unconfined (a library caller): the path's own folder
        return Path(os.path.dirname(target)), (os.path.basename(target),)
    bases = [export_dir] if export_dir is not None else []
    bases += list(roots.dirs)
    for base in bases:
        for spelled in dict.fromkeys((os.path.normpath(base), _real(base))):
            if target != spelled and _below(target, spelled):
                return Path(spelled), tuple(Path(os.path.relpath(target, spelled)).parts)
    allowed = ", ".join(str(b) for b in bases) or "none"
    raise ToolFailure(
        f"outPath {out_path!r} is outside the repository's export folder and the roots this server works in "
        f"({allowed}) — give a path inside one of them, or omit outPath to use verdict.exportDir"
    )


def write_below(base: Path, parts: Sequence[str], data: bytes, *, mode: int = 0o644) -> Path:
    """Write ``data`` to ``base/<parts>`` atomically, following no link below ``base``: each folder opened
    ``O_NOFOLLOW`` from its parent, the file renamed over the name from an exclusive temporary one, so a
    link at the name is refused, or (swapped in at the last moment) replaced, never written through."""
    path = base.joinpath(*parts)
    flags = os.O_RDONLY | os.O_DIRECTORY
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(base, flags)
    except OSError as exc:
        raise ToolFailure(f"cannot write {path}: {base}: {exc.strerror or exc}") from exc
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                inner = os.open(part, flags | nofollow, dir_fd=fd)
            except OSError as exc:
                raise ToolFailure(
                    f"cannot write {path}: {part!r} on the way is a link or not a folder ({exc.strerror or exc}) — "
                    "exports are written only into real folders"
                ) from exc
            os.close(fd)
            fd = inner
        name = parts[-1]
        with contextlib.suppress(FileNotFoundError):
            found = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(found.st_mode):
                raise ToolFailure(f"cannot write {path}: it exists and is a link or not a regular file — remove it")
        tmp = f".{name}.tmp.{os.getpid()}.{os.urandom(6).hex()}"
        try:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, mode, dir_fd=fd)
            try:
                with os.fdopen(out, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            os.fsync(fd)
        except OSError as exc:
            raise ToolFailure(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    return path


class NoRootsChannel(Exception):
    """The session cannot ask the client anything (a protocol without server-initiated requests):
    the call is confined as for a client without roots."""


class ClientRoots:
    """The roots a tool call is confined to: the client's, asked once and again after it says they
    changed (``notifications/roots/list_changed``), or ``fallback`` for a client without roots."""

    def __init__(self, fallback: Roots) -> None:
        self.fallback = fallback
        self._declared: Roots | None = None

    def changed(self) -> None:
        """The client's roots changed: the next call asks again."""
        self._declared = None

    async def current(self, has_roots: bool, ask: Callable[[], Awaitable[Iterable[str]]]) -> Roots:
        """The roots now: ``ask()`` (the client's ``roots/list``, as URIs) when ``has_roots`` and not
        known yet; a client that does not answer is a :class:`ToolFailure`, never an unconfined call."""
        if not has_roots:
            return self.fallback
        if self._declared is None:
            try:
                with anyio.fail_after(ROOTS_TIMEOUT_S):
                    uris = list(await ask())
            except NoRootsChannel:
                return self.fallback
            except TimeoutError as exc:
                raise ToolFailure(f"the client did not answer roots/list within {ROOTS_TIMEOUT_S:.0f}s") from exc
            except Exception as exc:  # the client's error: nothing is done outside roots we do not know
                raise ToolFailure(f"the client's roots/list failed: {exc}") from exc
            self._declared = Roots.of_client(uris)
        return self._declared
