"""A background run never imports Python from the reviewed checkout.

``run --detach`` and every MCP ``review_run`` start a second agentreview process. Were it
``python -m agentreview`` with the checkout as its working folder, the checkout would be first
on ``sys.path`` and the change itself would run inside agentreview (with the host's signing
key) before any lane. Three carriers sit at the root of the change, each writing a marker file
when imported: a ``typer.py`` (shadows a dependency), an ``agentreview/`` package (shadows the
host) and a ``foo-1.0.dist-info`` whose ``entry_points.txt`` declares an ``agentreview`` plugin.
The review has one blocking lane that fails: the honest verdict is ``block``, and no marker may
appear. The parent is started the way a user starts it, by the installed console script, in the
checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from reviewrepo import Repo, feature_repo, manifest, wait_for
from test_mcp import call, serve

pytestmark = pytest.mark.timeout(300)

CONSOLE_SCRIPT = Path(sys.executable).parent / "agentreview"
FAILING = manifest("  - id: gate\n    kind: command\n    run: 'exit 1'\n")


CARRIERS = ("typer", "package", "dist-info")


def carrier(name: str, marker: Path) -> dict[str, str]:
    """One carrier as repository files (path: text); importing it writes ``marker``."""
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
    if name == "typer":
        return {"typer.py": code}
    if name == "package":
        return {"agentreview/__init__.py": code, "agentreview/__main__.py": code + "raise SystemExit(0)\n"}
    return {
        "foo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: foo\nVersion: 1.0\n",
        "foo-1.0.dist-info/entry_points.txt": "[agentreview]\nfoo = foo_plugin\n",
        "foo_plugin.py": code,
    }


def booby_trapped(tmp_path: Path, name: str) -> tuple[Repo, Path]:
    """A feature branch whose review fails one blocking lane, with one carrier at its root."""
    repo = feature_repo(tmp_path)
    marker = tmp_path / f"marker-{name}"
    repo.commit("add review", **{"REVIEW.md": FAILING})
    for rel, text in carrier(name, marker).items():
        repo.write(rel, text)
    repo.commit("feature work with a carrier")
    assert not repo.git("status", "--porcelain")
    return repo, marker


def assert_honest(view: dict[str, Any], marker: Path) -> None:
    assert not marker.exists(), "the background run imported code from the checkout"
    assert view["status"] == "done" and view["verdict"] == "block", view
    assert {lane["id"]: lane["status"] for lane in view["lanes"]} == {"gate": "fail"}


@pytest.mark.parametrize("name", CARRIERS)
def test_run_detach_imports_nothing_from_the_checkout(tmp_path: Path, name: str) -> None:
    repo, marker = booby_trapped(tmp_path, name)
    env = {k: v for k, v in repo.env.items() if k != "AGENTPROTO_SESSION_ID"}
    started = subprocess.run(
        [str(CONSOLE_SCRIPT), "run", "--detach", "--json"], cwd=repo.path, env=env, capture_output=True,
        text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["runId"]
    view: dict[str, Any] = {}

    def settled() -> bool:
        proc = subprocess.run([str(CONSOLE_SCRIPT), "status", run_id, "--json"], cwd=repo.path, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        view.update(json.loads(proc.stdout))
        return view["status"] != "running"

    assert wait_for(settled, 120), view
    assert_honest(view, marker)


@pytest.mark.parametrize("name", CARRIERS)
def test_mcp_review_run_imports_nothing_from_the_checkout(tmp_path: Path, name: str) -> None:
    repo, marker = booby_trapped(tmp_path, name)

    async def body(session: ClientSession) -> None:
        view = await call(session, "review_run", {"cwd": str(repo.path)})
        assert_honest(view, marker)

    serve(repo, body)
