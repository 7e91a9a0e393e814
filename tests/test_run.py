"""``agentreview run`` end to end on real git repositories, as a real process.

Every outcome and exit code, the cache rule, dirty trees, prepare steps that
commit, cancellation (SIGTERM, SIGKILL of the host), joining identical runs and
superseding older ones.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from file_watch import OpenWatch
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest, processes_matching, wait_for

PASSING = manifest(
    "  - id: ok\n    kind: command\n    run: 'true'\n"
    "  - id: shows\n    kind: command\n    run: 'echo base={base} head={head} changed={changed}; exit 1'\n"
    "    blocking: false\n"
)


def no_agent(repo: Repo) -> dict[str, str]:
    """The environment of a full (not headless) run on a host without the agent plugin: agent
    lanes are skipped without calling a model, and the run records into the real ledger."""
    return {**repo.env, "AGENTREVIEW_DISABLE_PLUGINS": "agentreview-agent"}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return feature_repo(tmp_path)


def start_feature(repo: Repo, text: str = PASSING) -> str:
    repo.commit("add review", **{"REVIEW.md": text})
    return repo.commit("feature work", **{"src__app.txt": "v1\n"})


def test_pass_is_signed_recorded_and_binds_placeholders(repo: Repo) -> None:
    head = start_feature(repo)
    base = repo.git("merge-base", "main", "HEAD")
    data = repo.run_json(expect=0)
    att = data["attestation"]
    assert data["status"] == "done" and data["verdict"] == "pass" and data["cached"] is False
    assert att["target"] == {"repoRemote": f"local:{repo.path.resolve()}", "baseSha": base, "headSha": head}
    lanes = {lane["id"]: lane for lane in att["lanes"]}
    assert lanes["ok"]["status"] == "pass" and lanes["ok"]["exitCode"] == 0
    advisory = lanes["shows"]
    assert advisory["status"] == "fail" and advisory["blocking"] is False
    assert f"base={base} head={head} changed=[{base}]" in advisory["findings"][0]["detail"]
    assert att["attestor"]["signature"]["alg"] == "ssh-ed25519"
    assert att["requester"]["gitAuthor"] == {"name": "Dev Example", "email": "dev@example.test"}
    assert att["attestor"]["daemon"].startswith("agentreview/")
    assert data["signingError"] is None
    ledger_path = Path(data["ledgerPath"])
    assert ledger_path.is_file() and json.loads(ledger_path.read_text())["attestation"] == att
    assert not list((repo.home / "reviews").rglob("runs/*")), "run directory must be removed"


def test_block_exit_1_with_finding(repo: Repo) -> None:
    start_feature(repo, manifest("  - id: lint\n    kind: command\n    run: 'echo bad thing; exit 3'\n"))
    data = repo.run_json(expect=1)
    lane = data["attestation"]["lanes"][0]
    assert data["verdict"] == "block" and lane["exitCode"] == 3
    assert lane["findings"][0]["title"] == "'lint' exited with code 3"
    assert "bad thing" in lane["findings"][0]["detail"]


def test_headless_agent_lane_is_incomplete(repo: Repo) -> None:
    text = manifest(
        "  - id: ok\n    kind: command\n    run: 'true'\n"
        "  - id: review\n    kind: agent\n    preset: claude\n    rubric: ./rubric.md\n"
    )
    repo.commit("rubric", **{"rubric.md": "look for bugs\n"})
    start_feature(repo, text)
    data = repo.run_json("--headless", expect=2)
    lane = data["attestation"]["lanes"][1]
    assert data["verdict"] == "incomplete" and lane["status"] == "skipped"
    assert "--headless" in lane["error"]
    assert data["attestation"]["rubrics"][0]["check"] == "review"


def test_timeout_lane_is_incomplete_and_killed(repo: Repo) -> None:
    start_feature(repo, manifest("  - id: slow\n    kind: command\n    run: 'sleep 300'\n    timeoutMs: 300\n"))
    started = time.monotonic()
    data = repo.run_json(expect=2, timeout=240)
    assert time.monotonic() - started < 240, "the lane ran its sleep out instead of being killed at its timeout"
    lane = data["attestation"]["lanes"][0]
    assert lane["status"] == "timeout" and "exceeded 300ms" in lane["error"]


@pytest.mark.parametrize(
    ("args", "setup", "fragment"),
    [
        ((), "no-manifest", "REVIEW.md"),
        ((), "bad-manifest", "REVIEW.md"),
        (("--base", "no-such-ref"), "ok", "no-such-ref"),
    ],
)
def test_could_not_run_is_exit_3(repo: Repo, args: tuple[str, ...], setup: str, fragment: str) -> None:
    if setup == "ok":
        start_feature(repo)
    elif setup == "bad-manifest":
        start_feature(repo, "---\nkind: review\nid: Bad Id\n---\n")
    data = repo.run_json(*args, expect=3)
    assert data["status"] == "failed" and fragment in data["error"]
    assert repo.ledger_files() == []


def test_an_unknown_or_ambiguous_binding_could_not_run_exit_3(repo: Repo) -> None:
    """One exit code for a binding the manifest does not declare (docs/cli.md, Exit codes):
    3, could not run, as the reference exits for an error thrown by resolveBinding."""
    start_feature(repo)
    data = repo.run_json("--binding", "nope", expect=3)
    assert data["status"] == "failed" and "has no binding 'nope'" in data["error"]
    two = manifest("  - id: ok\n    kind: command\n    run: 'true'\n", "  a: {checks: [ok]}\n  b: {checks: [ok]}\n")
    repo.commit("two bindings", **{"REVIEW.md": two})
    data = repo.run_json(expect=3)
    assert "declares several bindings (a, b) — name one with --binding" in data["error"]
    proc = subprocess.run(
        [*AGENTREVIEW, "run", "--binding", "nope"], cwd=repo.path, env=repo.env, capture_output=True, text=True,
        timeout=60,
    )
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.strip() == "agentreview run: review 'demo' has no binding 'nope' — available: a, b"
    check = subprocess.run(
        [*AGENTREVIEW, "check", "--binding", "nope"], cwd=repo.path, env=repo.env, capture_output=True, text=True,
        timeout=60,
    )
    assert check.returncode == 3 and "has no binding 'nope'" in check.stderr
    assert repo.ledger_files() == []


@pytest.mark.parametrize(
    "args",
    [
        ("--annotate", "gitlab"),
        ("--pr", "https://example.com/x/y/pull/1"),
        ("--nope",),
        ("--annotate", "github", "--json"),
        ("--detach", "--annotate", "github"),
        ("--run-id", "../../escape"),
    ],
)
def test_usage_errors_are_64(repo: Repo, args: tuple[str, ...]) -> None:
    start_feature(repo)
    proc = repo.run(*args) if "--json" not in args else repo.run(*args[:-1])
    assert proc.returncode == 64
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_prepare_failure_records_nothing(repo: Repo) -> None:
    text = manifest(
        "  - id: gen\n    kind: command\n    run: 'echo broken; exit 4'\n    effects: true\n"
        "  - id: ok\n    kind: command\n    run: 'true'\n",
        "  local:\n    prepare: [gen]\n    checks: [ok]\n",
    )
    start_feature(repo, text)
    data = repo.run_json(expect=3)
    assert data["status"] == "failed" and "prepare step 'gen' exited with code 4" in data["error"]
    assert repo.ledger_files() == []


def test_prepare_that_commits_is_attested_at_the_new_head(repo: Repo) -> None:
    text = manifest(
        "  - id: stamp\n    kind: command\n"
        "    run: 'echo {base} > stamp.txt && git add stamp.txt && git commit -q -m stamp'\n    effects: true\n"
        "  - id: ok\n    kind: command\n    run: 'test -f stamp.txt'\n",
        "  local:\n    prepare: [stamp]\n    checks: [ok]\n",
    )
    before = start_feature(repo, text)
    data = repo.run_json(expect=0)
    after = repo.git("rev-parse", "HEAD")
    assert after != before
    assert data["attestation"]["target"]["headSha"] == after
    assert "dirty" not in data["attestation"]


def test_cache_serves_unchanged_range_and_misses_after_changes(repo: Repo) -> None:
    text = manifest(
        "  - id: ok\n    kind: command\n    run: 'true'\n"
        "  - id: review\n    kind: agent\n    preset: claude\n    rubric: ./rubric.md\n    blocking: false\n",
        "  local:\n    checks: [ok, review]\n  other:\n    checks: [ok]\n",
    )
    repo.commit("rubric", **{"rubric.md": "v1\n"})
    start_feature(repo, text)
    env = no_agent(repo)
    first = repo.run_json("--binding", "local", env=env, expect=0)
    assert first["cached"] is False
    again = repo.run_json("--binding", "local", env=env, expect=0)
    assert again["cached"] is True and again["runId"] == first["runId"]
    assert again["attestation"] == first["attestation"]
    assert repo.run_json("--binding", "other", env=env, expect=0)["cached"] is False
    assert repo.run_json("--binding", "local", "--no-cache", env=env, expect=0)["cached"] is False
    # rubric change: same manifest, different rubric bytes (committed so the tree stays clean)
    repo.commit("rubric v2", **{"rubric.md": "v2\n"})
    assert repo.run_json("--binding", "local", env=env, expect=0)["cached"] is False
    assert repo.run_json("--binding", "local", env=env, expect=0)["cached"] is True
    # manifest change
    repo.commit("manifest", **{"REVIEW.md": text + "\nmore docs\n"})
    assert repo.run_json("--binding", "local", env=env, expect=0)["cached"] is False
    # range change
    repo.commit("more", **{"src__app.txt": "v2\n"})
    assert repo.run_json("--binding", "local", env=env, expect=0)["cached"] is False


def test_incomplete_is_never_served_from_cache(repo: Repo) -> None:
    start_feature(repo, manifest("  - id: slow\n    kind: command\n    run: 'sleep 5'\n    timeoutMs: 200\n"))
    first = repo.run_json(expect=2)
    second = repo.run_json(expect=2)
    assert second["cached"] is False and second["runId"] != first["runId"]


def test_dirty_tree_is_recorded_dirty_and_never_cached(repo: Repo) -> None:
    start_feature(repo)
    repo.write("src/app.txt", "uncommitted\n")
    first = repo.run_json(expect=0)
    assert first["attestation"]["dirty"] is True
    second = repo.run_json(expect=0)
    assert second["cached"] is False and second["attestation"]["dirty"] is True
    # untracked files do not make a tree dirty
    repo.git("checkout", "--", "src/app.txt")
    repo.write("untracked.txt", "x\n")
    clean = repo.run_json(expect=0)
    assert "dirty" not in clean["attestation"]


def test_export_and_export_to(repo: Repo) -> None:
    head = start_feature(repo, PASSING.replace("---\n\n#", "verdict:\n  exportDir: .reviews\n---\n\n#"))
    data = repo.run_json("--export", expect=0)
    path = Path(data["exportPath"])
    assert path == repo.path / ".reviews" / f"demo-default-{head[:12]}.json"
    text = path.read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "schema"')
    assert json.loads(text) == data["attestation"]
    out = repo.run_json("--export-to", "elsewhere/att.json", expect=0)
    assert Path(out["exportPath"]) == repo.path / "elsewhere" / "att.json" and out["cached"] is True


def test_pr_and_session_provenance(repo: Repo) -> None:
    start_feature(repo)
    env = {**repo.env, "AGENTREVIEW_SESSION_ID": "sess-42"}
    data = repo.run_json("--pr", "https://github.com/acme/app/pull/7", "--no-cache", env=env, expect=0)
    att = data["attestation"]
    assert att["pr"] == {
        "provider": "github",
        "repo": "acme/app",
        "number": 7,
        "url": "https://github.com/acme/app/pull/7",
    }
    assert att["requester"]["sessionId"] == "sess-42"


def test_annotate_github(repo: Repo) -> None:
    start_feature(repo, manifest("  - id: lint\n    kind: command\n    run: 'echo 100%, bad; exit 2'\n"))
    proc = subprocess.run(
        [*AGENTREVIEW, "run", "--annotate", "github"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env=repo.env,
        timeout=60,
    )
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert lines[0].startswith("::error title=review lint%3A 'lint' exited with code 2::")
    assert "100%25%2C bad" not in lines[0] and "100%25, bad" in lines[0]
    assert lines[-1].startswith("::error title=review blocked::")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_cancel_kills_lanes_records_nothing_exit_2(repo: Repo, signum: int, tmp_path: Path) -> None:
    marker = f"agentreview-cancel-{os.getpid()}-{signum}"
    text = manifest(f"  - id: slow\n    kind: command\n    run: 'sleep 301; true # {marker}'\n")
    start_feature(repo, text)
    proc = subprocess.Popen(
        [*AGENTREVIEW, "run", "--json"],
        cwd=repo.path,
        env=repo.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_for(lambda: bool(processes_matching(marker)))
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert json.loads(out)["status"] == "cancelled"
    assert wait_for(lambda: not processes_matching(marker))
    assert repo.ledger_files() == []
    assert not list((repo.home / "reviews").rglob("runs/review-*"))


def test_sigkill_of_the_host_leaves_no_lane_process_and_no_partial_entry(repo: Repo) -> None:
    marker = f"agentreview-orphan-{os.getpid()}"
    child = f"30{os.getpid() % 100000}.25"  # a unique sleep argument to find the grandchildren by
    text = manifest(f"  - id: slow\n    kind: command\n    run: 'sleep {child} & sleep {child}; wait # {marker}'\n")
    start_feature(repo, text)
    proc = subprocess.Popen(
        [*AGENTREVIEW, "run", "--json"],
        cwd=repo.path,
        env=repo.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_for(lambda: bool(processes_matching(marker)) and len(processes_matching(child)) >= 3)
    proc.kill()
    proc.wait(timeout=60)
    assert wait_for(lambda: not processes_matching(marker)), "the lane shell outlived the host"
    assert wait_for(lambda: not processes_matching(child)), "lane grandchildren outlived the host"
    assert repo.ledger_files() == []
    assert not [p for p in (repo.home / "reviews").rglob("*.tmp*")]


def test_two_identical_runs_execute_the_lanes_once(repo: Repo, tmp_path: Path) -> None:
    """The first run's lane holds until the second run has tried the join lock the first one holds,
    so the second joins however slowly a loaded machine starts it."""
    counter, release = tmp_path / "count.txt", tmp_path / "release"
    start_feature(repo, manifest(f"  - id: once\n    kind: command\n    run: '{HELD_LANE}'\n"))
    env = {**repo.env, "COUNT_FILE": str(counter), "RELEASE": str(release)}
    older = _start_run(repo, env)
    assert wait_for(lambda: counter.exists() and "ran" in counter.read_text())
    newer = _start_second_run_and_wait_for_its_join(repo, env)
    release.touch()
    results = [json.loads(p.communicate(timeout=120)[0]) for p in (older, newer)]
    assert [r["exitCode"] for r in results] == [0, 0]
    assert counter.read_text().count("ran") == 1
    assert results[0]["runId"] == results[1]["runId"]
    assert sorted(bool(r.get("joined")) for r in results) == [False, True]


def test_supersede_cancels_an_older_run_of_the_same_line(repo: Repo) -> None:
    text = manifest("  - id: slow\n    kind: command\n    run: 'sleep ${SLEEP_S:-0}'\n")
    start_feature(repo, text)
    old = subprocess.Popen(
        [*AGENTREVIEW, "run", "--json"],
        cwd=repo.path,
        env={**repo.env, "SLEEP_S": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    inflight = repo.home / "reviews"
    assert wait_for(lambda: bool(list(inflight.rglob("inflight/*.json"))))
    repo.commit("newer", **{"src__app.txt": "v3\n"})
    new = repo.run_json("--supersede", expect=0)
    out, _ = old.communicate(timeout=120)
    cancelled = json.loads(out)
    assert old.returncode == 2 and cancelled["status"] == "cancelled"
    assert cancelled["supersededBy"] == new["runId"]
    entries = repo.ledger_files()
    assert len(entries) == 1


def test_cache_misses_after_a_pack_changes(repo: Repo, tmp_path: Path) -> None:
    pack = tmp_path / "shared-pack"
    (pack / "rubrics").mkdir(parents=True)
    pack_md = (
        "---\nkind: review-pack\nid: shared\nversion: 1.0.0\nchecks:\n"
        "  - id: review\n    kind: agent\n    rubric: ./rubrics/r.md\n    blocking: false\n---\n"
    )
    (pack / "REVIEW.md").write_text(pack_md)
    (pack / "rubrics" / "r.md").write_text("v1\n")
    text = manifest(
        "  - id: ok\n    kind: command\n    run: 'true'\n",
        "  local:\n    checks: [ok, ext/review]\n",
        extra=f"uses:\n  - pack: {pack}\n    as: ext\n    preset: claude\n",
    )
    start_feature(repo, text)
    env = no_agent(repo)
    first = repo.run_json(env=env, expect=0)
    assert first["attestation"]["packs"][0]["id"] == "shared"
    assert repo.run_json(env=env, expect=0)["cached"] is True
    (pack / "REVIEW.md").write_text(pack_md.replace("version: 1.0.0", "version: 1.0.1"))
    changed = repo.run_json(env=env, expect=0)
    assert changed["cached"] is False
    assert changed["attestation"]["packs"][0]["sha256"] != first["attestation"]["packs"][0]["sha256"]
    assert repo.run_json(env=env, expect=0)["cached"] is True
    (pack / "rubrics" / "r.md").write_text("v2\n")
    assert repo.run_json(env=env, expect=0)["cached"] is False


@pytest.mark.parametrize("export_dir", ["../outside", "/tmp/agentreview-escape", "linked"])
def test_export_dir_that_leaves_the_repository_is_refused_before_lanes_run(
    repo: Repo, tmp_path: Path, export_dir: str
) -> None:
    marker = tmp_path / "lane-ran"
    text = manifest(
        f"  - id: ok\n    kind: command\n    run: 'touch {marker}'\n", extra=f"verdict:\n  exportDir: {export_dir}\n"
    )
    if export_dir == "linked":
        (tmp_path / "elsewhere").mkdir()
        (repo.path / "linked").symlink_to(tmp_path / "elsewhere")
    start_feature(repo, text)
    data = repo.run_json("--export", expect=3)
    assert "outside the repository" in data["error"]
    assert not marker.exists(), "lanes must not run when the export cannot be written"
    assert repo.ledger_files() == []


@pytest.mark.parametrize("rubric", ["/dev/zero", "fifo"])
def test_a_rubric_that_is_not_a_regular_file_skips_the_lane(repo: Repo, rubric: str) -> None:
    if rubric == "fifo":
        os.mkfifo(repo.path / "fifo")
    text = manifest(
        "  - id: ok\n    kind: command\n    run: 'true'\n"
        f"  - id: review\n    kind: agent\n    preset: claude\n    rubric: {rubric}\n"
    )
    start_feature(repo, text)
    data = repo.run_json(expect=2, timeout=60)
    lane = data["attestation"]["lanes"][1]
    assert lane["status"] == "skipped" and "rubric not found" in lane["error"]
    assert data["attestation"]["rubrics"] == []


def test_a_pull_request_named_on_a_cache_hit_is_annotated_not_attested(repo: Repo) -> None:
    start_feature(repo)
    first = repo.run_json(expect=0)
    hit = repo.run_json("--pr", "https://github.com/acme/app/pull/9", expect=0)
    assert hit["cached"] is True and "pr" not in hit["attestation"]
    sidecar = Path(first["ledgerPath"]).with_name(Path(first["ledgerPath"]).stem + ".annotations.json")
    assert json.loads(sidecar.read_text())["pr"]["number"] == 9


def test_the_plan_is_made_before_prepare_and_the_pr_follows_the_frozen_head(repo: Repo) -> None:
    """manifestSha and rubric digests are decided before prepare; a prepare step that rewrites
    REVIEW.md and the rubric, then commits, changes only the head the attestation names."""
    from agentreview.model.digests import manifest_sha, sha256_hex

    text = manifest(
        "  - id: rewrite\n    kind: command\n    effects: true\n"
        "    run: 'echo later >> REVIEW.md && echo later >> rubric.md && git commit -qam rewrite'\n"
        "  - id: ok\n    kind: command\n    run: 'true'\n"
        "  - id: review\n    kind: agent\n    preset: claude\n    rubric: ./rubric.md\n",
        "  local:\n    prepare: [rewrite]\n    checks: [ok, review]\n",
    )
    repo.commit("rubric", **{"rubric.md": "look for bugs\n"})
    before = start_feature(repo, text)
    data = repo.run_json("--pr", "https://github.com/acme/app/pull/5", env=no_agent(repo), expect=2)
    att = data["attestation"]
    after = repo.git("rev-parse", "HEAD")
    assert after != before and att["target"]["headSha"] == after
    assert att["manifestSha"] == manifest_sha(text.encode())
    assert att["rubrics"] == [{"check": "review", "path": "./rubric.md", "sha256": sha256_hex(b"look for bugs\n")}]
    ledger_path = Path(data["ledgerPath"])
    assert ledger_path.stem == att["rangeSha"]
    sidecar = ledger_path.with_name(ledger_path.stem + ".annotations.json")
    assert json.loads(sidecar.read_text())["pr"]["number"] == 5


APPROVE = """
import json, os, sys
sys.stdin.read()
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    json.dump({"decision": "approve", "summary": "ok", "findings": []}, fh)
"""


def with_approving_reviewer(repo: Repo, tmp_path: Path) -> None:
    """A full run's agent lane passes (an ``exec`` reviewer that approves); headless, it is skipped."""
    script = tmp_path / "approve.py"
    script.write_text(APPROVE)
    repo.home.mkdir(parents=True, exist_ok=True)
    (repo.home / "presets.toml").write_text(
        f'[presets.rev]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(script)])}\n'
    )
    repo.commit("rubric", **{"rubric.md": "look for bugs\n"})
    start_feature(
        repo,
        manifest(
            "  - id: ok\n    kind: command\n    run: 'true'\n"
            "  - id: review\n    kind: agent\n    preset: rev\n    rubric: ./rubric.md\n"
        ),
    )


def test_a_headless_run_never_replaces_a_full_runs_entry(repo: Repo, tmp_path: Path) -> None:
    """Headless --no-cache used to overwrite the full run's pass with an incomplete under the same key."""
    with_approving_reviewer(repo, tmp_path)
    full = repo.run_json(expect=0)
    entry = Path(full["ledgerPath"])
    headless = repo.run_json("--headless", "--no-cache", expect=2)
    assert json.loads(entry.read_text())["attestation"]["runId"] == full["runId"], "the pass was replaced"
    assert headless["verdict"] == "incomplete" and headless["ledgerPath"] is None
    assert repo.ledger_files() == [entry]
    again = repo.run_json(expect=0)
    assert again["cached"] is True and again["runId"] == full["runId"]
    assert not list(Path(tempfile.gettempdir()).glob(f"agentreview-headless-*/*/*/*/{entry.name}"))


def test_a_headless_run_is_never_served_from_a_full_runs_entry(repo: Repo, tmp_path: Path) -> None:
    """A full run's pass (its agent lane reviewed) used to answer a headless run, which reviews no agent lane."""
    with_approving_reviewer(repo, tmp_path)
    full = repo.run_json(expect=0)
    headless = repo.run_json("--headless", expect=2)
    assert headless["cached"] is False and headless["runId"] != full["runId"]
    assert headless["attestation"]["lanes"][1]["status"] == "skipped"


def test_a_full_run_is_never_served_from_a_headless_run(repo: Repo) -> None:
    start_feature(repo)
    headless = repo.run_json("--headless", expect=0)
    assert headless["ledgerPath"] is None and repo.ledger_files() == []
    assert repo.run_json("--headless", expect=0)["cached"] is False, "headless runs record nothing to serve"
    full = repo.run_json(expect=0)
    assert full["cached"] is False and full["runId"] != headless["runId"]
    assert repo.run_json(expect=0)["cached"] is True


# A lane that counts itself into $COUNT_FILE, then holds until $RELEASE exists (60 s at most).
HELD_LANE = 'echo ran >> "$COUNT_FILE"; i=0; until [ -e "$RELEASE" ] || [ $i -ge 1200 ]; do sleep .05; i=$((i+1)); done'


def _start_run(repo: Repo, env: dict[str, str], *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*AGENTREVIEW, "run", "--json", *flags],
        cwd=repo.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _start_second_run_and_wait_for_its_join(repo: Repo, env: dict[str, str], *flags: str) -> subprocess.Popen[str]:
    """Start a run identical to the one holding its lane, and return once it has opened the join lock
    (the held run keeps it locked, so that attempt fails and the new run waits to join)."""
    (lock,) = repo.home.glob("reviews/*/locks/*.lock")
    with OpenWatch(lock) as watch:
        newer = _start_run(repo, env, *flags)
        assert watch.opened(timeout=120), "the second run never tried the join lock"
    return newer


@pytest.mark.parametrize(("first", "second"), [((), ("--no-cache",)), (("--no-cache",), ())])
def test_no_cache_is_part_of_the_join_key(
    repo: Repo, tmp_path: Path, first: tuple[str, ...], second: tuple[str, ...]
) -> None:
    """Two concurrent runs of one range that differ in --no-cache each run the lanes: neither joins the other.
    Each lane holds until both have started, so the first cannot record (and answer the second from the
    cache) however slowly the second process starts."""
    counter, release = tmp_path / "count.txt", tmp_path / "release"
    start_feature(repo, manifest(f"  - id: once\n    kind: command\n    run: '{HELD_LANE}'\n"))
    env = {**repo.env, "COUNT_FILE": str(counter), "RELEASE": str(release)}
    older = _start_run(repo, env, *first)
    assert wait_for(lambda: counter.exists() and "ran" in counter.read_text())
    newer = _start_run(repo, env, *second)
    assert wait_for(lambda: counter.read_text().count("ran") == 2, timeout=60)
    release.touch()
    results = [json.loads(p.communicate(timeout=60)[0]) for p in (older, newer)]
    assert [r["exitCode"] for r in results] == [0, 0]
    assert counter.read_text().count("ran") == 2
    assert results[0]["runId"] != results[1]["runId"]
    assert not any(r.get("joined") or r["cached"] for r in results)


def test_two_identical_no_cache_runs_still_join(repo: Repo, tmp_path: Path) -> None:
    """The first run's lane holds until the second run has tried the join lock the first one holds."""
    counter, release = tmp_path / "count.txt", tmp_path / "release"
    start_feature(repo, manifest(f"  - id: once\n    kind: command\n    run: '{HELD_LANE}'\n"))
    env = {**repo.env, "COUNT_FILE": str(counter), "RELEASE": str(release)}
    older = _start_run(repo, env, "--no-cache")
    assert wait_for(lambda: counter.exists() and "ran" in counter.read_text())
    newer = _start_second_run_and_wait_for_its_join(repo, env, "--no-cache")
    release.touch()
    results = [json.loads(p.communicate(timeout=120)[0]) for p in (older, newer)]
    assert counter.read_text().count("ran") == 1
    assert results[1]["joined"] is True and results[1]["runId"] == results[0]["runId"]
