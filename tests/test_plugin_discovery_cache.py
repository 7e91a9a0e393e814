"""The plugin discovery cache: a warm command lists the same plugins as a real scan, without importlib.metadata.

Each test builds throw-away distributions (a ``<name>-<version>.dist-info`` with METADATA and
entry_points.txt declaring the ``agentreview`` group, plus the module) in a folder on ``sys.path``,
runs plugin discovery in a fresh subprocess, then installs, removes, upgrades or rewrites them the
way pip, an editor or ``cp -p`` would, and checks that the next process sees exactly what
importlib.metadata would. A planted, corrupt, foreign or unwritable cache only costs the real scan.
No test waits on the clock: the cache's key is the ``stat`` of what a scan reads, not a time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.plugin_helpers import EXECUTOR_PLUGIN

AGENTREVIEW = Path(sys.executable).with_name("agentreview")
SHIPPED = "agentreview-core,agentreview-command,agentreview-agent,agentreview-packs-git"


# What one process discovered: the plugins it loaded, its warnings, and whether it imported importlib.metadata.
PROBE = """
import json, os, sys
if os.environ.get("PROBE_SITEDIR"):
    import site
    site.addsitedir(os.environ["PROBE_SITEDIR"])  # processes its .pth files, as for site-packages
from agentreview.plugins.registry import load_registry
registry = load_registry(cache=not os.environ.get("PROBE_NO_CACHE"))
print(json.dumps({
    "plugins": sorted([p.name, p.distribution, p.version, p.module, sorted(p.hooks)] for p in registry.plugins),
    "warnings": registry.warnings,
    "metadata": "importlib.metadata" in sys.modules,
}))
"""

# The real console entry, reporting at exit whether importlib.metadata was imported.
CONSOLE = """
import atexit, sys
atexit.register(lambda: sys.stderr.write(f"metadata={'importlib.metadata' in sys.modules}\\n"))
from agentreview.cli.entry import console
sys.argv = ["agentreview", *sys.argv[1:]]
console()
"""


def make_dist(
    site: Path, dist: str, version: str, module: str, *, ep_name: str | None = None, kind: str | None = None
) -> Path:
    """Install one distribution into ``site``: its module and a dist-info declaring it in the group."""
    (site / f"{module}.py").write_text(textwrap.dedent(EXECUTOR_PLUGIN.format(kind=kind or module)))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[agentreview]\n{ep_name or dist} = {module}\n")
    return info


def rewrite_keeping_mtime(path: Path, text: str) -> None:
    """Rewrite a file in place (same inode, folder untouched) and put its mtime back, as ``cp -p`` would.
    Only its ctime tells: two process starts lie between the file's making and this, far more than a tick."""
    before = path.stat()
    with open(path, "r+") as fh:
        fh.seek(0)
        fh.truncate()
        fh.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns, "the ctime did not move: the test cannot tell this rewrite"


class Env:
    """A site folder on ``sys.path``, a home, and a way to run discovery in a new process."""

    def __init__(self, tmp_path: Path) -> None:
        self.site = tmp_path / "site"
        self.home = tmp_path / "home"
        self.cwd = tmp_path / "cwd"  # ``python -c`` puts the working folder on sys.path: keep it still
        for folder in (self.site, self.home, self.cwd):
            folder.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "PYTHON"))}
        self.env.update(PYTHONPATH=str(self.site), AGENTREVIEW_HOME=str(self.home), AGENTREVIEW_DISABLE_PLUGINS=SHIPPED)

    def probe(self, **extra: str) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, "-c", PROBE], env={**self.env, **extra}, cwd=self.cwd,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", proc.stderr
        return json.loads(proc.stdout)

    def console(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", CONSOLE, *args], env={**self.env, **extra}, cwd=self.cwd,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    def cache_files(self) -> list[Path]:
        folder = self.home / "cache"
        return sorted(folder.glob("plugins-*.json")) if folder.is_dir() else []

    def cache_file(self) -> Path:
        (path,) = self.cache_files()
        return path

    def warm(self, **extra: str) -> dict[str, Any]:
        """Run once to fill the cache, then once from it; both must agree. Returns the warm answer."""
        cold = self.probe(**extra)
        assert cold["metadata"] is True
        assert self.cache_files(), "the scan was not cached"
        hot = self.probe(**extra)
        assert hot["metadata"] is False, "a current cache must spare the importlib.metadata import"
        assert hot == {**cold, "metadata": False}
        return hot


def names(result: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {name: (dist, version, module) for name, dist, version, module, _ in result["plugins"]}


@pytest.fixture
def env(tmp_path: Path) -> Env:
    e = Env(tmp_path)
    make_dist(e.site, "fake-alpha", "1.0.0", "fake_alpha")
    make_dist(e.site, "fake-beta", "2.0.0", "fake_beta")
    return e


# --------------------------------------------------------------------------- the warm path


def test_a_warm_cache_lists_the_same_plugins_without_importing_importlib_metadata(env: Env) -> None:
    hot = env.warm()
    assert names(hot) == {"fake-alpha": ("fake-alpha", "1.0.0", "fake_alpha"),
                          "fake-beta": ("fake-beta", "2.0.0", "fake_beta")}  # fmt: skip
    assert hot["plugins"][0][4] == ["agentreview_register_lane_executors"]


def test_the_plugins_command_is_the_same_from_the_cache_and_imports_no_metadata(env: Env) -> None:
    env.env.pop("AGENTREVIEW_DISABLE_PLUGINS")  # the shipped plugins too, as a user has them
    cold = env.console("plugins", "--json")
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr == "metadata=True\n"
    hot = env.console("plugins", "--json")
    assert hot.returncode == 0, hot.stderr
    assert hot.stderr == "metadata=False\n"
    assert hot.stdout == cold.stdout
    listed = {row["name"] for row in json.loads(hot.stdout)}
    assert {"fake-alpha", "fake-beta", "builtin-path-loader", "agentreview-command"} <= listed


def test_the_allow_and_block_lists_apply_to_a_cached_listing(env: Env) -> None:
    env.warm()
    only = env.probe(AGENTREVIEW_PLUGINS="fake-beta")
    assert only["metadata"] is False and list(names(only)) == ["fake-beta"]
    blocked = env.probe(AGENTREVIEW_DISABLE_PLUGINS=f"{SHIPPED},fake_beta")
    assert blocked["metadata"] is False and list(names(blocked)) == ["fake-alpha"]


def test_a_name_two_distributions_declare_warns_the_same_from_the_cache(env: Env) -> None:
    make_dist(env.site, "fake-gamma", "3.0.0", "fake_gamma", ep_name="shared")
    make_dist(env.site, "fake-delta", "4.0.0", "fake_delta", ep_name="shared")
    hot = env.warm()  # asserts the cold and warm answers are identical, warnings included
    (warning,) = hot["warnings"]
    assert "plugin 'shared' is declared by two distributions" in warning
    loaded = names(hot)["shared"][0]
    blocked = env.probe(AGENTREVIEW_DISABLE_PLUGINS=f"{SHIPPED},{loaded}")
    assert blocked["metadata"] is False and blocked["warnings"] == []
    assert names(blocked)["shared"][0] == ({"fake-gamma", "fake-delta"} - {loaded}).pop()


def test_without_the_cache_the_home_is_neither_read_nor_written(env: Env) -> None:
    """``load_registry(cache=False)``: what ``agentreview demo`` uses to leave the caller's home untouched."""
    result = env.probe(PROBE_NO_CACHE="1")
    assert result["metadata"] is True and sorted(names(result)) == ["fake-alpha", "fake-beta"]
    assert list(env.home.iterdir()) == []
    env.warm()
    (env.site / "fake_cached_only.py").write_text(textwrap.dedent(EXECUTOR_PLUGIN.format(kind="cached-only")))
    path = env.cache_file()
    document = json.loads(path.read_text())
    document["entries"].append(["fake-cached-only", "fake_cached_only", "fake-cached-only", "1.0"])
    path.write_text(json.dumps(document))
    assert "fake-cached-only" in names(env.probe())  # the (forged) cache is what a command reads...
    assert "fake-cached-only" not in names(env.probe(PROBE_NO_CACHE="1"))  # ...and cache=False does not


# --------------------------------------------------------------------------- what must invalidate it


def test_a_path_entry_that_changes_but_lists_the_same_distributions_keeps_the_cache(env: Env) -> None:
    """A first import's ``__pycache__``, an editor's file: no distribution folder changed, so the key holds."""
    env.warm()
    before = env.cache_file().read_bytes()
    (env.site / "notes.txt").write_text("not a distribution\n")
    (env.site / "editor-backup").mkdir()
    assert env.probe()["metadata"] is False
    assert env.cache_file().read_bytes() == before


def test_installing_a_distribution_is_seen_by_the_next_command(env: Env) -> None:
    env.warm()
    make_dist(env.site, "fake-new", "0.1.0", "fake_new")
    assert "fake-new" in names(env.probe())
    assert names(env.probe())["fake-new"] == ("fake-new", "0.1.0", "fake_new")


def test_removing_a_distribution_is_seen_and_is_no_warning(env: Env) -> None:
    env.warm()
    shutil.rmtree(env.site / "fake_beta-2.0.0.dist-info")
    (env.site / "fake_beta.py").unlink()
    after = env.probe()
    assert list(names(after)) == ["fake-alpha"] and after["warnings"] == []


def test_upgrading_a_distribution_is_seen(env: Env) -> None:
    env.warm()
    shutil.rmtree(env.site / "fake_alpha-1.0.0.dist-info")
    make_dist(env.site, "fake-alpha", "1.1.0", "fake_alpha")
    assert names(env.probe())["fake-alpha"] == ("fake-alpha", "1.1.0", "fake_alpha")


def test_reinstalling_the_same_version_with_other_entry_points_is_seen(env: Env) -> None:
    env.warm()
    info = env.site / "fake_alpha-1.0.0.dist-info"
    shutil.rmtree(info)  # pip removes the old dist-info and writes the new one under the same name
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-alpha\nVersion: 1.0.0\n")
    (info / "entry_points.txt").write_text("[agentreview]\nalpha-renamed = fake_alpha\n")
    assert sorted(names(env.probe())) == ["alpha-renamed", "fake-beta"]


def test_an_entry_points_file_rewritten_in_place_with_its_mtime_put_back_is_seen(env: Env) -> None:
    env.warm()
    path = env.site / "fake_alpha-1.0.0.dist-info" / "entry_points.txt"
    rewrite_keeping_mtime(path, "[agentreview]\nfake-omega = fake_alpha\n")  # same size, same mtime
    found = names(env.probe())
    assert found["fake-omega"] == ("fake-alpha", "1.0.0", "fake_alpha") and "fake-alpha" not in found


def test_a_version_rewritten_in_place_in_metadata_is_seen(env: Env) -> None:
    env.warm()
    path = env.site / "fake_alpha-1.0.0.dist-info" / "METADATA"
    rewrite_keeping_mtime(path, path.read_text().replace("1.0.0", "1.0.1"))
    assert names(env.probe())["fake-alpha"] == ("fake-alpha", "1.0.1", "fake_alpha")


def test_a_distribution_that_gains_the_group_in_place_is_seen(env: Env) -> None:
    info = env.site / "other_tool-5.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-tool\nVersion: 5.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nother = other_tool:main\n")
    (env.site / "other_tool.py").write_text(textwrap.dedent(EXECUTOR_PLUGIN.format(kind="other")))
    env.warm()
    rewrite_keeping_mtime(info / "entry_points.txt", "[agentreview]\nother-tool = other_tool\n")
    assert "other-tool" in names(env.probe())


def test_an_entry_points_file_added_to_a_distribution_is_seen(env: Env) -> None:
    info = env.site / "later_tool-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: later-tool\nVersion: 1.0\n")
    (env.site / "later_tool.py").write_text(textwrap.dedent(EXECUTOR_PLUGIN.format(kind="later")))
    env.warm()
    (info / "entry_points.txt").write_text("[agentreview]\nlater-tool = later_tool\n")
    assert "later-tool" in names(env.probe())


def test_a_path_entry_added_or_removed_by_pythonpath_is_seen(env: Env, tmp_path: Path) -> None:
    env.warm()
    other = tmp_path / "other-site"
    other.mkdir()
    make_dist(other, "fake-elsewhere", "7.0", "fake_elsewhere")
    both = {"PYTHONPATH": os.pathsep.join([str(env.site), str(other)])}
    assert "fake-elsewhere" in names(env.probe(**both))
    env.probe(**both)
    assert env.probe(**both)["metadata"] is False  # one cache file per interpreter: the new key replaced it
    assert "fake-elsewhere" not in names(env.probe())


def test_an_editable_install_reinstalled_with_new_entry_points_is_seen(env: Env, tmp_path: Path) -> None:
    """``pip install -e``: a .pth in site-packages puts the project on sys.path, the dist-info lives in
    site-packages, and setuptools leaves an egg-info in the project (shadowed by the dist-info)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "fake_editable.py").write_text(textwrap.dedent(EXECUTOR_PLUGIN.format(kind="editable")))
    egg = project / "fake_editable.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: fake-editable\nVersion: 0.1\n")
    (egg / "entry_points.txt").write_text("[agentreview]\nfake-editable = fake_editable\n")
    packages = tmp_path / "site-packages"
    packages.mkdir()
    shutil.copytree(egg, packages / "fake_editable-0.1.dist-info")
    (packages / "fake_editable-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-editable\nVersion: 0.1\n"
    )
    (packages / "__editable__.fake_editable-0.1.pth").write_text(f"{project}\n")
    sitedir = {"PROBE_SITEDIR": str(packages)}
    hot = env.warm(**sitedir)
    assert names(hot)["fake-editable"] == ("fake-editable", "0.1", "fake_editable")
    # The developer adds an entry point and runs pip install -e again: the egg-info is rewritten in
    # place, the dist-info replaced.
    (project / "fake_editable_two.py").write_text(textwrap.dedent(EXECUTOR_PLUGIN.format(kind="editable-two")))
    text = "[agentreview]\nfake-editable = fake_editable\nfake-editable-two = fake_editable_two\n"
    (egg / "entry_points.txt").write_text(text)
    shutil.rmtree(packages / "fake_editable-0.1.dist-info")
    shutil.copytree(egg, packages / "fake_editable-0.1.dist-info")
    (packages / "fake_editable-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-editable\nVersion: 0.1\n"
    )
    after = env.probe(**sitedir)
    assert after["metadata"] is True and "fake-editable-two" in names(after)


def test_an_older_core_install_that_declares_the_built_ins_lists_each_once(env: Env) -> None:
    """The core once declared its built-ins as entry points; an environment installed then still does."""
    info = env.site / "agentreview_core-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agentreview-core\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[agentreview]\nbuiltin-path-loader = agentreview.packs.path_loader\n")
    result = env.probe(AGENTREVIEW_DISABLE_PLUGINS=SHIPPED.replace("agentreview-core,", ""))
    assert result["warnings"] == []
    assert [row[0] for row in result["plugins"]].count("builtin-path-loader") == 1


# --------------------------------------------------------------------------- a listing the key missed


def test_a_cached_plugin_that_is_no_longer_installed_means_one_rescan_not_a_warning(env: Env) -> None:
    """A stale cache (a listing the key could not see) names a module that is gone: loading it
    fails with ImportError, which makes the command ask importlib.metadata once instead of warning."""
    env.warm()
    path = env.cache_file()
    document = json.loads(path.read_text())
    document["entries"].append(["fake-ghost", "fake_ghost_module", "fake-ghost", "1.0"])
    path.write_text(json.dumps(document))
    result = env.probe()
    assert result["metadata"] is True  # it rescanned
    assert result["warnings"] == [] and "fake-ghost" not in names(result)
    assert sorted(names(result)) == ["fake-alpha", "fake-beta"]
    assert "fake-ghost" not in path.read_text()  # and kept the real answer
    assert env.probe()["metadata"] is False


def test_a_plugin_whose_module_is_missing_is_still_one_warning_from_a_warm_cache(env: Env) -> None:
    make_dist(env.site, "fake-broken", "1.0", "fake_broken")
    (env.site / "fake_broken.py").unlink()
    cold = env.probe()
    hot = env.probe()
    assert hot["metadata"] is True  # the ImportError made it check once: the listing was right
    (warning,) = hot["warnings"]
    assert cold["warnings"] == hot["warnings"]
    assert "plugin 'fake-broken' (fake-broken 1.0) failed to load" in warning and "ModuleNotFoundError" in warning
    assert sorted(names(hot)) == ["fake-alpha", "fake-beta"]


# --------------------------------------------------------------------------- a cache nobody should trust


def _assert_scans_and_lists_both(env: Env) -> dict[str, Any]:
    result = env.probe()
    assert result["metadata"] is True
    assert sorted(names(result)) == ["fake-alpha", "fake-beta"] and result["warnings"] == []
    return result


def test_a_fifo_planted_as_the_cache_is_refused_at_once_and_replaced(env: Env) -> None:
    env.warm()
    path = env.cache_file()
    path.unlink()
    os.mkfifo(path)
    _assert_scans_and_lists_both(env)  # the probe's timeout is the proof it did not block on the FIFO
    assert path.is_file() and not path.is_fifo()
    assert env.probe()["metadata"] is False


def test_a_symlink_planted_as_the_cache_is_not_followed(env: Env, tmp_path: Path) -> None:
    env.warm()
    path = env.cache_file()
    elsewhere = tmp_path / "elsewhere.json"
    document = json.loads(path.read_text())
    document["entries"].append(["fake-planted", "fake_planted", "fake-planted", "6.6.6"])
    elsewhere.write_text(json.dumps(document))
    path.unlink()
    path.symlink_to(elsewhere)
    result = _assert_scans_and_lists_both(env)
    assert "fake-planted" not in names(result) and result["warnings"] == []
    assert not path.is_symlink() and "fake-planted" in elsewhere.read_text()  # replaced, target untouched


def test_a_cache_folder_that_is_a_symlink_is_neither_read_nor_written_through(env: Env, tmp_path: Path) -> None:
    env.warm()
    real = tmp_path / "real-cache"
    shutil.move(env.home / "cache", real)
    (env.home / "cache").symlink_to(real)
    for path in real.iterdir():
        os.utime(path, ns=(0, 0))  # a write through the link would give the file a new inode and mtime
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in real.iterdir()}
    for _ in range(2):
        _assert_scans_and_lists_both(env)
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in real.iterdir()} == before


def test_an_oversized_cache_is_refused_and_replaced(env: Env) -> None:
    env.warm()
    path = env.cache_file()
    path.write_text(path.read_text() + " " * (1024 * 1024 + 1))  # valid JSON, but too large to be ours
    _assert_scans_and_lists_both(env)
    assert path.stat().st_size < 1024 * 1024
    assert env.probe()["metadata"] is False


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff\xfe not utf-8",
        b"{not json",
        b"[" * 100_000 + b"]" * 100_000,  # deeper than the JSON parser's recursion limit
        b"[]",
        b'{"format": "agentreview-plugin-cache/0"}',
    ],
    ids=["empty", "not utf-8", "not json", "too deep", "a list", "another format"],
)
def test_a_garbage_cache_falls_back_to_the_scan_and_is_rewritten(env: Env, content: bytes) -> None:
    env.warm()
    env.cache_file().write_bytes(content)
    _assert_scans_and_lists_both(env)
    assert env.probe()["metadata"] is False


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d["entries"].append(["only", "three", None]),
        lambda d: d["entries"].append(["x", 1, "d", "v"]),
        lambda d: d["entries"].append(["x", "x", "dist-without-version", None]),
        lambda d: d["entries"].append("not a row"),
        lambda d: d.__setitem__("key", "0" * 64),
        lambda d: d.__setitem__("format", "agentreview-plugin-cache/1"),
        lambda d: d.__setitem__("entries", {"not": "a list"}),
    ],
    ids=["short entry", "non-string value", "half a distribution", "not a row", "another environment",
         "another format", "entries not a list"],
)  # fmt: skip
def test_a_malformed_or_foreign_cache_is_ignored(env: Env, corrupt: Any) -> None:
    env.warm()
    path = env.cache_file()
    document = json.loads(path.read_text())
    corrupt(document)
    path.write_text(json.dumps(document))
    _assert_scans_and_lists_both(env)
    assert env.probe()["metadata"] is False


def test_a_home_where_the_cache_cannot_be_written_never_fails_a_command(env: Env) -> None:
    (env.home / "cache").write_text("a file where the cache folder should be\n")
    for _ in range(2):
        _assert_scans_and_lists_both(env)
    proc = env.console("plugins", "--json")
    assert proc.returncode == 0 and proc.stderr == "metadata=True\n"


def test_a_finder_that_reports_its_own_distributions_bypasses_the_cache(env: Env) -> None:
    """A meta-path finder with ``find_distributions`` (an app bundler's) is outside the key: nothing is cached."""
    env.warm()
    code = (
        "import sys\n"
        "class Finder:\n"
        "    def find_spec(self, *a): return None\n"
        "    def find_distributions(self, *a): return iter(())\n"
        "sys.meta_path.append(Finder())\n" + PROBE
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env.env, cwd=env.cwd, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["metadata"] is True and sorted(names(result)) == ["fake-alpha", "fake-beta"]
