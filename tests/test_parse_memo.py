"""The parse memo: a later parse of the same bytes is rebuilt from the home, and nothing stored there can
change an answer or fail a command (planted, corrupt, truncated, foreign, FIFO, symlink, oversized memos;
a read-only or full home; concurrent writers)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentreview.manifest import memo
from agentreview.manifest.parse import ManifestError, parse_pack, parse_review
from agentreview.model.manifest import AgentCheck, ReviewManifest
from agentreview.model.reader import ReadError, Spec, read, to_json

EXAMPLES = Path(__file__).parent / "fixtures" / "examples"
REVIEWS = ["push-gate.md", "two-bindings.md", "consumer.md"]
REVIEW = (EXAMPLES / "two-bindings.md").read_bytes()
PACK = (EXAMPLES / "pack.md").read_bytes()
PATH = Path("/repo/REVIEW.md")


def memos(home: Path) -> list[Path]:
    folder = home / "cache" / "parsed"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def only_memo(home: Path) -> Path:
    (path,) = memos(home)
    return path


def document(home: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(only_memo(home).read_bytes())
    return data


def rewrite(path: Path, doc: dict[str, Any], *, redigest: bool = True) -> None:
    if redigest:
        doc["payloadSha256"] = memo._payload_digest(doc["payload"])
    path.write_text(json.dumps(doc))


# --------------------------------------------------------------------------- hits


@pytest.mark.parametrize("name", REVIEWS)
def test_a_hit_is_equal_to_a_fresh_parse(tmp_path: Path, name: str) -> None:
    source = (EXAMPLES / name).read_bytes()
    fresh = parse_review(source, PATH)
    first = parse_review(source, PATH, home=tmp_path)
    assert first == fresh and len(memos(tmp_path)) == 1
    assert memo.recall_review(tmp_path, source) is not None  # served from the memo, not parsed again
    hit = parse_review(source, PATH, home=tmp_path)
    assert hit == fresh and hit.body == fresh.body and hit.bindings == fresh.bindings
    assert type(hit.manifest) is ReviewManifest and hit.manifest_sha == fresh.manifest_sha


def test_a_hit_keeps_the_order_of_every_mapping(tmp_path: Path) -> None:
    """Equality of mappings ignores order; the bindings' order is what `check` lists and what `run` picks from."""
    source = (EXAMPLES / "consumer.md").read_bytes().replace(b"  local:", b"  zeta:")
    fresh = parse_review(source, PATH)
    parse_review(source, PATH, home=tmp_path)
    hit = parse_review(source, PATH, home=tmp_path)
    assert list(hit.bindings) == list(fresh.bindings) == ["zeta", "ci"]
    assert list(hit.manifest.bindings or {}) == ["zeta", "ci"]
    assert json.dumps(to_json(hit.manifest)) == json.dumps(to_json(fresh.manifest))  # every mapping, in order


def test_a_hit_answers_with_the_callers_path_and_registry(tmp_path: Path) -> None:
    parse_review(REVIEW, PATH, home=tmp_path)
    registry = object()
    hit = parse_review(REVIEW, Path("/elsewhere/REVIEW.md"), registry=registry, home=tmp_path)  # type: ignore[arg-type]
    assert hit.path == Path("/elsewhere/REVIEW.md") and hit.registry is registry


def test_a_pack_hit_is_equal_to_a_fresh_parse(tmp_path: Path) -> None:
    fresh = parse_pack(PACK, PATH)
    assert parse_pack(PACK, PATH, home=tmp_path) == fresh
    doc = document(tmp_path)
    assert doc["kind"] == "review-pack" and memo.recall_pack(tmp_path, PACK) == fresh
    assert parse_pack(PACK, PATH, home=tmp_path) == fresh


def test_the_same_bytes_as_the_other_kind_are_another_memo(tmp_path: Path) -> None:
    assert memo.memo_key("review", REVIEW) != memo.memo_key("review-pack", REVIEW)
    parse_review(REVIEW, PATH, home=tmp_path)
    assert memo.recall_pack(tmp_path, REVIEW) is None


def test_a_hit_needs_neither_yaml_nor_pydantic(tmp_path: Path) -> None:
    manifest = tmp_path / "REVIEW.md"
    manifest.write_bytes((EXAMPLES / "consumer.md").read_bytes())
    program = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from agentreview.manifest.parse import parse_review_file
        from agentreview.model.reader import to_json
        parsed = parse_review_file(Path({str(manifest)!r}), home=Path({str(tmp_path / "home")!r}))
        heavy = sorted(m for m in ("pydantic", "pydantic_core", "yaml") if m in sys.modules)
        print(json.dumps(heavy))
        print(json.dumps([to_json(parsed.manifest), to_json(parsed.bindings), parsed.body]))
        """
    )

    def run() -> tuple[list[str], str]:
        proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
        heavy, parsed = proc.stdout.splitlines()
        return json.loads(heavy), parsed

    cold, warm = run(), run()
    assert cold[0] == ["yaml"]  # the first parse reads the YAML (and validates it, without pydantic: built-in kinds)
    assert warm[0] == []
    assert warm[1] == cold[1]  # the same records, every mapping in the same order


# --------------------------------------------------------------------------- what is never served


def test_changed_bytes_miss(tmp_path: Path) -> None:
    parse_review(REVIEW, PATH, home=tmp_path)
    changed = REVIEW.replace(b"timeoutMs: 1200000", b"timeoutMs: 1300000")
    assert parse_review(changed, PATH, home=tmp_path).manifest.checks[2].timeoutMs == 1_300_000
    assert len(memos(tmp_path)) == 2


def test_a_planted_memo_for_other_bytes_is_never_served(tmp_path: Path) -> None:
    other = REVIEW.replace(b"timeoutMs: 1200000", b"timeoutMs: 1300000")
    parse_review(other, PATH, home=tmp_path)
    planted = only_memo(tmp_path).read_bytes()
    target = memo.memo_path(tmp_path, memo.memo_key("review", REVIEW))
    target.write_bytes(planted)  # the other bytes' memo, under this key's name
    assert parse_review(REVIEW, PATH, home=tmp_path) == parse_review(REVIEW, PATH)
    doc = json.loads(planted)
    doc["key"] = target.stem  # the key made to match, the source digest still the other bytes'
    rewrite(target, doc)
    assert parse_review(REVIEW, PATH, home=tmp_path).manifest.checks[2].timeoutMs == 1_200_000
    assert json.loads(target.read_bytes())["sourceSha256"] != doc["sourceSha256"]  # rewritten by the full parse


def test_a_memo_of_other_code_is_never_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parse_review(REVIEW, PATH, home=tmp_path)
    monkeypatch.setattr(memo, "code_stamp", lambda: "another build of the parser")
    assert memo.recall_review(tmp_path, REVIEW) is None
    parse_review(REVIEW, PATH, home=tmp_path)
    assert len(memos(tmp_path)) == 2


def _tamper(doc: dict[str, Any], how: str) -> None:
    payload = doc["payload"]
    if how == "format":
        doc["format"] = "agentreview-parse-memo/0"
    elif how == "kind":
        doc["kind"] = "review-pack"
    elif how == "value without digest":
        payload["manifest"]["checks"][0]["run"] = "rm -rf /"
    elif how == "missing field":
        del payload["manifest"]["checks"][0]["run"]
    elif how == "extra field":
        payload["manifest"]["checks"][0]["shell"] = "bash"
    elif how == "string for integer":
        payload["manifest"]["checks"][0]["timeoutMs"] = "5"
    elif how == "boolean for integer":
        payload["manifest"]["checks"][0]["timeoutMs"] = True
    elif how == "integer for boolean":
        payload["manifest"]["checks"][0]["blocking"] = 1
    elif how == "unknown check kind":
        payload["manifest"]["checks"][0]["kind"] = "gauge"
    elif how == "literal out of range":
        payload["manifest"]["checks"][3]["blockOn"] = "critical"
    elif how == "bindings not a mapping":
        payload["bindings"] = ["local"]
    elif how == "extra payload member":
        payload["registry"] = "x"
    elif how == "payload a list":
        doc["payload"] = [payload]
    elif how == "document empty":
        doc.clear()
    else:  # pragma: no cover
        raise AssertionError(how)


TAMPERS = [
    "format",
    "kind",
    "value without digest",
    "missing field",
    "extra field",
    "string for integer",
    "boolean for integer",
    "integer for boolean",
    "unknown check kind",
    "literal out of range",
    "bindings not a mapping",
    "extra payload member",
    "payload a list",
    "document empty",
]


@pytest.mark.parametrize("how", TAMPERS)
def test_a_memo_of_the_wrong_shape_falls_back_and_is_rewritten(tmp_path: Path, how: str) -> None:
    fresh = parse_review(REVIEW, PATH)
    parse_review(REVIEW, PATH, home=tmp_path)
    path = only_memo(tmp_path)
    good = path.read_bytes()
    doc = json.loads(good)
    _tamper(doc, how)
    rewrite(path, doc, redigest=how != "value without digest" and isinstance(doc.get("payload"), dict))
    assert memo.recall_review(tmp_path, REVIEW) is None
    assert parse_review(REVIEW, PATH, home=tmp_path) == fresh
    assert path.read_bytes() == good  # the full parse wrote it again


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"\x00\xff garbage", b'{"format": "agentreview-parse-memo/1"', b"[" * 100_000 + b"]" * 100_000],
    ids=["empty", "truncated", "binary", "cut-off", "deeply nested"],
)
def test_a_corrupt_or_truncated_memo_falls_back(tmp_path: Path, content: bytes) -> None:
    fresh = parse_review(REVIEW, PATH)
    parse_review(REVIEW, PATH, home=tmp_path)
    path = only_memo(tmp_path)
    good = path.read_bytes()
    path.write_bytes(content if content != b"{" else good[: len(good) // 2])
    assert parse_review(REVIEW, PATH, home=tmp_path) == fresh
    assert path.read_bytes() == good


def test_an_oversized_memo_is_not_read(tmp_path: Path) -> None:
    parse_review(REVIEW, PATH, home=tmp_path)
    path = only_memo(tmp_path)
    good = path.read_bytes()
    path.write_bytes(good[:-1] + b" " * memo.MAX_MEMO_BYTES + b"}")  # still a valid document, but too large
    assert memo.recall_review(tmp_path, REVIEW) is None
    assert parse_review(REVIEW, PATH, home=tmp_path) == parse_review(REVIEW, PATH)
    assert path.read_bytes() == good


@pytest.mark.timeout(30)
def test_a_fifo_in_place_of_the_memo_never_hangs(tmp_path: Path) -> None:
    target = memo.memo_path(tmp_path, memo.memo_key("review", REVIEW))
    target.parent.mkdir(parents=True)
    os.mkfifo(target)
    assert parse_review(REVIEW, PATH, home=tmp_path) == parse_review(REVIEW, PATH)
    assert target.is_file() and not target.is_symlink()  # replaced by a real memo
    assert memo.recall_review(tmp_path, REVIEW) is not None


def test_a_symlinked_memo_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    parse_review(REVIEW, PATH, home=elsewhere)
    valid = only_memo(elsewhere)
    target = memo.memo_path(tmp_path / "home", valid.stem)
    target.parent.mkdir(parents=True)
    target.symlink_to(valid)  # even a link to a valid memo of the same bytes
    assert memo.recall_review(tmp_path / "home", REVIEW) is None
    assert parse_review(REVIEW, PATH, home=tmp_path / "home") == parse_review(REVIEW, PATH)
    assert not target.is_symlink() and valid.is_file()  # the link replaced, its target untouched


def test_errors_are_never_memoized_and_name_the_callers_path(tmp_path: Path) -> None:
    broken = REVIEW.replace(b"timeoutMs: 1200000", b'timeoutMs: "5"')
    for path in (Path("/a/REVIEW.md"), Path("/b/REVIEW.md")):
        with pytest.raises(ManifestError) as info:
            parse_review(broken, path, home=tmp_path)
        assert str(info.value).startswith(f"{path}:")
    assert memos(tmp_path) == []


def test_a_manifest_with_a_plugin_check_kind_is_never_memoized(tmp_path: Path) -> None:
    from test_check_kinds import GAUGE, review

    source = review("checks:\n  - id: size\n    kind: gauge\n    target: x\n")
    parsed = parse_review(source, PATH, registry=GAUGE, home=tmp_path)
    assert parsed.manifest.checks[0].kind == "gauge" and memos(tmp_path) == []


# --------------------------------------------------------------------------- the home


def test_an_unwritable_home_parses_as_usual(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    assert parse_review(REVIEW, PATH, home=tmp_path) == parse_review(REVIEW, PATH)
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o500)  # refused to anyone but root; then the cache file above covers it
    try:
        assert parse_review(REVIEW, PATH, home=readonly) == parse_review(REVIEW, PATH)
    finally:
        readonly.chmod(0o700)


def test_a_full_home_parses_as_usual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentreview.host import files

    def full(path: Path, data: bytes, *, mode: int = 0o600) -> Path:
        raise files.FileWriteError(path, OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(files, "atomic_write_bytes", full)
    assert parse_review(REVIEW, PATH, home=tmp_path) == parse_review(REVIEW, PATH)
    assert memos(tmp_path) == []


def test_old_memos_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "KEEP", 3)
    for minutes in range(6):
        parse_review(REVIEW.replace(b"timeoutMs: 1200000", f"timeoutMs: {minutes + 1}".encode()), PATH, home=tmp_path)
    assert len(memos(tmp_path)) == 3


def test_concurrent_writers_never_leave_a_broken_memo(tmp_path: Path) -> None:
    """Processes parse the same bytes at once, each forgetting the memo now and then: every parse
    answers the same, and what is left is one complete memo and no temporary file."""
    manifest = tmp_path / "REVIEW.md"
    manifest.write_bytes(REVIEW)
    home = tmp_path / "home"
    program = textwrap.dedent(
        f"""
        import contextlib, os
        from pathlib import Path
        from agentreview.manifest import memo
        from agentreview.manifest.parse import parse_review
        from agentreview.model.reader import to_json
        source = Path({str(manifest)!r}).read_bytes()
        home = Path({str(home)!r})
        expected = to_json(parse_review(source).manifest)
        target = memo.memo_path(home, memo.memo_key("review", source))
        for i in range(60):
            if i % 7 == 0:
                with contextlib.suppress(OSError):
                    os.unlink(target)
            assert to_json(parse_review(source, home=home).manifest) == expected
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", program], stderr=subprocess.PIPE) for _ in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    assert memo.recall_review(home, REVIEW) is not None
    assert sorted(p.name for p in (home / "cache" / "parsed").iterdir()) == [only_memo(home).name]


# --------------------------------------------------------------------------- the records as JSON


@pytest.mark.parametrize("name", [*REVIEWS, "pack.md"])
def test_records_round_trip_through_json(name: str) -> None:
    source = (EXAMPLES / name).read_bytes()
    parsed: Any = parse_pack(source) if name == "pack.md" else parse_review(source).manifest
    data = json.loads(json.dumps(to_json(parsed)))
    assert read(type(parsed), data) == parsed


def test_uses_is_stored_by_its_manifest_key() -> None:
    manifest = parse_review((EXAMPLES / "consumer.md").read_bytes()).manifest
    stored = to_json(manifest)["uses"][0]
    assert stored["as"] == "core" and "as_" not in stored  # a memo is a document the one reader reads


def test_a_memo_is_read_back_by_the_reader_that_refuses_what_a_parse_never_wrote() -> None:
    check = to_json(AgentCheck(id="a", kind="agent", preset="p", rubric="r.md"))
    assert read(AgentCheck, check) == AgentCheck(id="a", kind="agent", preset="p", rubric="r.md")
    for field, value in [("effects", True), ("effects", 0), ("fallbackPresets", "p"), ("description", 5)]:
        with pytest.raises(ReadError):
            read(AgentCheck, {**check, field: value})


def test_every_record_field_declares_its_meaning_in_the_one_declaration() -> None:
    import dataclasses

    from agentreview.model.manifest import FALSE_ONLY, RECORDS
    from agentreview.model.reader import Nullable, read, spec

    for record in RECORDS:
        for f in dataclasses.fields(record):
            assert isinstance(f.metadata["spec"], Spec), (record, f.name)
            assert read(Nullable(f.metadata["spec"]), None) is None
    assert read(FALSE_ONLY, False) is False
    for value in (0, 0.0, -0.0, "false", True):
        with pytest.raises(ReadError):
            read(FALSE_ONLY, value)

    @dataclasses.dataclass(frozen=True)
    class Undeclared:
        known: str = spec(FALSE_ONLY)
        unknown: str = ""

    with pytest.raises(TypeError, match="cannot read the field"):
        read(Undeclared, {"known": False})


# --------------------------------------------------------------------------- the commands parse through it


def test_check_parses_the_manifest_and_its_packs_through_the_memo(git_repo, capsys, agentreview_home: Path) -> None:
    from agentreview.cli.entry import main

    consumer = (
        b"---\nkind: review\nid: web\ntarget: git-range\nchecks:\n  - id: lint\n    kind: command\n    run: make lint\n"
        b"uses:\n  - pack: ./packs/core\n    as: core\n    preset: p\n"
        b"bindings:\n  ci:\n    checks: [lint, core/correctness]\n---\n"
    )
    root = git_repo(
        files={
            "REVIEW.md": consumer.decode(),
            "packs/core/REVIEW.md": PACK.decode(),
            "packs/core/rubrics/correctness.md": "# correctness\n",
            "packs/core/rubrics/security.md": "# security\n",
        }
    )

    def check() -> str:
        assert main(["check", "--cwd", str(root), "--json"]) == 0
        out: str = capsys.readouterr().out
        return out

    first = check()
    assert {json.loads(p.read_bytes())["kind"] for p in memos(agentreview_home)} == {"review", "review-pack"}
    assert memo.recall_review(agentreview_home, consumer) is not None and memo.recall_pack(agentreview_home, PACK)
    assert check() == first
    for path in memos(agentreview_home):
        path.write_bytes(b"{")  # corrupt both: the answer is the same, and the memos come back
    assert check() == first
    assert memo.recall_review(agentreview_home, consumer) is not None
