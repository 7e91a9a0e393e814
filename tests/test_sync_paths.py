"""``host.files.sync_paths``: many files written without fsync made durable together.

A fetch writes thousands of foreign entries with ``durable=False``; their durability then rests on
this one call. Real files and the real ``syncfs`` of libc (Linux); the fallback and the failure
are driven by replacing the ``syncfs`` lookup, since a real disk cannot be made to fail here.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path

import pytest

from agentreview.host import files
from agentreview.host.files import FileWriteError, atomic_write_text, sync_paths


def written(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / folder / f"{n}.json" for folder in ("a", "b") for n in range(20)]
    for path in paths:
        atomic_write_text(path, "{}\n", durable=False)
    return paths


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")
def test_one_syncfs_makes_files_in_several_folders_of_one_file_system_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = files._syncfs()
    assert real is not None
    calls: list[str] = []
    fsyncs: list[int] = []
    monkeypatch.setattr(files, "_syncfs", lambda: lambda fd: (calls.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                                 real(fd))[1])  # fmt: skip
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd))
    sync_paths(written(tmp_path))
    assert calls == [str(tmp_path / "a")] and fsyncs == []  # one call for the one file system, no fsync per file


def test_without_syncfs_every_file_and_folder_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = written(tmp_path)
    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(files, "_syncfs", lambda: None)
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd))[1])
    sync_paths(paths)
    assert sorted(synced) == sorted([*map(str, paths), str(tmp_path / "a"), str(tmp_path / "b")])


def test_a_failed_sync_is_one_line_naming_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = written(tmp_path)

    def failing(fd: int) -> int:
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(files, "_syncfs", lambda: failing)
    with pytest.raises(FileWriteError) as caught:
        sync_paths(paths)
    message = str(caught.value)
    assert str(tmp_path / "a") in message and "\n" not in message


def test_a_folder_gone_before_the_sync_is_a_write_error(tmp_path: Path) -> None:
    with pytest.raises(FileWriteError):
        sync_paths([tmp_path / "gone" / "x.json"])
