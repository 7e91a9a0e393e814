"""agentreview-packs-git: loads ``git+https://<url>#<40-hex sha>`` review packs.

A hostile reference is refused before git runs, the pinned commit is fetched over https only, and
every cache hit is re-verified against the sha (AIP-62 open question 5) without git or GitPython.
A git pack is never trusted: its commands need ``allowCommands: true``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from agentreview.api import LoadedPack, PackLoadContext, PackLoader, PackLoadError, PackUnavailableError, hookimpl
from agentreview_packs_git.refs import split_git_ref


class GitPackLoader:
    form = "git+https"

    def load(self, ref: str, ctx: PackLoadContext) -> LoadedPack:
        url, sha = split_git_ref(ref)
        from agentreview.api import pack_cache_dir
        from agentreview_packs_git.cache import verify_entry
        from agentreview_packs_git.tree import TreeMismatchError

        entry = pack_cache_dir(ctx.home) / sha
        if os.path.lexists(entry):
            try:
                return self._loaded(entry, verify_entry(entry, sha), url, ref)
            except (TreeMismatchError, OSError) as exc:
                return self._refetch(ref, url, sha, entry, ctx, problem=str(exc))
        return self._refetch(ref, url, sha, entry, ctx, problem=None)

    @staticmethod
    def _loaded(entry: Path, manifest: bytes | None, url: str, ref: str) -> LoadedPack:
        root = Path(os.path.realpath(entry))
        if manifest is None:  # missing, or a symlink: the confined reader decides (and names the fix)
            from agentreview.api import read_pack_manifest

            manifest = read_pack_manifest(root, ref)
        return LoadedPack(root=root, source=manifest, trusted=False, origin=url)

    def _refetch(
        self, ref: str, url: str, sha: str, entry: Path, ctx: PackLoadContext, *, problem: str | None
    ) -> LoadedPack:
        """Under the per-sha lock: re-check the entry (another process may have fixed it), drop a bad
        one, fetch, publish with one rename."""
        from agentreview.api import FileLock
        from agentreview.api import LockTimeout as Timeout
        from agentreview_packs_git.cache import FetchError, discard, fetch_entry, verify_entry
        from agentreview_packs_git.tree import TreeMismatchError

        tampered = f"the cached copy at {entry} was modified ({problem}) and was discarded; " if problem else ""
        if ctx.offline:
            raise PackUnavailableError(f"pack '{ref}': {tampered}not in the pack cache and running offline")
        deadline = time.monotonic() + ctx.timeout_s
        entry.parent.mkdir(parents=True, exist_ok=True)
        try:
            with FileLock(str(entry.parent / f".{sha}.lock"), timeout=ctx.timeout_s):
                if os.path.lexists(entry):
                    try:
                        return self._loaded(entry, verify_entry(entry, sha), url, ref)
                    except (TreeMismatchError, OSError):
                        discard(entry)
                try:
                    fresh = fetch_entry(entry.parent, url, sha, deadline)
                except FetchError as exc:
                    raise PackUnavailableError(
                        f"pack '{ref}': {tampered}cannot fetch commit {sha} from {url}: {exc}"
                    ) from exc
                except TreeMismatchError as exc:
                    raise PackLoadError(f"pack '{ref}': {exc}") from exc
                try:
                    os.rename(fresh, entry)
                except OSError:  # lost a race with a process that does not lock: keep the winner's copy
                    discard(fresh)
                try:
                    return self._loaded(entry, verify_entry(entry, sha), url, ref)
                except (TreeMismatchError, OSError) as exc:
                    raise PackLoadError(f"pack '{ref}': the fetched copy does not verify ({exc})") from exc
        except Timeout as exc:
            raise PackUnavailableError(
                f"pack '{ref}': another agentreview process held the cache lock for {sha} longer than "
                f"{ctx.timeout_s:.0f}s"
            ) from exc


@hookimpl
def agentreview_register_pack_loaders(register: Callable[[PackLoader], None]) -> None:
    register(GitPackLoader())
