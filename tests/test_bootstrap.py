"""scripts/bootstrap installs the core and the plugins editable as plain .pth paths to the checkout:
no setuptools import hook (which costs every Python start, and which a deprecated mode was once
used to avoid), and a module added to the checkout is importable without reinstalling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = {
    "agentreview-core": ROOT,
    "agentreview-command": ROOT / "plugins" / "agentreview-command",
    "agentreview-agent": ROOT / "plugins" / "agentreview-agent",
    "agentreview-packs-git": ROOT / "plugins" / "agentreview-packs-git",
}


def _installed(name: str) -> metadata.Distribution | None:
    """The distribution pip installed (its dist-info has direct_url.json), not the build's egg-info
    that the checkout on sys.path also shows."""
    return next((d for d in metadata.distributions(name=name) if d.read_text("direct_url.json")), None)


def _editable_here() -> bool:
    dist = _installed("agentreview-core")
    direct = json.loads(dist.read_text("direct_url.json") or "{}") if dist else {}
    return bool(direct.get("dir_info", {}).get("editable")) and direct.get("url") == ROOT.as_uri()


pytestmark = pytest.mark.skipif(not _editable_here(), reason="this environment is not scripts/bootstrap's editable one")


def test_each_distribution_is_a_plain_path_to_the_checkout() -> None:
    for name, project in DISTRIBUTIONS.items():
        dist = _installed(name)
        assert dist is not None, name
        files = dist.files or []
        pth = [f for f in files if f.name.endswith(".pth")]
        assert len(pth) == 1, f"{name}: {files}"
        assert Path(str(pth[0].locate())).read_text().strip() == str(project)
        assert not [f for f in files if "finder" in f.name], f"{name} installs an import hook"


def test_a_module_added_to_the_checkout_is_imported_without_reinstalling(tmp_path: Path) -> None:
    name = f"_bootstrap_probe_{os.getpid()}"  # two suites running at once in one checkout do not collide
    probe = ROOT / "plugins" / "agentreview-command" / "agentreview_command" / f"{name}.py"
    probe.write_text("SEEN = 'from the checkout'\n")
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", f"import agentreview_command.{name} as p; print(p.SEEN)"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        probe.unlink()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "from the checkout"
