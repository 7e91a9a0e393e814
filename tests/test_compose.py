"""Composition end to end: an agent lane that passed is re-reviewed as a delta over only the new commits.

The reviewer is an ``exec`` preset running a small script that logs the range it was
given and answers with no findings, so the test sees exactly what the host asked for.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from reviewrepo import Repo, manifest

REVIEWER = """
import json, os, sys
sys.stdin.read()
with open(os.environ["LOG"], "a") as fh:
    fh.write(os.environ["AGENTREVIEW_BASE"] + ".." + os.environ["AGENTREVIEW_HEAD"] + "\\n")
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    json.dump({"decision": "approve", "summary": "ok", "findings": []}, fh)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo", tmp_path / "home")
    r.home.mkdir(parents=True)
    script = tmp_path / "reviewer.py"
    script.write_text(REVIEWER)
    (r.home / "presets.toml").write_text(
        f'[presets.rev]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(script)])}\nenv = ["LOG"]\n'
    )
    text = manifest(
        "  - id: ok\n    kind: command\n    run: 'true'\n"
        "  - id: review\n    kind: agent\n    preset: rev\n    rubric: ./rubric.md\n",
        extra="verdict:\n  exportDir: .reviews\n",
    )
    r.commit("initial", **{"README.md": "hello\n", "rubric.md": "look for bugs\n", "REVIEW.md": text})
    r.git("switch", "-q", "-c", "feature")
    return r


def _log(tmp_path: Path) -> list[str]:
    path = tmp_path / "log.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_delta_review_records_composed_from_and_verifies(repo: Repo, tmp_path: Path) -> None:
    env = {**repo.env, "LOG": str(tmp_path / "log.txt")}
    base = repo.git("rev-parse", "main")
    first_head = repo.commit("one", **{"a.txt": "1\n"})
    first = repo.run_json("--export", env=env, expect=0)
    assert "composedFrom" not in first["attestation"]["lanes"][1]
    assert _log(tmp_path) == [f"{base}..{first_head}"]

    second_head = repo.commit("two", **{"b.txt": "2\n"})
    second = repo.run_json("--export", env=env, expect=0)
    att = second["attestation"]
    lane = att["lanes"][1]
    assert att["target"]["baseSha"] == base and att["target"]["headSha"] == second_head
    # the reviewer saw only the new commit
    assert _log(tmp_path)[-1] == f"{first_head}..{second_head}"
    prior = first["attestation"]
    from agentreview.model.digests import attestation_sha256_of

    assert lane["composedFrom"] == {
        "rangeSha": prior["rangeSha"],
        "headSha": first_head,
        "attestationSha256": attestation_sha256_of(prior),
    }
    # command lanes never compose
    assert "composedFrom" not in att["lanes"][0]

    verify = [sys.executable, "-m", "agentreview", "verify", "--json"]
    ok = subprocess.run(verify, cwd=repo.path, env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    # altering the prior export breaks the pinned digest
    prior_path = Path(first["exportPath"])
    data = json.loads(prior_path.read_text())
    data["lanes"][1]["summary"] = "edited"
    prior_path.write_text(json.dumps(data, indent=2) + "\n")
    bad = subprocess.run(verify, cwd=repo.path, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert any("composedFrom" in p or "prior" in p for p in json.loads(bad.stdout)["problems"])

    # a missing prior is a problem too
    prior_path.unlink()
    gone = subprocess.run(verify, cwd=repo.path, env=env, capture_output=True, text=True, timeout=60)
    assert gone.returncode == 1


def test_no_compose_and_no_cache_review_the_whole_range(repo: Repo, tmp_path: Path) -> None:
    env = {**repo.env, "LOG": str(tmp_path / "log.txt")}
    base = repo.git("rev-parse", "main")
    repo.commit("one", **{"a.txt": "1\n"})
    repo.run_json(env=env, expect=0)
    head = repo.commit("two", **{"b.txt": "2\n"})
    for flag in ("--no-compose", "--no-cache"):
        data = repo.run_json(flag, env=env, expect=0)
        assert "composedFrom" not in data["attestation"]["lanes"][1]
        assert _log(tmp_path)[-1] == f"{base}..{head}"


def test_a_dirty_prior_or_changed_rubric_is_not_composed(repo: Repo, tmp_path: Path) -> None:
    env = {**repo.env, "LOG": str(tmp_path / "log.txt")}
    base = repo.git("rev-parse", "main")
    repo.commit("one", **{"a.txt": "1\n"})
    repo.write("README.md", "uncommitted\n")
    dirty = repo.run_json(env=env, expect=0)
    assert dirty["attestation"]["dirty"] is True
    repo.git("checkout", "--", "README.md")
    head = repo.commit("two", **{"b.txt": "2\n"})
    repo.run_json(env=env, expect=0)
    assert _log(tmp_path)[-1] == f"{base}..{head}", "a dirty prior must never be a composition base"
    # a rubric edit makes the prior ineligible for that lane
    head = repo.commit("rubric", **{"rubric.md": "look harder\n"})
    data = repo.run_json(env=env, expect=0)
    assert "composedFrom" not in data["attestation"]["lanes"][1]
    assert _log(tmp_path)[-1] == f"{base}..{head}"


def test_verify_checks_composed_from_one_level_deep_unless_full_chain(repo: Repo, tmp_path: Path) -> None:
    """Issue 9, item 15: the spec's step 5 is one level deep, so an honest export set holding the
    prior but not the prior's own prior verifies; ``--full-chain`` asks for the whole chain."""
    env = {**repo.env, "LOG": str(tmp_path / "log.txt")}
    repo.commit("one", **{"a.txt": "1\n"})
    first = repo.run_json("--export", env=env, expect=0)
    repo.commit("two", **{"b.txt": "2\n"})
    second = repo.run_json("--export", env=env, expect=0)
    repo.commit("three", **{"c.txt": "3\n"})
    third = repo.run_json("--export", env=env, expect=0)
    assert "composedFrom" in second["attestation"]["lanes"][1]
    assert third["attestation"]["lanes"][1]["composedFrom"]["headSha"] == second["attestation"]["target"]["headSha"]
    Path(first["exportPath"]).unlink()  # the set holds the third and its prior, not the prior's prior
    assert Path(second["exportPath"]).is_file()

    verify = [sys.executable, "-m", "agentreview", "verify", "--json"]
    one_level = subprocess.run(verify, cwd=repo.path, env=env, capture_output=True, text=True, timeout=60)
    assert one_level.returncode == 0, one_level.stdout + one_level.stderr
    composed = [c for c in json.loads(one_level.stdout)["checks"] if "composedFrom" in c["check"]]
    assert [c["ok"] for c in composed] == [True]

    whole = subprocess.run([*verify, "--full-chain"], cwd=repo.path, env=env, capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert whole.returncode == 1, whole.stdout + whole.stderr
    problems = json.loads(whole.stdout)["problems"]
    assert any(p.startswith("prior ") and "is not in the export directory" in p for p in problems), problems


def _verify(repo: Repo, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "agentreview", "verify", "--json", *args]
    return subprocess.run(cmd, cwd=repo.path, env=env, capture_output=True, text=True, timeout=60)


def test_export_writes_the_priors_of_the_composition_chain(repo: Repo, tmp_path: Path) -> None:
    """A prior that was never exported (only recorded in the ledger) is exported with the composed
    attestation, under its own export name, and so is its own prior: the set verifies one level
    deep (the spec's step 5) and with --full-chain."""
    env = {**repo.env, "LOG": str(tmp_path / "log.txt")}
    first_head = repo.commit("one", **{"a.txt": "1\n"})
    first = repo.run_json(env=env, expect=0)  # recorded, not exported
    assert first["exportPath"] is None
    second_head = repo.commit("two", **{"b.txt": "2\n"})
    second = repo.run_json("--export", env=env, expect=0)
    assert second["attestation"]["lanes"][1]["composedFrom"]["headSha"] == first_head
    exports = repo.path / ".reviews"
    assert sorted(p.name for p in exports.iterdir()) == sorted(
        [f"demo-default-{first_head[:12]}.json", f"demo-default-{second_head[:12]}.json"]
    )
    assert json.loads((exports / f"demo-default-{first_head[:12]}.json").read_text()) == first["attestation"]
    for extra in ((), ("--full-chain",)):
        ok = _verify(repo, env, *extra)
        assert ok.returncode == 0, ok.stdout + ok.stderr

    # a chain of two: the third composes from the second, which composed from the first
    third_head = repo.commit("three", **{"c.txt": "3\n"})
    third = repo.run_json("--export-to", "elsewhere/third.json", env=env, expect=0)
    assert third["attestation"]["lanes"][1]["composedFrom"]["headSha"] == second_head
    elsewhere = repo.path / "elsewhere"
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(
        ["third.json", f"demo-default-{first_head[:12]}.json", f"demo-default-{second_head[:12]}.json"]
    )
    for extra in ((), ("--full-chain",)):
        ok = _verify(repo, env, str(elsewhere / "third.json"), *extra)
        assert ok.returncode == 0, ok.stdout + ok.stderr
    assert third_head == repo.git("rev-parse", "HEAD")

    # a prior already exported is left as it is; a different attestation under its name is kept too
    again = repo.run_json("--export-to", "elsewhere/third.json", env=env, expect=0)
    assert again["cached"] is True
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(
        ["third.json", f"demo-default-{first_head[:12]}.json", f"demo-default-{second_head[:12]}.json"]
    )
    taken = elsewhere / f"demo-default-{first_head[:12]}.json"
    other = json.loads(taken.read_text())
    other["createdAt"] = "2000-01-01T00:00:00.000Z"
    taken.write_text(json.dumps(other, indent=2) + "\n")
    repo.run_json("--export-to", "elsewhere/third.json", env=env, expect=0)
    assert json.loads(taken.read_text()) == other
    beside = [p for p in elsewhere.iterdir() if p.name.startswith(f"demo-default-{first_head[:12]}-")]
    assert len(beside) == 1 and json.loads(beside[0].read_text()) == first["attestation"]
    ok = _verify(repo, env, str(elsewhere / "third.json"), "--full-chain")
    assert ok.returncode == 0, ok.stdout + ok.stderr
