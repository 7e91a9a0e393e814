"""The plugin system with real entry points.

Each test builds throw-away distributions (a ``<name>-<version>.dist-info`` with METADATA and
entry_points.txt, plus the module) in a folder put on PYTHONPATH, and runs the installed
``agentreview plugins`` as a subprocess, so discovery goes through importlib.metadata exactly
as it does for a pip-installed plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pluggy
import pytest

from agentreview.plugins import registry as plugins_module
from agentreview.plugins.registry import PluginConflictError, load_registry, make_plugin_manager
from tests.plugin_helpers import EXECUTOR_PLUGIN

AGENTREVIEW = Path(sys.executable).with_name("agentreview")

SIGNER_PLUGIN = """
from agentreview import hookimpl


class Signer:
    name = {name!r}


@hookimpl
def agentreview_register_signers(register):
    register(Signer())


@hookimpl
def agentreview_register_reviewer_providers(register):
    pass
"""


def make_dist(site: Path, dist: str, version: str, module: str, source: str, ep_name: str | None = None) -> None:
    """Write one distribution: its module and a dist-info declaring it in the ``agentreview`` group."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[agentreview]\n{ep_name or dist} = {module}\n")


def run_plugins(site: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    full_env.update(PYTHONPATH=str(site), AGENTREVIEW_HOME=str(home), **env)
    return subprocess.run(
        [str(AGENTREVIEW), "plugins", "--json"], env=full_env, capture_output=True, text=True, timeout=60
    )


def listed(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr
    return {row["name"]: row for row in json.loads(proc.stdout)}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    make_dist(path, "fake-alpha", "1.2.3", "fake_alpha", EXECUTOR_PLUGIN.format(kind="alpha"))
    make_dist(path, "fake-beta", "0.4.0", "fake_beta", EXECUTOR_PLUGIN.format(kind="beta"))
    make_dist(path, "fake-signer", "2.0.0", "fake_signer", SIGNER_PLUGIN.format(name="fake"), ep_name="signer-ep")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("AGENTREVIEW_HOME", str(path))
    return path


def test_lists_distribution_version_hooks_and_what_each_provides(site: Path, home: Path) -> None:
    proc = run_plugins(site, home)
    rows = listed(proc)
    assert rows["fake-alpha"] == {
        "name": "fake-alpha",
        "distribution": "fake-alpha",
        "version": "1.2.3",
        "module": "fake_alpha",
        "hooks": ["agentreview_register_lane_executors"],
        "provides": ["lane_executors:alpha"],
    }
    assert rows["signer-ep"]["distribution"] == "fake-signer"
    assert rows["signer-ep"]["version"] == "2.0.0"
    assert rows["signer-ep"]["hooks"] == [
        "agentreview_register_reviewer_providers",
        "agentreview_register_signers",
    ]
    assert rows["signer-ep"]["provides"] == ["signers:fake"]
    assert "builtin-path-loader" in rows  # the core's own built-ins are plugins like any other


def test_only_list_loads_only_those_by_entry_point_or_distribution_name(site: Path, home: Path) -> None:
    rows = listed(run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha, fake_signer"))
    assert sorted(rows) == ["fake-alpha", "signer-ep"]


def test_disable_list_blocks_and_wins_over_the_only_list(site: Path, home: Path) -> None:
    rows = listed(run_plugins(site, home, AGENTREVIEW_DISABLE_PLUGINS="fake-beta,signer-ep"))
    assert "fake-alpha" in rows and "fake-beta" not in rows and "signer-ep" not in rows
    rows = listed(run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha,fake-beta",
                              AGENTREVIEW_DISABLE_PLUGINS="fake-alpha"))
    assert sorted(rows) == ["fake-beta"]


def test_disabling_the_core_distribution_removes_its_builtins(site: Path, home: Path) -> None:
    rows = listed(run_plugins(site, home, AGENTREVIEW_DISABLE_PLUGINS="agentreview-core"))
    assert not [name for name in rows if name.startswith("builtin-")]
    assert "fake-alpha" in rows


def test_a_plugin_that_fails_to_import_is_one_warning_and_the_rest_still_load(site: Path, home: Path) -> None:
    make_dist(site, "fake-broken", "9.9.9", "fake_broken", "raise RuntimeError('boom\\nsecond line')\n")
    make_dist(site, "fake-exits", "1.0.0", "fake_exits", "import sys\nsys.exit(7)\n")
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha,fake-broken,fake-exits")
    rows = listed(proc)
    assert sorted(rows) == ["fake-alpha"]
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    broken = next(line for line in lines if "fake-broken" in line)
    assert "9.9.9" in broken and "RuntimeError: boom second line" in broken
    assert broken.startswith("agentreview plugins: warning: ")
    assert any("fake-exits" in line and "SystemExit" in line for line in lines)
    assert "Traceback" not in proc.stderr


def test_a_hook_that_raises_is_a_warning(site: Path, home: Path) -> None:
    source = "from agentreview import hookimpl\n\n@hookimpl\ndef agentreview_register_signers(register):\n" \
             "    raise ValueError('no key')\n"
    make_dist(site, "fake-raises", "1.0.0", "fake_raises", source)
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha,fake-raises")
    rows = listed(proc)
    assert rows["fake-raises"]["provides"] == []
    assert "fake-alpha" in rows
    assert proc.stderr.count("\n") == 1
    assert "fake-raises" in proc.stderr and "ValueError: no key" in proc.stderr


def test_a_hook_with_a_wrong_signature_is_refused_with_a_warning(site: Path, home: Path) -> None:
    source = "from agentreview import hookimpl\n\n@hookimpl\ndef agentreview_register_signers(reg, extra):\n" \
             "    pass\n"
    make_dist(site, "fake-wrongsig", "1.0.0", "fake_wrongsig", source)
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha,fake-wrongsig")
    assert sorted(listed(proc)) == ["fake-alpha"]
    assert "fake-wrongsig" in proc.stderr and "PluginValidationError" in proc.stderr


def test_two_plugins_claiming_one_lane_kind_is_a_one_line_error_naming_both(site: Path, home: Path) -> None:
    make_dist(site, "fake-impostor", "6.6.6", "fake_impostor", EXECUTOR_PLUGIN.format(kind="alpha"))
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha,fake-impostor")
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1
    assert "'fake-alpha'" in proc.stderr and "'fake-impostor'" in proc.stderr and "'alpha'" in proc.stderr
    assert "AGENTREVIEW_DISABLE_PLUGINS" in proc.stderr
    assert proc.stderr.startswith("agentreview plugins: plugins ") and "internal error" not in proc.stderr
    assert "Traceback" not in proc.stderr
    # The fix the message names works.
    rows = listed(run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-alpha,fake-impostor",
                              AGENTREVIEW_DISABLE_PLUGINS="fake-impostor"))
    assert sorted(rows) == ["fake-alpha"]


# --------------------------------------------------------------------------- in-process


class _Named:
    def __init__(self, **attrs: str) -> None:
        self.__dict__.update(attrs)


def _plugin(point_hook: str, *objs: object) -> object:
    hookimpl = pluggy.HookimplMarker("agentreview")

    class Plugin:
        pass

    def impl(register: Any) -> None:
        for obj in objs:
            register(obj)

    impl.__name__ = point_hook
    setattr(Plugin, point_hook, staticmethod(hookimpl(impl)))
    return Plugin()


NO_MANAGER_AT_IMPORT = """
import gc, importlib, sys
import pluggy
import agentreview, agentreview.plugins.registry, agentreview.plugins.hookspecs, agentreview.cli.app
first = sys.modules["agentreview.plugins.registry"]
importlib.import_module("agentreview.plugins.registry")
assert sys.modules["agentreview.plugins.registry"] is first
managers = [o for o in gc.get_objects() if isinstance(o, pluggy.PluginManager)]
print(len(managers))
"""


def test_no_global_plugin_manager_at_import(home: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", NO_MANAGER_AT_IMPORT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


def test_each_plugin_manager_is_independent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_PLUGINS", "none-such")
    assert not [v for v in vars(plugins_module).values() if isinstance(v, pluggy.PluginManager)]
    pm1, _, _ = make_plugin_manager()
    pm2, _, _ = make_plugin_manager()
    assert pm1 is not pm2
    pm1.register(_plugin("agentreview_register_signers", _Named(name="x")), name="only-in-pm1")
    assert pm1.get_plugin("only-in-pm1") is not None
    assert pm2.get_plugin("only-in-pm1") is None
    assert make_plugin_manager()[0].get_plugin("only-in-pm1") is None


def test_registry_attributes_each_object_to_its_plugin() -> None:
    signer = _Named(name="s1")
    registry = load_registry(
        load_entry_points=False,
        extra_plugins=[("p1", _plugin("agentreview_register_signers", signer))],
    )
    assert registry.get("signers", "s1") is signer
    assert registry.signers["s1"].plugin == "p1"
    assert registry.objects("signers") == {"s1": signer}
    assert registry.get("signers", "missing") is None


def test_in_process_conflict_and_nameless_objects_raise() -> None:
    with pytest.raises(PluginConflictError, match=r"'p1' and 'p2'|'p2' and 'p1'"):
        load_registry(
            load_entry_points=False,
            extra_plugins=[
                ("p1", _plugin("agentreview_register_pack_loaders", _Named(form="path"))),
                ("p2", _plugin("agentreview_register_pack_loaders", _Named(form="path"))),
            ],
        )
    with pytest.raises(PluginConflictError, match="without a 'kind' name"):
        load_registry(load_entry_points=False,
                      extra_plugins=[("p1", _plugin("agentreview_register_lane_executors", _Named()))])


def test_explicit_only_and_blocked_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_PLUGINS", "none-such")
    assert load_registry().plugins == []
    names = {info.name for info in load_registry(only=["builtin-path-loader"]).plugins}
    assert names == {"builtin-path-loader"}
    monkeypatch.delenv("AGENTREVIEW_PLUGINS")
    monkeypatch.setenv("AGENTREVIEW_DISABLE_PLUGINS", "agentreview-core")
    assert "builtin-path-loader" not in {info.name for info in load_registry().plugins}
    assert "builtin-path-loader" in {info.name for info in load_registry(blocked=[]).plugins}


# --------------------------------------------------------------------------- loading is never silent


def test_an_entry_point_name_two_distributions_declare_is_a_warning_naming_both(site: Path, home: Path) -> None:
    make_dist(site, "fake-gamma", "3.0.0", "fake_gamma", EXECUTOR_PLUGIN.format(kind="gamma"), ep_name="shared")
    make_dist(site, "fake-delta", "4.0.0", "fake_delta", EXECUTOR_PLUGIN.format(kind="delta"), ep_name="shared")
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-gamma,fake-delta")
    rows = listed(proc)
    assert list(rows) == ["shared"]
    loaded = rows["shared"]["distribution"]
    skipped = ({"fake-gamma", "fake-delta"} - {loaded}).pop()
    versions = {"fake-gamma": "3.0.0", "fake-delta": "4.0.0"}
    (line,) = proc.stderr.splitlines()
    assert line == (
        f"agentreview plugins: warning: plugin 'shared' is declared by two distributions, {loaded} "
        f"{versions[loaded]} (loaded) and {skipped} {versions[skipped]} (skipped) — uninstall one, or pick one "
        "with AGENTREVIEW_DISABLE_PLUGINS=<the other's distribution name>"
    )
    # The fix the message names works, and then nothing is reported.
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-gamma,fake-delta", AGENTREVIEW_DISABLE_PLUGINS=loaded)
    assert listed(proc)["shared"]["distribution"] == skipped
    assert proc.stderr == ""


def test_a_misspelt_hook_is_a_warning_naming_the_plugin_the_hook_and_the_likely_one(site: Path, home: Path) -> None:
    source = (
        "from agentreview import hookimpl\n\n"
        "class Executor:\n    kind = 'typo'\n\n"
        "@hookimpl\ndef agentreview_register_signer(register):\n    pass\n\n"
        "@hookimpl\ndef agentreview_register_lane_executors(register):\n    register(Executor())\n"
    )
    make_dist(site, "fake-typo", "0.1.0", "fake_typo", source)
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-typo")
    rows = listed(proc)
    assert rows["fake-typo"]["provides"] == ["lane_executors:typo"]  # its other hook still works
    (line,) = proc.stderr.splitlines()
    assert line == (
        "agentreview plugins: warning: plugin 'fake-typo' (fake-typo 0.1.0) implements unknown hook "
        "'agentreview_register_signer', which is never called — did you mean 'agentreview_register_signers'?"
    )


def test_two_distributions_whose_signers_verify_one_alg_are_a_one_line_error(site: Path, home: Path) -> None:
    signer = "from agentreview import hookimpl\n\nclass S:\n    name = {name!r}\n    algorithms = ('x-alg',)\n\n" \
             "@hookimpl\ndef agentreview_register_signers(register):\n    register(S())\n"
    make_dist(site, "fake-s1", "1.0.0", "fake_s1", signer.format(name="one"))
    make_dist(site, "fake-s2", "1.0.0", "fake_s2", signer.format(name="two"))
    proc = run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-s1,fake-s2")
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert "'fake-s1'" in line and "'fake-s2'" in line and "signature alg 'x-alg'" in line
    assert "signers 'one' and 'two'" in line or "signers 'two' and 'one'" in line
    assert "AGENTREVIEW_DISABLE_PLUGINS" in line
    assert sorted(listed(run_plugins(site, home, AGENTREVIEW_PLUGINS="fake-s1,fake-s2",
                                     AGENTREVIEW_DISABLE_PLUGINS="fake-s2"))) == ["fake-s1"]


def test_signers_are_found_by_the_algs_they_declare() -> None:
    ssh, other, legacy = (_Named(name="ssh"), _Named(name="other"), _Named(name="legacy"))
    ssh.algorithms, other.algorithms = ("ssh-ed25519",), ("openssl-ed25519", "openssl-ed448")  # type: ignore[attr-defined]
    registry = load_registry(
        load_entry_points=False,
        extra_plugins=[("p1", _plugin("agentreview_register_signers", ssh, legacy)),
                       ("p2", _plugin("agentreview_register_signers", other))],
    )
    assert registry.signer_for_alg("ssh-ed25519") is ssh
    assert registry.signer_for_alg("openssl-ed448") is other
    assert registry.signature_algs["openssl-ed25519"].plugin == "p2"
    assert registry.get("signers", "legacy") is legacy  # declares no alg: it can sign, it verifies nothing
    assert sorted(registry.signature_algs) == ["openssl-ed25519", "openssl-ed448", "ssh-ed25519"]


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        ([("p1", ["a"]), ("p2", ["b", "a"])], r"^plugins '(p1|p2)' and '(p1|p2)' both verify signature alg 'a' "
                                              r"\(signers '(p1|p2)-0' and '(p1|p2)-0'\) — disable one with "),
        ([("p1", ["a"]), ("p1", ["a"])], r"^plugin 'p1' registers two signers, 'p1-0' and 'p1-1', "
                                         r"that both verify signature alg 'a'$"),
        ([("p1", "ssh-ed25519")], r"^plugin 'p1' registered signer 'p1-0' with algorithms='ssh-ed25519': it must be "
                                  r"a tuple of signature alg names"),
        ([("p1", ("ok", "not ok"))], r"with algorithms=\('ok', 'not ok'\)"),
    ],
    ids=["two plugins", "one plugin", "a string", "a bad name"],
)
def test_signer_alg_conflicts_and_malformed_algorithms_raise(plugins: list[tuple[str, Any]], message: str) -> None:
    by_plugin: dict[str, list[object]] = {}
    for plugin, algs in plugins:
        signer = _Named(name=f"{plugin}-{len(by_plugin.get(plugin, []))}")
        signer.algorithms = tuple(algs) if isinstance(algs, list) else algs  # type: ignore[attr-defined]
        by_plugin.setdefault(plugin, []).append(signer)
    extra = [(p, _plugin("agentreview_register_signers", *objs)) for p, objs in by_plugin.items()]
    with pytest.raises(PluginConflictError, match=message):
        load_registry(load_entry_points=False, extra_plugins=extra)
