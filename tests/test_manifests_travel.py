"""Manifests that travel between hosts: read here as the reference host reads them, or refused for a
reason docs/concepts.md states ("Where agentreview is stricter or looser"). Every case is bytes on disk,
read by the same reader a run uses; the host-facing paths run as real processes in real repositories."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from pack_helpers import consumer
from reviewrepo import AGENTREVIEW, feature_repo, manifest

from agentreview.manifest.parse import ManifestError, parse_pack, parse_review

HEAD = b"---\nkind: review\nid: demo\ntarget: git-range\n"


def review(checks: bytes, extra: bytes = b"", *, head: bytes = HEAD, end: bytes = b"---\n\n# demo\n") -> bytes:
    return head + extra + b"checks:\n" + checks + end


def command(timeout: bytes) -> bytes:
    return b"  - id: lint\n    kind: command\n    run: 'true'\n    timeoutMs: " + timeout + b"\n"


def agent(timeout: bytes) -> bytes:
    return b"  - id: rev\n    kind: agent\n    preset: p\n    rubric: r.md\n    timeoutMs: " + timeout + b"\n"


def pack(timeout: bytes) -> bytes:
    return b"---\nkind: review-pack\nid: core\nversion: 1.0.0\nchecks:\n" + command(timeout) + b"---\n"


def uses(timeout: bytes) -> bytes:
    text = consumer(
        "  - pack: ./packs/core\n    as: core\n    checks: [lint]\n    overrides:\n      lint:\n        timeoutMs: @T@",
        "types, core/lint",
    )
    return text.encode().replace(b"@T@", timeout)


def refusal(source: bytes, *, is_pack: bool = False) -> str:
    with pytest.raises(ManifestError) as info:
        (parse_pack if is_pack else parse_review)(source, Path("REVIEW.md"))
    return info.value.render()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


# --------------------------------------------------------------------------- integer fields


@pytest.mark.parametrize("spelling", [b"1000", b"1000.0", b"1e3", b"1E3", b"1.0e3", b"1e+3", b"10e2", b"!!float 1000"])
def test_an_integral_timeout_in_any_spelling_is_a_whole_number(spelling: bytes) -> None:
    """JavaScript reads 1000.0 and 1e3 as the number 1000; so do the strict reader's integer fields."""
    parsed = parse_review(review(command(spelling) + agent(spelling)))
    assert [(c.timeoutMs, type(c.timeoutMs)) for c in parsed.manifest.checks] == [(1000, int), (1000, int)]
    (check,) = parse_pack(pack(spelling)).checks
    assert check.timeoutMs == 1000 and type(check.timeoutMs) is int
    (entry,) = parse_review(uses(spelling)).manifest.uses
    assert entry.overrides["lint"].timeoutMs == 1000 and type(entry.overrides["lint"].timeoutMs) is int


@pytest.mark.parametrize(
    ("spelling", "fragment"),
    [
        (b"1000.5", "must be a whole number, got float 1000.5"),
        (b"1e-3", "must be a whole number"),
        (b"0.0", "must be greater than 0"),
        (b"8.64e7", None),  # the one-day cap, exactly: accepted
        (b"8.6400001e7", "must be at most 86400000"),
        (b"1e20", "must be at most 86400000"),
        (b"'1000'", "must be a whole number, got string '1000'"),
        (b"true", "must be a whole number, got boolean true"),
    ],
)
def test_a_fraction_or_a_bound_past_one_day_is_refused(spelling: bytes, fragment: str | None) -> None:
    if fragment is None:
        assert parse_review(review(command(spelling))).manifest.checks[0].timeoutMs == 86_400_000
        return
    text = refusal(review(command(spelling)))
    assert "checks[0].timeoutMs" in text and fragment in text


LEADING_ZERO = "'010' has a leading zero, which YAML readers disagree on"


@pytest.mark.parametrize(
    ("source", "is_pack"),
    [
        (review(command(b"010")), False),
        (review(agent(b"010")), False),
        (review(command(b"[010]")), False),  # inside a flow list: refused wherever it stands
        (uses(b"010"), False),
        (pack(b"010"), True),
    ],
    ids=["command", "agent", "flow", "override", "pack"],
)
def test_a_leading_zero_integer_is_refused_in_every_document(source: bytes, is_pack: bool) -> None:
    """``010`` is 8 to the reference host (YAML 1.1) and 10 to YAML 1.2: same bytes, same manifestSha,
    another bound. Neither reading is safe to pick, so it is refused with one line saying why."""
    text = refusal(source, is_pack=is_pack)
    assert LEADING_ZERO in text and "write the number without leading zeros" in text
    assert len(text.splitlines()) == 1


def test_a_leading_zero_is_refused_by_check_and_by_run_as_real_processes(tmp_path: Path) -> None:
    repo = feature_repo(tmp_path)
    text = manifest("  - id: lint\n    kind: command\n    run: 'true'\n    timeoutMs: 010\n")
    repo.commit("review", **{"REVIEW.md": text})
    repo.commit("work", **{"src__a.txt": "a\n"})
    check = subprocess.run(
        [*AGENTREVIEW, "check"], cwd=repo.path, capture_output=True, text=True, timeout=60, env=repo.env
    )
    assert check.returncode == 3
    (line,) = check.stderr.splitlines()
    assert line.startswith(f"{repo.path / 'REVIEW.md'}:9: frontmatter: {LEADING_ZERO}")
    data = repo.run_json(expect=3)
    assert data["status"] == "failed" and LEADING_ZERO in data["error"]
    assert repo.ledger_files() == []


def test_the_manifest_sha_is_of_the_bytes_whatever_the_spelling(tmp_path: Path) -> None:
    """Accepting 1e3 for 1000 changes no digest: the attestation binds the file's exact bytes, so two
    spellings of one bound are two manifests, and nothing normalizes the bytes before hashing."""
    repo = feature_repo(tmp_path)
    shas = []
    for spelling in ("1e3", "1000"):
        text = "\ufeff" + manifest(f"  - id: lint\n    kind: command\n    run: 'true'\n    timeoutMs: {spelling}\n")
        repo.commit(f"review {spelling}", **{"REVIEW.md": text})
        data = repo.run_json(expect=0)
        assert data["attestation"]["manifestSha"] == hashlib.sha256((repo.path / "REVIEW.md").read_bytes()).hexdigest()
        assert data["attestation"]["lanes"][0]["status"] == "pass"
        shas.append(data["attestation"]["manifestSha"])
    assert shas[0] != shas[1]


# --------------------------------------------------------------------------- other scalars


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b"description: null\n", "description: is null (an empty value)"),
        (b"description:\n", "description: is null (an empty value)"),
        (b"name: ~\n", "name: is null (an empty value)"),
        (b"description: 2024-01-01\n", "'2024-01-01' is a date to YAML 1.1 readers"),
        (b"description: 2024-01-01 10:00:00\n", "is a date to YAML 1.1 readers"),
        (b"name: 0o17\n", "'0o17' is octal to YAML 1.2 and text to YAML 1.1"),
        (b"name: 1_000\n", "'1_000' is a number to YAML 1.1 readers"),
    ],
)
def test_what_the_reference_refuses_or_reads_otherwise_is_refused(line: bytes, fragment: str) -> None:
    """A null is no string on the reference host (its schema takes none), and a date is a Date there."""
    text = refusal(review(command(b"1000"), line))
    assert fragment in text and "REVIEW.md:5:" in text


def test_every_null_is_named_at_once() -> None:
    source = review(b"  - id: lint\n    kind: command\n    run: 'true'\n    cwd:\n", b"description: ~\n")
    with pytest.raises(ManifestError) as info:
        parse_review(source, Path("REVIEW.md"))
    assert [(p.location, p.line) for p in info.value.problems] == [("description", 5), ("checks[0].cwd", 10)]


@pytest.mark.parametrize("value", [b"'2024-01-01'", b'"010"', b"''", b"'1_000'"])
def test_quoted_text_is_text(value: bytes) -> None:
    parsed = parse_review(review(command(b"1000"), b"description: " + value + b"\n"))
    assert parsed.manifest.description == value.decode()[1:-1]


# --------------------------------------------------------------------------- the frontmatter's end


@pytest.mark.parametrize("tail", [b"...\n", b"...", b"...\n\n", b"...\n# a comment\n", b"...\r\n"])
def test_a_yaml_document_end_line_that_ends_the_file_closes_the_frontmatter(tail: bytes) -> None:
    """The reference host takes a file with no closing --- as all frontmatter, where YAML's own ``...``
    ends the document; only blank and comment lines may follow it there."""
    parsed = parse_review(review(command(b"1000"), end=tail))
    assert parsed.manifest.checks[0].id == "lint"


def test_a_document_end_line_followed_by_a_body_is_not_a_closed_frontmatter() -> None:
    """The reference host refuses this (a second YAML document); so does this host, with its own words."""
    text = refusal(review(command(b"1000"), end=b"...\n\nSome prose.\n"))
    assert "is not closed" in text


def test_a_document_end_line_before_the_closing_line_is_accepted() -> None:
    parsed = parse_review(review(command(b"1000"), end=b"...\n---\nbody\n"))
    assert parsed.body == "body\n"


def test_tab_indentation_stays_refused() -> None:
    """The reference host reads a tab-indented line as if it began at column 0 (``target: null`` and a
    top-level ``base``): accepting the file would mean something other than what it shows."""
    source = HEAD.replace(b"target: git-range\n", b"target:\n\tkind: git-range\n") + b"checks:\n" + command(b"1")
    text = refusal(source + b"---\n")
    assert "REVIEW.md:5: frontmatter: tab character used for indentation" in text


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (b"name: &n demo\ndescription: *n\n", "anchor '&n' is not allowed"),
        (b"name: demo\nname: other\n", "duplicate key 'name' (first defined on line 5)"),
    ],
)
def test_anchors_and_duplicate_keys_stay_refused(extra: bytes, fragment: str) -> None:
    """Kept for safety: an alias can multiply a small file into a huge value, and the reference
    refuses a duplicate key too (it would otherwise let two readers see two manifests)."""
    assert fragment in refusal(review(command(b"1"), extra))


# --------------------------------------------------------------------------- overrides


def test_overrides_that_cannot_apply_are_a_warning_from_check(tmp_path: Path) -> None:
    """The reference host ignores them silently; this host ignores them and says so, exit 0."""
    from https_git_server import init_repo

    pack_md = pack(b"1000").replace(b"checks:\n", b"checks:\n  - id: style\n    kind: command\n    run: 'true'\n")
    root = init_repo(tmp_path / "repo", {"packs/core/REVIEW.md": pack_md.decode()})
    overrides = "\n".join(
        [
            "  - pack: ./packs/core",
            "    as: core",
            "    checks: [lint]",
            "    overrides:",
            "      nope: {blocking: false}",
            "      style: {timeoutMs: 5}",
            "      lint: {preset: p, timeoutMs: 2e3}",
        ]
    )
    (root / "REVIEW.md").write_text(consumer(overrides, "types, core/lint"))
    env = {"AGENTREVIEW_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [*AGENTREVIEW, "check", "--json"], cwd=root, capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "overrides" in line]
    assert len(warnings) == 3, proc.stderr
    assert "uses[0].overrides.nope: ignored" in warnings[0] and "declares no check 'nope'" in warnings[0]
    assert "uses[0].overrides.style: ignored" in warnings[1] and "does not select 'style'" in warnings[1]
    assert "uses[0].overrides.lint: preset ignored" in warnings[2]
    view = json.loads(proc.stdout)
    assert [w for w in view["warnings"] if "overrides" in w] == [w.split("warning: ", 1)[1] for w in warnings]
    lanes = {lane["id"]: lane for lane in view["bindings"][0]["lanes"]}
    assert list(lanes) == ["types", "core/lint"] and lanes["core/lint"]["timeoutMs"] == 2000


def test_a_run_ignores_an_override_that_cannot_apply_and_says_so(tmp_path: Path) -> None:
    repo = feature_repo(tmp_path)
    repo.commit("pack", **{"packs__core__REVIEW.md": pack(b"1000").decode()})
    uses = "  - pack: ./packs/core\n    as: core\n    overrides:\n      nope: {blocking: false}"
    text = consumer(uses, "types, core/lint").replace("git-range", "{kind: git-range, base: main}")
    repo.commit("review", **{"REVIEW.md": text})
    repo.commit("work", **{"src__a.txt": "a\n"})
    data = repo.run_json(expect=0)
    assert [lane["id"] for lane in data["attestation"]["lanes"]] == ["types", "core/lint"]
    (warning,) = data["warnings"]
    assert warning.startswith("uses[0].overrides.nope: ignored") and "declares no check 'nope'" in warning
    shown = subprocess.run(
        [*AGENTREVIEW, "run"], cwd=repo.path, capture_output=True, text=True, timeout=60, env=repo.env
    )
    assert shown.returncode == 0 and f"warning: {warning}" in shown.stdout + shown.stderr
