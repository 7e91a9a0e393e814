"""``agentreview ledger``, ``key`` and ``export`` against a real ledger, a real git repo and real ssh-keygen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentreview.cli.entry import main
from agentreview.model.attestation import Attestation
from agentreview.model.digests import range_sha
from agentreview.store.ledger import Ledger

MSHA = "a" * 64


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTREVIEW_HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@acme.example")
    git(repo, "config", "user.name", "Dev")
    git(repo, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    shas = []
    for n in range(3):
        (repo / "f.txt").write_text(f"{n}\n")
        git(repo, "add", "f.txt")
        git(repo, "commit", "-q", "-m", f"c{n}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return {"home": home, "repo": repo, "shas": shas, "ledger": Ledger(home / "reviews")}


def record(
    env: dict[str, Any], n: int, *, binding: str = "default", head: int = 2, status: str = "pass",
    export_dir: str | None = ".reviews", remote: str = "github.com/acme/widgets", dirty: bool = False,
) -> Attestation:
    base, head_sha = env["shas"][0], env["shas"][head]
    att = Attestation.build(
        run_id=f"review-{n:04d}", review_id="widgets", manifest_sha=MSHA, binding=binding, repo_remote=remote,
        base_sha=base, head_sha=head_sha,
        lanes=[{"id": "types", "kind": "command", "status": status, "blocking": True, "findings": [], "durationMs": 1}],
        daemon="agentreview-test@host", rubrics=[], dirty=dirty, created_at=f"2025-01-01T00:00:{n:02d}.000Z",
    )
    host = {"repoRoot": str(env["repo"]), "manifestPath": str(env["repo"] / "REVIEW.md")}
    if export_dir:
        host["exportDir"] = str(env["repo"] / export_dir)
    env["ledger"].put(att, host)
    return att


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- ledger


def test_ledger_on_an_empty_home(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "ledger") == (0, "the ledger holds no attestations\n", "")
    assert cli(capsys, "ledger", "--json") == (0, "[]\n", "")


def test_ledger_table_and_json_rows_newest_first(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    record(env, 1)
    record(env, 2, binding="ci", status="fail", dirty=True)
    code, out, _ = cli(capsys, "ledger")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["RUN", "ID", "VERDICT", "BINDING", "RANGE", "CREATED", "SIGNED", "DIRTY",
                                                   "PR"]
    base7, head7 = env["shas"][0][:7], env["shas"][2][:7]
    assert lines[1].split() == ["review-0002", "block", "ci", f"{base7}..{head7}", "2025-01-01T00:00:02.000Z", "no",
                                "yes", "-"]
    assert lines[2].split()[:3] == ["review-0001", "pass", "default"] and lines[2].split()[-1] == "-"
    code, out, _ = cli(capsys, "ledger", "--json", "--limit", "1")
    rows = json.loads(out)
    assert [r["runId"] for r in rows] == ["review-0002"]
    assert rows[0]["cwd"] == str(env["repo"]) and rows[0]["signed"] is False and rows[0]["dirty"] is True
    assert rows[0]["lanes"] == [{"id": "types", "status": "fail", "blocking": True}]


def test_ledger_filters(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    record(env, 1)
    record(env, 2, head=1)
    record(env, 3, binding="ci")
    record(env, 4, remote="github.com/acme/other")
    base, mid = env["shas"][:2]

    def ids(*args: str) -> list[str]:
        code, out, err = cli(capsys, "ledger", "--json", *args)
        assert code == 0, err
        return [r["runId"] for r in json.loads(out)]

    assert ids() == ["review-0004", "review-0003", "review-0002", "review-0001"]
    assert ids("--binding", "ci") == ["review-0003"]
    assert ids("--repo", "https://github.com/acme/widgets.git") == ["review-0003", "review-0002", "review-0001"]
    assert ids("--range", f"{base}..{mid}") == ["review-0002"]  # 40-hex pair: no repository needed
    assert ids("--range", range_sha(base, mid)) == ["review-0002"]
    assert ids("--range", "main~2..main", "--cwd", str(env["repo"]), "--binding", "default") == ["review-0004",
                                                                                                   "review-0001"]


@pytest.mark.parametrize(
    "args,code,message",
    [
        (["--range", "nonsense"], 64, "must be BASE..HEAD or a 64-hex rangeSha"),
        (["--range", "..HEAD"], 64, "must name both ends"),
        (["--limit", "0"], 64, "--limit"),
        (["--limit", "501"], 64, "--limit"),
        (["--range", "no-such-ref..HEAD"], 3, "cannot resolve 'no-such-ref'"),
    ],
)
def test_ledger_bad_input_is_one_line(
    env: dict[str, Any], capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str
) -> None:
    got, out, err = cli(capsys, "ledger", *args, "--cwd", str(env["repo"]))
    assert got == code and out == ""
    assert err.startswith("agentreview ledger: ") and message in err and len(err.splitlines()) == 1


def test_ledger_warns_about_a_corrupt_entry_and_lists_the_rest(
    env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    record(env, 1)
    bad = record(env, 2, binding="ci")
    path = env["ledger"].entry_path("github.com/acme/widgets", MSHA, "ci", bad.rangeSha)
    path.write_text("{not json")
    code, out, err = cli(capsys, "ledger", "--json")
    assert code == 0 and [r["runId"] for r in json.loads(out)] == ["review-0001"]
    assert "warning" in err and str(path) in err


# --------------------------------------------------------------------------- key


def test_key_prints_the_allowed_signers_line(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "key", "--json", "--cwd", str(env["repo"]))
    info = json.loads(out)
    assert code == 0 and set(info) == {"fingerprint", "principal", "publicKeyPath", "allowedSignersLine"}
    assert info["principal"] == "dev@acme.example"  # the repo's git user.email
    pub = Path(info["publicKeyPath"])
    assert pub == env["home"] / "keys" / "review_ed25519.pub"
    assert (pub.with_suffix("").stat().st_mode & 0o777) == 0o600
    algo, blob = pub.read_text().split()[:2]
    assert info["allowedSignersLine"] == f'dev@acme.example namespaces="agentproto-review" {algo} {blob}'
    code, out, _ = cli(capsys, "key", "--principal", "ci@acme.example")
    assert code == 0 and info["fingerprint"] in out
    assert f'ci@acme.example namespaces="agentproto-review" {algo} {blob}' in out.splitlines()


def test_key_for_another_principal_than_reviews_are_signed_as_says_how_to_sign_as_it(
    env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A newcomer printing their line for an identity their reviews do not claim would get a key trusted that no
    review of theirs verifies against: the warning names both, and the setting that makes them agree."""
    code, _, err = cli(capsys, "key", "--principal", "ci@acme.example", "--cwd", str(env["repo"]))
    assert code == 0
    assert "signed as 'dev@acme.example', not 'ci@acme.example'" in err, err
    assert f'[signing] principal = "ci@acme.example" in {env["home"] / "config.toml"}' in err, err
    (env["home"] / "config.toml").write_text('[signing]\nprincipal = "ci@acme.example"\n')
    code, _, err = cli(capsys, "key", "--principal", "ci@acme.example", "--cwd", str(env["repo"]))
    assert code == 0 and "warning" not in err, err
    code, _, err = cli(capsys, "key", "--cwd", str(env["repo"]))
    assert code == 0 and "warning" not in err, err


def test_key_refuses_a_principal_with_spaces(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "key", "--principal", "two words")
    assert code == 3 and out == "" and "cannot be written in allowed_signers" in err


# --------------------------------------------------------------------------- export


def test_export_by_run_id_to_the_recorded_export_dir(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    att = record(env, 1)
    code, out, err = cli(capsys, "export", "review-0001", "--json")
    assert code == 0, err
    reply = json.loads(out)
    expected = env["repo"] / ".reviews" / f"widgets-default-{env['shas'][2][:12]}.json"
    assert reply == {"path": str(expected), "runId": "review-0001", "verdict": "pass"}
    assert expected.read_text() == att.export_text()


def test_export_to_a_path_relative_to_cwd(env: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    att = record(env, 1, export_dir=None)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, out, _ = cli(capsys, "export", "review-0001", "--cwd", str(out_dir), "--to", "gate/att.json")
    assert code == 0 and out.startswith(f"exported {out_dir / 'gate' / 'att.json'}")
    assert json.loads((out_dir / "gate" / "att.json").read_text()) == att.to_json_dict()


def test_export_without_export_dir_or_to_is_a_usage_error(
    env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    record(env, 1, export_dir=None)
    code, out, err = cli(capsys, "export", "review-0001")
    assert code == 64 and out == ""
    assert err == "agentreview export: `--to` is required (the manifest declares no `verdict.exportDir`)\n"


def test_export_by_range_needs_a_binding_when_several_match(
    env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    record(env, 1)
    record(env, 2, binding="ci")
    repo = str(env["repo"])
    code, _, err = cli(capsys, "export", "--range", "main~2..main", "--cwd", repo)
    assert code == 3 and "review-0002 [ci], review-0001 [default]" in err and "--binding" in err
    code, out, err = cli(capsys, "export", "--range", "main~2..main", "--cwd", repo, "--binding", "ci", "--json")
    assert code == 0, err
    assert json.loads(out)["runId"] == "review-0002"


def test_export_errors(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "export")
    assert code == 64 and "give a RUN_ID or --range" in err
    code, _, err = cli(capsys, "export", "review-nope")
    assert code == 3 and "no attestation in the ledger for run review-nope" in err


def test_the_commands_run_as_a_real_process(env: dict[str, Any], tmp_path: Path) -> None:
    record(env, 1)
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "ledger", "--json"], capture_output=True, text=True, timeout=60,
        env={**os.environ}, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert [r["runId"] for r in json.loads(proc.stdout)] == ["review-0001"]
