"""Secrets stay with the host: no lane inherits the variables the host keeps for itself.

The attack: the host (``agentreview run``, or ``agentreview mcp`` started with a token for
``review_pr``) holds ``GH_TOKEN``; the change's own code runs in a command lane, prints its
environment and fails, so its output would carry the token into the signed attestation, the
export and the ledger. Each test plants tokens, runs a real review whose command lane dumps its
environment to a file and to its output, and greps the lane's environment, the export and every
ledger file for them. A variable the host does not withhold is in the same dump, so the grep
cannot pass for an empty one.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest

from agentreview.model.contracts.reviewers import PresetSpec, ReviewerRequest
from agentreview.reviewers.base import ReviewerBase

pytestmark = pytest.mark.timeout(180)

PLANTED = {
    "GH_TOKEN": "ghp_plantedGhToken0000000000000000000000",
    "GITHUB_TOKEN": "ghs_plantedGithubToken11111111111111111",
    "GH_ENTERPRISE_TOKEN": "ghe_plantedEnterprise2222222222222222222",
    "MY_DEPLOY_KEY": "deploy-planted-3333333333333333333333",
}
VISIBLE = ("LANE_CAN_SEE_ME", "visible-4444")


def leaking_repo(tmp_path: Path) -> tuple[Repo, Path]:
    """A repository whose command lane writes its environment to a file, prints it and fails."""
    repo = feature_repo(tmp_path)
    dump = tmp_path / "lane-env.txt"
    text = manifest(
        f"  - id: leak\n    kind: command\n    run: 'env > {dump}; env; exit 1'\n",
        extra="verdict: { exportDir: .reviews }\n",
    )
    repo.commit("add review", **{"REVIEW.md": text})
    repo.commit("feature", **{"src__app.txt": "v1\n"})
    return repo, dump


def planted_env(repo: Repo) -> dict[str, str]:
    return {**repo.env, **PLANTED, VISIBLE[0]: VISIBLE[1]}


def write_config(repo: Repo, text: str) -> None:
    repo.home.mkdir(parents=True, exist_ok=True)
    (repo.home / "config.toml").write_text(text)


def leaked(repo: Repo, names: tuple[str, ...], *more: Path) -> list[str]:
    """Which planted values appear in the ledger, the exports or ``more``."""
    files = [*repo.ledger_files(), *(repo.path / ".reviews").glob("*.json"), *more]
    assert files
    text = "\n".join(path.read_text(errors="replace") for path in files if path.is_file())
    return [name for name in names if PLANTED[name] in text]


def test_a_run_started_with_gh_token_never_hands_it_to_a_command_lane(tmp_path: Path) -> None:
    repo, dump = leaking_repo(tmp_path)
    write_config(repo, '[lanes]\nwithhold_env = ["MY_DEPLOY_KEY"]\n')
    result = repo.run_json("--export", env=planted_env(repo), expect=1)
    assert result["verdict"] == "block"
    lane_env = dump.read_text()
    assert f"{VISIBLE[0]}={VISIBLE[1]}" in lane_env  # the lane did run and dump its environment
    assert "AGENTREVIEW_HOME=" in lane_env or "PATH=" in lane_env
    assert [name for name in PLANTED if name in lane_env] == []
    exports = list((repo.path / ".reviews").glob("*.json"))
    assert exports and VISIBLE[1] in exports[0].read_text()  # the lane's output is in the export
    assert leaked(repo, tuple(PLANTED), dump) == []


def test_pass_env_in_config_is_the_host_owners_explicit_grant(tmp_path: Path) -> None:
    repo, dump = leaking_repo(tmp_path)
    write_config(repo, '[lanes]\npass_env = ["GITHUB_TOKEN"]\n')
    repo.run_json(env=planted_env(repo), expect=1)
    lane_env = dump.read_text()
    assert f"GITHUB_TOKEN={PLANTED['GITHUB_TOKEN']}" in lane_env
    assert PLANTED["GH_TOKEN"] not in lane_env


@pytest.mark.parametrize(
    "config",
    ['[lanes]\nwithhold_env = "GH_TOKEN"\n', '[lanes]\nwithhold_env = ["A-B"]\n', '[lanes]\nwithold_env = ["X"]\n'],
    ids=["not-a-list", "not-a-name", "unknown-key"],
)
def test_a_bad_lanes_table_stops_the_run_with_one_line(tmp_path: Path, config: str) -> None:
    repo, dump = leaking_repo(tmp_path)
    write_config(repo, config)
    proc = subprocess.run(
        [*AGENTREVIEW, "run"], cwd=repo.path, env=planted_env(repo), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 3, proc.stderr
    message = [line for line in proc.stderr.splitlines() if "config.toml" in line]
    assert message and "[lanes]" in message[0] and "fix" in message[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not dump.exists()  # nothing ran


class _GrantsTheToken(ReviewerBase):
    """A provider whose model grants would take GH_TOKEN (as a careless ``GH_*`` family would)."""

    name = "grants"
    model_env = ("GH_*", "GITHUB_TOKEN")
    private_home = False

    def status(self):  # pragma: no cover - not called
        raise NotImplementedError

    def review(self, request):  # pragma: no cover - not called
        raise NotImplementedError


def _request(tmp_path: Path, env: list[str]) -> ReviewerRequest:
    import threading

    spec = PresetSpec(name="p", provider="grants", model=None, options={"env": env}, builtin=False)
    return ReviewerRequest(
        preset=spec, prompt="", check_id="c", repo_root=tmp_path, base_sha="0" * 40, head_sha="1" * 40,
        rubric_path=tmp_path / "r.md", verdict_path=tmp_path / "v.json", work_dir=tmp_path, deadline=0.0,
        cancel=threading.Event(), withheld_env=frozenset(PLANTED),
    )  # fmt: skip


def test_a_reviewer_gets_no_withheld_variable_unless_its_preset_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GH_PAGER", "cat")
    env = _GrantsTheToken().environment(_request(tmp_path, []))
    assert isinstance(env, dict)
    assert env.get("GH_PAGER") == "cat"  # the family still grants what the host does not keep
    assert not set(PLANTED) & set(env)
    granted = _GrantsTheToken().environment(_request(tmp_path, ["GH_TOKEN"]))
    assert isinstance(granted, dict) and granted["GH_TOKEN"] == PLANTED["GH_TOKEN"]
    assert "GITHUB_TOKEN" not in granted


def test_the_export_of_a_review_started_over_mcp_holds_no_server_token(tmp_path: Path) -> None:
    """``agentreview mcp`` holds GH_TOKEN for review_pr; review_run's lanes never see it."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    repo, dump = leaking_repo(tmp_path)
    write_config(repo, '[lanes]\nwithhold_env = ["MY_DEPLOY_KEY"]\n')

    async def main() -> dict:
        params = StdioServerParameters(
            command=AGENTREVIEW[0], args=[*AGENTREVIEW[1:], "mcp"], env=planted_env(repo), cwd=str(tmp_path)
        )
        with open("/dev/null", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                ran = await session.call_tool("review_run", {"cwd": str(repo.path)})
                view = json.loads(ran.content[0].text)  # type: ignore[union-attr]
                exported = await session.call_tool("review_export", {"runId": view["runId"]})
                assert not exported.is_error, exported.content
                return view

    view = anyio.run(main)
    assert view["verdict"] == "block", view
    lane_env = dump.read_text()
    assert f"{VISIBLE[0]}={VISIBLE[1]}" in lane_env
    assert [name for name in PLANTED if name in lane_env] == []
    assert leaked(repo, tuple(PLANTED), dump) == []
    assert not [name for name in PLANTED if PLANTED[name] in json.dumps(view)]
