"""The verdict fold (AIP-62 "The verdict fold", reference-notes 2.4): incomplete is never a pass."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentreview.model.fold import QUORUM, fold_verdict

STATUSES = ("pass", "fail", "skipped", "timeout")
lanes_strategy = st.lists(st.tuples(st.booleans(), st.sampled_from(STATUSES)), max_size=8)


@pytest.mark.parametrize(
    ("lanes", "expected"),
    [
        ([], "incomplete"),  # rule 2, the empty list included
        ([(False, "pass")], "incomplete"),  # advisory lanes alone are no review
        ([(False, "pass"), (False, "fail")], "incomplete"),
        ([(True, "pass")], "pass"),
        ([(True, "pass"), (True, "pass")], "pass"),
        ([(True, "fail")], "block"),
        ([(True, "timeout")], "incomplete"),
        ([(True, "skipped")], "incomplete"),
        ([(True, "pass"), (True, "timeout")], "incomplete"),
        ([(True, "fail"), (True, "timeout")], "block"),  # block outranks incomplete
        ([(True, "skipped"), (True, "fail")], "block"),
        ([(True, "pass"), (False, "fail")], "pass"),  # advisory failure never blocks
        ([(True, "pass"), (False, "timeout")], "pass"),
        ([(True, "pass"), (False, "skipped")], "pass"),
        ([(True, "fail"), (False, "pass")], "block"),
    ],
)
def test_spec_rules(lanes: list[tuple[bool, str]], expected: str) -> None:
    assert fold_verdict(lanes) == expected


@pytest.mark.parametrize("quorum", ["any-pass", "majority", "", "ALL-BLOCKING-PASS"])
def test_non_default_quorum_is_incomplete(quorum: str) -> None:
    assert fold_verdict([(True, "pass")], quorum=quorum) == "incomplete"
    assert fold_verdict([(True, "fail")], quorum=quorum) == "incomplete"


def test_default_quorum_name() -> None:
    assert QUORUM == "all-blocking-pass"
    assert fold_verdict([(True, "pass")], quorum="all-blocking-pass") == "pass"


def test_unknown_status_is_never_a_pass() -> None:
    assert fold_verdict([(True, "passed")]) == "incomplete"
    assert fold_verdict([(True, "")]) == "incomplete"


def test_accepts_a_one_shot_iterator() -> None:
    assert fold_verdict(iter([(True, "pass"), (False, "fail")])) == "pass"


@given(lanes_strategy)
def test_pass_only_when_some_blocking_lane_exists_and_all_blocking_passed(lanes: list[tuple[bool, str]]) -> None:
    blocking = [status for is_blocking, status in lanes if is_blocking]
    verdict = fold_verdict(lanes)
    assert verdict in ("pass", "block", "incomplete")
    assert (verdict == "pass") == (bool(blocking) and all(s == "pass" for s in blocking))


@given(lanes_strategy)
def test_block_exactly_when_a_blocking_lane_failed(lanes: list[tuple[bool, str]]) -> None:
    failed = any(is_blocking and status == "fail" for is_blocking, status in lanes)
    assert (fold_verdict(lanes) == "block") == failed


@given(lanes_strategy, st.lists(st.sampled_from(STATUSES), max_size=5), st.randoms())
def test_advisory_lanes_and_order_never_matter(
    lanes: list[tuple[bool, str]], advisory: list[str], rnd: random.Random
) -> None:
    blocking_only = [lane for lane in lanes if lane[0]]
    mixed = lanes + [(False, status) for status in advisory]
    rnd.shuffle(mixed)
    assert fold_verdict(mixed) == fold_verdict(blocking_only)


@given(lanes_strategy, st.text(max_size=20).filter(lambda q: q != QUORUM))
def test_any_other_quorum_is_incomplete(lanes: list[tuple[bool, str]], quorum: str) -> None:
    assert fold_verdict(lanes, quorum=quorum) == "incomplete"
