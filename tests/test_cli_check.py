"""``agentreview check`` on real git repositories: bindings shown, every problem on stderr, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview.cli.entry import main
from agentreview.model.digests import pack_digest_sha256

EXAMPLES = Path(__file__).parent / "fixtures" / "examples"
AGENTREVIEW = Path(sys.executable).parent / "agentreview"


def run_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_push_gate_as_a_real_subprocess(git_repo, agentreview_home: Path) -> None:
    root = git_repo(files={"REVIEW.md": (EXAMPLES / "push-gate.md").read_text()})
    env = {**os.environ, "AGENTREVIEW_HOME": str(agentreview_home)}
    proc = subprocess.run([str(AGENTREVIEW), "check"], cwd=root, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "review agentik-studio: valid" in out
    assert f"repo root    {root}" in out
    assert "binding local  (on: pre-push, quorum all-blocking-pass)" in out
    assert "    types  command  advisory  timeout 600s" in out
    assert "    structure  command  advisory  timeout 120s" in out
    assert "    gate  command  blocking  timeout 60s" in out
    lane = next(line for line in out.splitlines() if line.startswith("    correctness"))
    assert "agent  blocking  timeout 900s  preset cc-subs-agentik  fallbacks -  blockOn high" in lane
    assert str(root / "scripts/review/rubrics/correctness.md") in lane
    assert "packs: (none)" in out
    # valid, and what this host lacks is said on stderr: the user preset is not defined here
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("agentreview check: warning: check '") for line in lines)
    assert any("'correctness': unknown preset 'cc-subs-agentik'" in line for line in lines)


def test_two_bindings_json(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": (EXAMPLES / "two-bindings.md").read_text()})
    code, out, err = run_check(capsys, "--cwd", str(root), "--json")
    assert code == 0, err
    view = json.loads(out)
    assert view["id"] == "agentproto-ts" and view["root"] == str(root)
    assert view["manifestSha"] == __import__("hashlib").sha256((root / "REVIEW.md").read_bytes()).hexdigest()
    assert view["exportDir"] == ".reviews"
    assert [b["name"] for b in view["bindings"]] == ["local", "ci"]
    local, ci = view["bindings"]
    assert local["on"] == "pre-push" and [s["id"] for s in local["prepare"]] == ["changeset"]
    assert [lane["id"] for lane in local["lanes"]] == ["types", "correctness"]
    assert ci["lanes"][0] == {
        "id": "build",
        "kind": "command",
        "blocking": True,
        "timeoutMs": 1_200_000,
        "run": "pnpm build",
    }
    agent = ci["lanes"][1]
    assert agent["preset"] == "kimi" and agent["blockOn"] == "high" and agent["fallbackPresets"] == []
    assert agent["rubricPath"] == str(root / "rubrics" / "correctness.md")
    assert view["packs"] == []


def test_two_bindings_text_shows_prepare(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": (EXAMPLES / "two-bindings.md").read_text()})
    code, out, _ = run_check(capsys, "--cwd", str(root))
    assert code == 0
    assert "binding local  (on: pre-push" in out and "binding ci  (on: pr" in out
    assert "  prepare:\n    changeset  command  blocking  timeout 600s  run: pnpm changeset:auto" in out


def test_binding_option(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": (EXAMPLES / "two-bindings.md").read_text()})
    code, out, _ = run_check(capsys, "--cwd", str(root), "--binding", "ci", "--json")
    assert code == 0 and [b["name"] for b in json.loads(out)["bindings"]] == ["ci"]
    code, out, err = run_check(capsys, "--cwd", str(root), "--binding", "prod")
    assert code == 3 and out == ""  # an unknown binding could not run, as for `run` (docs/cli.md, Exit codes)
    assert "review 'agentproto-ts' has no binding 'prod' — available: local, ci" in err


def test_cwd_in_a_subdirectory_finds_the_root_manifest(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": (EXAMPLES / "two-bindings.md").read_text(), "src/a.txt": "a\n"})
    code, out, _ = run_check(capsys, "--cwd", str(root / "src"), "--json")
    assert code == 0 and json.loads(out)["path"] == str(root / "REVIEW.md")


INVALID = """---
kind: review
id: demo
target: git-range
checks:
  - id: lint
    kind: command
    run: make lint {nope}
    timeoutMs: "60"
  - id: lint
    kind: agent
    preset: kimi
    rubric: r.md
    effects: true
bindings:
  local: {checks: [lint, ghost]}
---
"""


def test_invalid_manifest_exits_3_with_every_problem_on_stderr(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": INVALID})
    code, out, err = run_check(capsys, "--cwd", str(root))
    assert code == 3 and out == ""
    lines = err.splitlines()
    manifest = str(root / "REVIEW.md")
    assert len(lines) == 4, err
    assert all(line.startswith(manifest + ":") for line in lines)
    assert lines[0].startswith(f"{manifest}:9: checks[0].timeoutMs: must be a whole number")
    assert any(":10: checks[1].id: checks[] lists 'lint' more than once" in line for line in lines)
    assert any(":14: checks[1].effects: 'effects: true' is only supported on command checks" in line for line in lines)
    assert any(
        ":16: bindings.local.checks[1]: binding 'local' checks references unknown check 'ghost'" in line
        for line in lines
    )


def test_invalid_manifest_with_json_prints_every_problem_as_data(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": INVALID})
    code, out, _ = run_check(capsys, "--cwd", str(root), "--json")
    data = json.loads(out)
    assert code == 3 and data["valid"] is False and data["path"] == str(root / "REVIEW.md")
    assert len(data["problems"]) == 4
    assert data["problems"][0]["location"] == "checks[0].timeoutMs" and data["problems"][0]["line"] == 9
    assert all(p["message"] and p["fix"] for p in data["problems"])


def test_missing_manifest_is_3(git_repo, capsys) -> None:
    root = git_repo()
    code, _, err = run_check(capsys, "--cwd", str(root))
    assert code == 3 and f"{root / 'REVIEW.md'}: file: does not exist" in err


@pytest.mark.parametrize("link", [False, True], ids=["fifo", "symlink-to-fifo"])
def test_a_fifo_manifest_is_refused_at_once(git_repo, agentreview_home: Path, link: bool) -> None:
    """A REVIEW.md that is a FIFO (or a link to one) with no writer would hang a plain open(): refused instead."""
    root = git_repo()
    fifo = root.parent / "review.fifo"
    os.mkfifo(fifo)
    target = root / "REVIEW.md"
    if link:
        target.symlink_to(fifo)
    else:
        target = fifo
    env = {**os.environ, "AGENTREVIEW_HOME": str(agentreview_home)}
    proc = subprocess.run(
        [str(AGENTREVIEW), "check", "--manifest", str(target)],
        cwd=root, capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr == (
        f"{target}: file: is not a regular file (a FIFO, device or socket, or a link to one) — refusing to read it; "
        "fix: point --manifest at the REVIEW.md file itself\n"
    )


@pytest.mark.parametrize("name", ["/dev/stdin", "/proc/self/fd/1"])
def test_a_manifest_that_is_a_stream_is_refused_at_once(git_repo, agentreview_home: Path, name: str) -> None:
    root = git_repo()
    env = {**os.environ, "AGENTREVIEW_HOME": str(agentreview_home)}
    with subprocess.Popen(
        [str(AGENTREVIEW), "check", "--manifest", name],
        cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as proc:  # fmt: skip
        out, err = proc.communicate(timeout=120)  # stdin stays open until then: a blocking read would hang
    assert proc.returncode == 3 and out == ""
    assert f"{name}: file: is not a regular file" in err


def test_outside_a_repo_with_manifest_reports_root_null(tmp_path: Path, capsys, monkeypatch) -> None:
    manifest = tmp_path / "REVIEW.md"
    manifest.write_bytes((EXAMPLES / "two-bindings.md").read_bytes())
    code, out, _ = run_check(capsys, "--cwd", str(tmp_path), "--manifest", "REVIEW.md", "--json")
    assert code == 0 and json.loads(out)["root"] is None
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_check(capsys, "--manifest", str(manifest))
    assert code == 0 and "(not a git repository)" in out


def test_outside_a_repo_without_manifest_is_a_usage_error(tmp_path: Path, capsys) -> None:
    code, out, err = run_check(capsys, "--cwd", str(tmp_path))
    assert code == 64 and out == "" and "pass --manifest" in err


def test_unknown_option_is_a_usage_error(capsys) -> None:
    code, _, err = run_check(capsys, "--frobnicate")
    assert code == 64 and "--frobnicate" in err


def test_a_pack_file_is_checked_as_a_pack(capsys) -> None:
    code, out, _ = run_check(capsys, "--manifest", str(EXAMPLES / "pack.md"))
    assert code == 0
    assert "review-pack core@1.0.0: valid" in out
    assert "  security  agent  blocking  timeout 900s  preset -  rubric ./rubrics/security.md" in out
    code, out, _ = run_check(capsys, "--manifest", str(EXAMPLES / "pack.md"), "--json")
    assert json.loads(out)["kind"] == "review-pack"


PACK = """---
kind: review-pack
id: core
version: 2.0.0
checks:
  - id: correctness
    kind: agent
    rubric: ./rubrics/correctness.md
  - id: security
    kind: agent
    rubric: ./rubrics/security.md
---
"""

CONSUMER = """---
kind: review
id: web
target: git-range
checks:
  - id: types
    kind: command
    run: make types
uses:
  - pack: ./packs/core
    as: core
    checks: [correctness]
    preset: kimi
bindings:
  local: {on: pre-push, checks: [types, core/correctness]}
---
"""


def test_consumer_with_an_in_repo_pack_shows_packs(git_repo, capsys) -> None:
    root = git_repo(
        files={
            "REVIEW.md": CONSUMER,
            "packs/core/REVIEW.md": PACK,
            "packs/core/rubrics/correctness.md": "rubric\n",
            "packs/core/rubrics/security.md": "security\n",
        }
    )
    code, out, err = run_check(capsys, "--cwd", str(root), "--json")
    assert code == 0, err
    view = json.loads(out)
    (pack,) = view["packs"]
    assert pack["ref"] == "./packs/core" and pack["id"] == "core" and pack["version"] == "2.0.0"
    assert pack["trusted"] is True
    expected = pack_digest_sha256(PACK.encode(), [("./rubrics/correctness.md", b"rubric\n")])
    assert pack["sha256"] == expected and pack["alg"] == "agentproto-pack-digest/v1"
    lane = view["bindings"][0]["lanes"][1]
    assert lane["id"] == "core/correctness" and lane["preset"] == "kimi"
    assert Path(lane["rubricPath"]).resolve() == (root / "packs/core/rubrics/correctness.md").resolve()
    code, out, _ = run_check(capsys, "--cwd", str(root))
    assert "packs:\n  ./packs/core as core: core@2.0.0  trusted  agentproto-pack-digest/v1 " + expected in out


def test_a_binding_naming_a_pack_check_that_does_not_exist_is_3(git_repo, capsys) -> None:
    consumer = CONSUMER.replace("core/correctness]", "core/security]")  # not selected by checks: [correctness]
    root = git_repo(
        files={"REVIEW.md": consumer, "packs/core/REVIEW.md": PACK, "packs/core/rubrics/correctness.md": "r\n"}
    )
    code, out, err = run_check(capsys, "--cwd", str(root))
    assert code == 3 and out == ""
    assert "unknown check 'core/security'" in err


def test_a_pack_that_does_not_load_is_3(git_repo, capsys) -> None:
    root = git_repo(files={"REVIEW.md": CONSUMER})
    code, out, err = run_check(capsys, "--cwd", str(root))
    assert code == 3 and out == ""
    assert len(err.strip().splitlines()) == 1 and "./packs/core" in err


@pytest.mark.parametrize("target", ["fifo", "/dev/stdin", "/proc/self/fd/1"])
def test_a_review_md_the_change_links_to_a_stream_is_refused_at_once(
    git_repo, agentreview_home: Path, target: str
) -> None:
    """The default REVIEW.md (no --manifest) committed as a link to a FIFO, /dev/stdin or /proc/self/fd/1,
    with stdin and stdout held open until the command ends (a blocking read would wait for ever)."""
    root = git_repo()
    if target == "fifo":
        target = str(root.parent / "review.fifo")
        os.mkfifo(target)
    (root / "REVIEW.md").symlink_to(target)
    subprocess.run(["git", "add", "REVIEW.md"], cwd=root, check=True, timeout=30)
    subprocess.run(["git", "commit", "-q", "-m", "REVIEW.md as a link"], cwd=root, check=True, timeout=30)
    env = {**os.environ, "AGENTREVIEW_HOME": str(agentreview_home)}
    with subprocess.Popen(
        [str(AGENTREVIEW), "check"],
        cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as proc:  # fmt: skip
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"agentreview check hung on a REVIEW.md linked to {target}")
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == 3 and out == ""
    assert err == (
        f"{root / 'REVIEW.md'}: file: is not a regular file (a FIFO, device or socket, or a link to one) — "
        "refusing to read it; fix: point --manifest at the REVIEW.md file itself\n"
    )
