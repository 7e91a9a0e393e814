"""Output is bounded: the last 64 KiB are kept, whatever a lane prints, at no memory cost."""

from __future__ import annotations

import json

import pytest
from agentreview_command.executor import OUTPUT_LIMIT, CommandLaneExecutor
from cmdlane_helpers import request, start_driver

from agentreview.host.procs.buffers import TailBuffer


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


def _once(tmp_path, command: str) -> dict:
    driver = start_driver(tmp_path, "once", command)
    out, _ = driver.communicate(timeout=120)
    assert driver.returncode == 0
    return json.loads(out)


def test_200_mb_of_output_keeps_the_tail_and_costs_no_memory(tmp_path):
    baseline = _once(tmp_path, "echo small")
    flood = _once(tmp_path, "yes 0123456789abcdef | head -c 200000002; echo END-OF-OUTPUT")
    assert (flood["kind"], flood["exit_code"]) == ("exited", 0)
    assert flood["output_len"] == OUTPUT_LIMIT
    assert flood["tail"].endswith("0123456789abcdef\nEND-OF-OUTPUT\n")
    grown_mb = (flood["maxrss_kb"] - baseline["maxrss_kb"]) / 1024
    assert grown_mb < 8, f"peak RSS grew by {grown_mb:.1f} MB for 200 MB of output"


def test_tail_of_a_lane_that_prints_more_than_the_limit(tmp_path):
    outcome = CommandLaneExecutor().run_lane(
        request("i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done", repo_root=tmp_path)
    )
    assert len(outcome.output) == OUTPUT_LIMIT
    assert outcome.output.endswith("line-19999\n")
    assert "line-0\n" not in outcome.output


def test_tail_buffer_keeps_the_last_bytes_in_bulk_trims():
    tail = TailBuffer(limit=10)
    for index in range(100):
        tail.feed(f"{index:03d}".encode())
    assert tail.text() == "6097098099"
    assert tail.total == 300


def test_tail_buffer_drops_a_split_utf8_sequence_at_the_cut():
    tail = TailBuffer(limit=4)
    tail.feed("aé€".encode())  # 61 c3a9 e282ac: the last four bytes start inside "é"
    assert tail.text() == "€"


def test_tail_buffer_decodes_a_character_split_across_reads():
    tail = TailBuffer()
    data = "€".encode()
    tail.feed(data[:1])
    tail.feed(data[1:])
    assert tail.text() == "€"
