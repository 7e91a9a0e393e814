"""What the hot commands import as fresh processes: the start-up budget, held without timing anything.

A cold command's time is mostly imports (docs/performance.md). These tests run the real CLI entry in
a fresh interpreter, as the console script does, and list what it loaded: once the parse memo and
the plugin discovery cache know this manifest and this environment, a cache hit, ``verify``,
``check`` and a full run must not import pydantic, PyYAML or importlib.metadata, and a cache hit
must not even load the plugins or the lane scheduler; a signed run on a host without a config.toml
loads neither tomllib nor socket. A change that puts one of them back on a hot
path fails here, long before anyone measures it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reviewrepo import Repo, manifest

# The console script's shape: sys.path[0] is the script's folder, and the command runs through
# the same entry. Every command of a test uses it, so the discovery cache's fingerprint is stable.
PROBE = """
import json, os, sys
sys.path[0] = os.path.dirname(sys.executable)
from agentreview.cli.entry import main
code = main(sys.argv[1:])
with open(os.environ["IMPORTS_OUT"], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

HEAVY = ("pydantic", "pydantic_core", "yaml", "importlib.metadata")
PLUGINS = ("pluggy", "agentreview.plugins.registry", "agentreview_command", "agentreview.engine.execute")


def probe(repo: Repo, tmp: Path, *argv: str) -> tuple[int, set[str], str]:
    out = tmp / "imports.json"
    env = {**repo.env, "IMPORTS_OUT": str(out)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), proc.stderr
    data = json.loads(out.read_text())
    out.unlink()
    return data["code"], set(data["modules"]), proc.stdout


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@dataclass(frozen=True)
class Warm:
    repo: Repo
    tmp: Path  # where each probe writes its list (created by the test)
    export: Path
    signers: Path


@pytest.fixture
def warm_repo(tmp_path: Path) -> Warm:
    """A feature branch with 3 command lanes, reviewed once (signed, exported): every cache is warm."""
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    checks = "".join(f"  - id: c{i}\n    kind: command\n    run: 'true'\n" for i in range(3))
    repo.commit("init", **{"REVIEW.md": manifest(checks, extra="verdict:\n  exportDir: .reviews\n")})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("change", **{"app.txt": "x\n"})
    code, _, out = probe(repo, tmp_path, "run", "--json", "--export")
    assert code == 0, out
    export = json.loads(out)["exportPath"]
    code, _, out = probe(repo, tmp_path, "key", "--json")
    signers = tmp_path / "allowed_signers"
    signers.write_text(json.loads(out)["allowedSignersLine"] + "\n")
    return Warm(repo, tmp_path / "probe", Path(export), signers)


def test_a_cache_hit_loads_no_model_library_no_yaml_and_no_plugin(warm_repo: Warm) -> None:
    repo, tmp = warm_repo.repo, warm_repo.tmp
    tmp.mkdir()
    code, modules, out = probe(repo, tmp, "run", "--json")
    assert code == 0 and json.loads(out)["cached"] is True
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, PLUGINS) == []
    if any(importlib.util.find_spec(name) for name in ("_sha256", "_sha2")):  # the interpreter's own SHA-256
        assert loaded(modules, ("hashlib", "_hashlib")) == []  # no OpenSSL for a few KiB of digests


def test_verify_of_a_signed_export_loads_no_model_library_and_no_yaml(warm_repo: Warm) -> None:
    repo, tmp, export, signers = warm_repo.repo, warm_repo.tmp, warm_repo.export, warm_repo.signers
    tmp.mkdir()
    code, modules, out = probe(repo, tmp, "verify", str(export), "--require-signed", "--allowed-signers", str(signers))
    assert code == 0, out
    assert loaded(modules, HEAVY) == []


def test_check_loads_no_model_library_and_no_yaml(warm_repo: Warm) -> None:
    repo, tmp = warm_repo.repo, warm_repo.tmp
    tmp.mkdir()
    code, modules, out = probe(repo, tmp, "check")
    assert code == 0, out
    assert loaded(modules, HEAVY) == []


def test_a_full_signed_run_loads_no_model_library_and_no_yaml(warm_repo: Warm) -> None:
    repo, tmp = warm_repo.repo, warm_repo.tmp
    tmp.mkdir()
    code, modules, out = probe(repo, tmp, "run", "--json", "--no-cache")
    result = json.loads(out)
    assert code == 0 and result["cached"] is False and result["attestation"]["attestor"].get("signature")
    assert loaded(modules, HEAVY) == []
    # No config.toml in the home: nothing parses one, and the host name needs no socket.
    assert not (repo.home / "config.toml").exists()
    assert loaded(modules, ("tomllib", "socket")) == []


def test_a_changed_manifest_is_parsed_again_strictly(warm_repo: Warm) -> None:
    """The fast paths above are answers the strict parse already gave: new bytes are parsed in full,
    and an invalid manifest is still refused with its location, never served from a memo."""
    repo, tmp = warm_repo.repo, warm_repo.tmp
    tmp.mkdir()
    text = (repo.path / "REVIEW.md").read_text()
    repo.commit("break", **{"REVIEW.md": text.replace("run: 'true'", "run: 'true'\n    blocking: 'yes'", 1)})
    code, _, out = probe(repo, tmp, "check")
    assert code != 0
    code, _, out = probe(repo, tmp, "run", "--json")
    assert code != 0 and "blocking" in json.loads(out)["error"]


def test_version_imports_nothing_of_the_commands(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    code, modules, out = probe(repo, tmp_path, "--version")
    assert code == 0 and out.startswith("agentreview ")
    assert loaded(modules, (*HEAVY, "typer", "click", "agentreview.cli.app")) == []
    assert os.path.basename(sys.executable)  # the probe ran with this interpreter
