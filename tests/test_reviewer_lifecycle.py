"""The reviewer base's lifecycle parts, with real processes and real files: the idle-output watchdog of
``run_process_group`` and saving back a credential a CLI refreshed by replacing its link."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from agentreview.host.procs.group import run_process_group
from agentreview.reviewers.credentials import link_credential, save_refreshed, why_not_newer


def _run(code: str, *, idle_s: float | None, budget_s: float):
    return run_process_group(
        [sys.executable, "-c", "import sys, time\n" + code],
        cwd="/",
        env=dict(os.environ),
        deadline=time.monotonic() + budget_s,
        kill_grace_s=1.0,
        idle_s=idle_s,
    )


def test_output_that_stops_mid_stream_is_a_stall_not_a_timeout() -> None:
    proc = _run("print('{\"type\": \"start\"}', flush=True)\ntime.sleep(120)", idle_s=0.5, budget_s=60)
    assert proc.stalled and not proc.timed_out
    assert proc.stdout_text().startswith('{"type": "start"}')


def test_silence_before_any_output_is_not_a_stall() -> None:
    proc = _run("time.sleep(120)", idle_s=0.2, budget_s=1.5)
    assert proc.timed_out and not proc.stalled


def test_output_that_keeps_coming_is_never_a_stall() -> None:
    proc = _run("for i in range(8):\n    print(i, flush=True)\n    time.sleep(0.05)", idle_s=30, budget_s=60)
    assert proc.returncode == 0 and not proc.stalled and proc.stdout_text().split() == [str(i) for i in range(8)]


def _credential(token: str, expires: int) -> str:
    return json.dumps({"access_token": token, "refresh_token": token + "-r", "expires_at": expires})


def test_a_replaced_directory_link_saves_each_newer_file(tmp_path: Path) -> None:
    user = tmp_path / "user" / "credentials"
    user.mkdir(parents=True)
    (user / "kimi-code.json").write_text(_credential("old", 100))
    (user / "other.json").write_text(_credential("other", 100))
    work = tmp_path / "attempt"
    home = work / "home"
    assert link_credential(work, user, home / "credentials")
    # the CLI replaces the whole linked folder with a new one (write elsewhere, rename over the link)
    fresh = home / "credentials.new"
    fresh.mkdir()
    (fresh / "kimi-code.json").write_text(_credential("new", 200))
    (fresh / "other.json").write_text(_credential("other", 100))
    (fresh / "unknown.json").write_text(_credential("x", 1))
    (home / "credentials").unlink()
    fresh.rename(home / "credentials")
    notes = save_refreshed(work)
    assert json.loads((user / "kimi-code.json").read_text())["access_token"] == "new"
    assert json.loads((user / "other.json").read_text())["access_token"] == "other"
    assert not (user / "unknown.json").exists()
    assert notes == [f"a new credential unknown.json was not saved to {user}: yours has no such file"]
    assert save_refreshed(work) == []  # each attempt's links are looked at once


def test_an_intact_link_changes_nothing_and_a_removed_one_is_noted(tmp_path: Path) -> None:
    user = tmp_path / "auth.json"
    user.write_text(_credential("t", 1))
    work = tmp_path / "attempt"
    assert link_credential(work, user, work / "home" / "auth.json")
    assert save_refreshed(work) == []
    assert link_credential(work, user, work / "home2" / "auth.json")
    (work / "home2" / "auth.json").unlink()
    assert save_refreshed(work) == [f"the linked credential auth.json was removed by the CLI; {user} is unchanged"]
    assert user.read_text() == _credential("t", 1)
    assert not link_credential(work, tmp_path / "absent.json", work / "home3" / "absent.json")


def test_the_users_credential_behind_a_symlink_is_replaced_where_it_lives(tmp_path: Path) -> None:
    real = tmp_path / "vault" / "auth.json"
    real.parent.mkdir()
    real.write_text(_credential("old", 1))
    user = tmp_path / "auth.json"
    user.symlink_to(real)
    work = tmp_path / "attempt"
    link_credential(work, user, work / "home" / "auth.json")
    target = work / "home" / "auth.json"
    target.unlink()
    target.write_text(_credential("new", 2))
    assert save_refreshed(work) == []
    assert user.is_symlink() and json.loads(real.read_text())["access_token"] == "new"
    assert real.stat().st_mode & 0o777 == 0o600


def test_newer_means_same_kind_and_not_older_by_any_shared_time() -> None:
    old = {"claudeAiOauth": {"accessToken": "a", "expiresAt": 10}}
    assert why_not_newer(old, {"claudeAiOauth": {"accessToken": "b", "expiresAt": 20}}) is None
    assert why_not_newer(old, {"claudeAiOauth": {"accessToken": "b"}}) is None  # no time to compare: it differs
    assert why_not_newer(old, old) == "unchanged"
    assert why_not_newer(old, {"claudeAiOauth": {"accessToken": "b", "expiresAt": 5}}).startswith("it is older")
    assert why_not_newer({"last_refresh": "2026-12-01T10:00:00Z"}, {"last_refresh": "2026-11-01T10:00:00Z"})
    assert why_not_newer(old, {"x": 1}).startswith("it is another kind")
    assert why_not_newer(old, ["not", "an", "object"]) == "it is not a JSON object"
