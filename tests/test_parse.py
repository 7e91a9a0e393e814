"""parse: the AIP-62 example manifests, strict shapes, every problem reported, hostile input refused fast."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentreview.manifest.parse import (
    MAX_MANIFEST_BYTES,
    GitPackRefError,
    ManifestError,
    ParsedReview,
    parse_git_pack_ref,
    parse_pack,
    parse_review,
    parse_review_file,
    read_manifest_bytes,
)
from agentreview.model.errors import EXIT_ERROR
from agentreview.model.manifest import AgentCheck, CommandCheck

EXAMPLES = Path(__file__).parent / "fixtures" / "examples"
SHA = "0123456789abcdef0123456789abcdef01234567"


def review(frontmatter: str, body: str = "") -> bytes:
    return f"---\n{frontmatter}---\n{body}".encode()


MINIMAL = """kind: review
id: demo
target: git-range
checks:
  - id: lint
    kind: command
    run: make lint
"""


def problems_of(source: bytes, path: Path | None = None, *, pack: bool = False) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        (parse_pack if pack else parse_review)(source, path)
    return info.value


# --------------------------------------------------------------------------- the examples


def test_push_gate_example() -> None:
    path = EXAMPLES / "push-gate.md"
    parsed = parse_review(path.read_bytes(), path)
    assert isinstance(parsed, ParsedReview)
    assert parsed.path == path.absolute()
    assert parsed.manifest.id == "agentik-studio"
    assert parsed.manifest.target.base == "origin/main"
    assert list(parsed.bindings) == ["local"]
    local = parsed.bindings["local"]
    assert local.on == "pre-push"
    assert local.checks == ["types", "test", "structure", "gate", "correctness"]
    checks = {c.id: c for c in parsed.manifest.checks}
    assert checks["types"].blocking is False and checks["types"].timeoutMs == 600_000
    assert checks["structure"].timeoutMs == 120_000
    assert isinstance(checks["correctness"], AgentCheck) and checks["correctness"].fallbackPresets == []
    assert parsed.body.startswith("\n# agentik-studio review manifest")
    assert parsed.source == path.read_bytes()


def test_two_bindings_example() -> None:
    parsed = parse_review_file(EXAMPLES / "two-bindings.md")
    assert list(parsed.bindings) == ["local", "ci"]
    assert parsed.bindings["local"].prepare == ["changeset"]
    assert parsed.bindings["ci"].checks == ["build", "correctness"]
    assert parsed.manifest.verdict.exportDir == ".reviews"
    changeset = next(c for c in parsed.manifest.checks if c.id == "changeset")
    assert isinstance(changeset, CommandCheck) and changeset.effects is True


def test_pack_example() -> None:
    pack = parse_pack((EXAMPLES / "pack.md").read_bytes())
    assert (pack.id, pack.version) == ("core", "1.0.0")
    assert [c.id for c in pack.checks] == ["correctness", "security"]
    assert all(c.preset is None for c in pack.checks)


def test_consumer_example_keeps_explicit_bindings_with_pack_refs() -> None:
    parsed = parse_review((EXAMPLES / "consumer.md").read_bytes())
    assert parsed.bindings["ci"].checks == ["types", "core/correctness", "core/security", "a11y/contrast"]
    core = parsed.manifest.uses[0]
    assert core.as_ == "core" and core.overrides["security"].blockOn == "medium"
    assert parsed.manifest.uses[1].allowCommands is False


def test_string_and_object_targets_mean_the_same() -> None:
    a = parse_review(review(MINIMAL))
    b = parse_review(review(MINIMAL.replace("target: git-range", "target: { kind: git-range }")))
    assert a.manifest.target == b.manifest.target
    assert a.manifest.target.base == "origin/main"
    assert list(a.bindings) == ["default"] and a.bindings["default"].checks == ["lint"]


def test_on_pre_push_stays_a_string_key() -> None:
    parsed = parse_review(review(MINIMAL + "bindings:\n  local:\n    on: pre-push\n    checks: [lint]\n"))
    assert parsed.bindings["local"].on == "pre-push"
    with pytest.raises(ManifestError) as info:
        parse_review(review(MINIMAL + "bindings:\n  local:\n    on: yes\n    checks: [lint]\n    quorum: on\n"))
    assert any(p.location == "bindings.local.quorum" for p in info.value.problems)


def test_manifest_sha_is_over_the_raw_bytes() -> None:
    from agentreview.model.digests import sha256_hex

    source = review(MINIMAL, "body\n")
    assert parse_review(source).manifest_sha == sha256_hex(source)


# --------------------------------------------------------------------------- kinds


def test_pack_given_to_parse_review_says_what_to_do() -> None:
    err = problems_of((EXAMPLES / "pack.md").read_bytes(), EXAMPLES / "pack.md")
    assert len(err.problems) == 1
    assert "found kind 'review-pack'" in str(err) and "uses:" in str(err)
    assert err.problems[0].line == 2


def test_review_given_to_parse_pack_says_what_to_do() -> None:
    err = problems_of((EXAMPLES / "two-bindings.md").read_bytes(), pack=True)
    assert "found kind 'review'" in str(err) and "agentreview run" in str(err)


def test_unknown_kind() -> None:
    err = problems_of(review(MINIMAL.replace("kind: review", "kind: workflow")))
    assert err.problems[0].location == "kind" and "'review'" in err.problems[0].message


# --------------------------------------------------------------------------- reading and splitting


def test_read_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="does not exist"):
        read_manifest_bytes(tmp_path / "REVIEW.md")


def test_read_directory(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="is a directory"):
        read_manifest_bytes(tmp_path)


@pytest.mark.parametrize("link", [False, True], ids=["fifo", "symlink-to-fifo"])
def test_read_fifo_is_refused_without_blocking(tmp_path: Path, link: bool) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    path = fifo
    if link:
        path = tmp_path / "REVIEW.md"
        path.symlink_to(fifo)
    with pytest.raises(ManifestError, match="is not a regular file") as info:
        read_manifest_bytes(path)
    assert info.value.problems[0].location == "file" and str(path) in str(info.value)


def test_read_below_a_file_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ManifestError, match="does not exist"):
        read_manifest_bytes(tmp_path / "file" / "REVIEW.md")


def test_read_symlink_loop_names_the_os_reason(tmp_path: Path) -> None:
    path = tmp_path / "REVIEW.md"
    path.symlink_to(path)
    with pytest.raises(ManifestError, match=r"file: cannot be read \(Too many levels of symbolic links\)"):
        read_manifest_bytes(path)


def test_read_too_large(tmp_path: Path) -> None:
    path = tmp_path / "REVIEW.md"
    path.write_bytes(review(MINIMAL) + b"x" * MAX_MANIFEST_BYTES)
    start = time.thread_time()  # this thread's CPU time: what reading costs, whatever the machine's load
    with pytest.raises(ManifestError, match="larger than"):
        read_manifest_bytes(path)
    assert time.thread_time() - start < 1.0


def test_read_exactly_the_limit_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "REVIEW.md"
    source = review(MINIMAL)
    path.write_bytes(source + b"x" * (MAX_MANIFEST_BYTES - len(source)))
    assert len(read_manifest_bytes(path)) == MAX_MANIFEST_BYTES


def test_read_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "REVIEW.md"
    path.write_bytes(review(MINIMAL) + b"\xff\xfe bad\n")
    with pytest.raises(ManifestError) as info:
        read_manifest_bytes(path)
    assert "not valid UTF-8" in str(info.value) and str(path) in str(info.value)
    assert info.value.exit_code == EXIT_ERROR


def test_parse_not_utf8_bytes() -> None:
    err = problems_of(b"---\nkind: review\nid: \xc3\x28\n---\n")
    assert "not valid UTF-8" in str(err) and err.problems[0].line == 3


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        (b"", "must start with a '---' line"),
        (b"# just markdown\n", "must start with a '---' line"),
        (b"kind: review\nid: x\n", "must start with a '---' line"),
        (b"---\nkind: review\n", "is not closed"),
        (b"---\n---\nbody\n", "missing or empty frontmatter"),
        (b"---\n# only a comment\n---\n", "missing or empty frontmatter"),
        (b"---\n{}\n---\n", "missing or empty frontmatter"),
        (b"---\n- a\n- b\n---\n", "must be a mapping of keys, got a list"),
        (b"---\njust text\n---\n", "must be a mapping of keys, got a str"),
    ],
)
def test_frontmatter_shape_errors(source: bytes, fragment: str) -> None:
    err = problems_of(source, Path("/repo/REVIEW.md"))
    assert fragment in str(err)
    assert str(err).startswith("/repo/REVIEW.md:")


def test_bom_and_crlf_are_handled() -> None:
    source = ("\ufeff" + review(MINIMAL, "body\r\n").decode().replace("\n", "\r\n")).encode()
    parsed = parse_review(source)
    assert parsed.manifest.id == "demo"
    assert parsed.source == source  # manifestSha still covers the BOM


def test_body_may_contain_more_dashes() -> None:
    parsed = parse_review(review(MINIMAL, "text\n---\nmore\n"))
    assert parsed.body == "text\n---\nmore\n"


# --------------------------------------------------------------------------- hostile input


DEEP = "x:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(80)) + "  " * 81 + "leaf: 1\n"


@pytest.mark.parametrize(
    ("frontmatter", "fragment"),
    [
        (
            "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b]\n",
            "anchor",
        ),
        (MINIMAL + "id: again\n", "duplicate key 'id' (first defined on line 3)"),
        (MINIMAL + "bindings:\n\tlocal: {checks: [lint]}\n", "tab character used for indentation"),
        (MINIMAL.replace("run: make lint", "run: make lint\n    timeoutMs: " + "9" * 40), "too large"),
        (MINIMAL.replace("run: make lint", "run: make lint\n    timeoutMs: .inf"), "infinity"),
        (DEEP, "nesting deeper than"),
        ("x: " + "[" * 100_000 + "\n", "nesting deeper than"),
        (MINIMAL + "<<: {name: x}\n", "merge key"),
        (MINIMAL + "name: !!python/object/apply:os.system [id]\n", "is not allowed"),
    ],
)
def test_hostile_frontmatter_is_refused_quickly(frontmatter: str, fragment: str) -> None:
    start = time.thread_time()  # this thread's CPU time: what parsing costs, whatever the machine's load
    err = problems_of(review(frontmatter), Path("/r/REVIEW.md"))
    assert time.thread_time() - start < 1.0
    assert fragment in str(err)
    assert err.problems[0].line is not None
    assert "\n" not in str(err)


def test_timeout_beyond_a_day_is_refused() -> None:
    err = problems_of(review(MINIMAL.replace("run: make lint", "run: make lint\n    timeoutMs: 99999999999")))
    assert err.problems[0].location == "checks[0].timeoutMs" and "at most 86400000" in err.problems[0].message


# --------------------------------------------------------------------------- schema messages


BAD = """kind: review
id: Bad_Id
target: git-range
colour: blue
checks:
  - id: lint
    kind: command
    run: make lint
    timeoutMs: "5"
    blocking: yes
  - id: review
    kind: agent
    preset: kimi
    rubric: r.md
    effects: true
  - id: strange
    kind: widget
  - id: lint
    kind: command
    run: "echo {nope}"
bindings:
  local:
    checks: [lint, ghost]
"""


def test_every_problem_is_reported_with_location_line_and_fix() -> None:
    path = Path("/repo/REVIEW.md")
    err = problems_of(review(BAD), path)
    by_location = {p.location: p for p in err.problems}
    assert set(by_location) >= {
        "id",
        "colour",
        "checks[0].timeoutMs",
        "checks[0].blocking",
        "checks[1].effects",
        "checks[2]",
        "checks[3].id",
        "checks[3].run",
        "bindings.local.checks[1]",
    }
    assert by_location["id"].line == 3
    assert by_location["colour"].line == 5 and "unknown key 'colour'" in by_location["colour"].message
    assert "allowed here: kind, id, name" in by_location["colour"].fix
    assert "YAML 1.2" in by_location["checks[0].blocking"].fix
    assert by_location["checks[0].timeoutMs"].message == "must be a whole number, got string '5'"
    assert by_location["checks[1].effects"].message == "'effects: true' is only supported on command checks"
    assert "more than once" in by_location["checks[3].id"].message
    assert "{nope}" in by_location["checks[3].run"].message
    assert "unknown check 'ghost'" in by_location["bindings.local.checks[1]"].message
    # one line for str(), all lines for render(), sorted by file line, each prefixed with the file
    assert str(err).startswith("/repo/REVIEW.md:3: id: ") and str(err).endswith(f"(and {len(err.problems) - 1} more)")
    lines = err.render().splitlines()
    assert len(lines) == len(err.problems) >= 9
    assert all(line.startswith("/repo/REVIEW.md:") for line in lines)
    assert [p.line for p in err.problems] == sorted(p.line or 0 for p in err.problems)
    assert all(p.fix for p in err.problems)


@pytest.mark.parametrize(
    ("change", "location", "fragment"),
    [
        (("run: make lint", "run: make lint\n    fallbackPresets: [a]"), "checks[0].fallbackPresets", "agent checks"),
        (("run: make lint", "run: ''"), "checks[0].run", "must not be empty"),
        (("run: make lint", "run: make lint\n    timeoutMs: 0"), "checks[0].timeoutMs", "greater than 0"),
        (("run: make lint", "run: make lint\n    timeoutMs: 1.5"), "checks[0].timeoutMs", "whole number"),
        (("run: make lint", "run: [make, lint]"), "checks[0].run", "must be a string"),
        (("target: git-range", "target: svn-range"), "target", "must be 'git-range' or a mapping"),
        (("target: git-range", "target: {kind: git-range, base: ''}"), "target.base", "must not be empty"),
        (("    kind: command\n", ""), "checks[0]", "has no 'kind'"),
        (("id: demo", "id: " + "a" * 65), "id", "is longer than 64"),
    ],
)
def test_schema_messages(change: tuple[str, str], location: str, fragment: str) -> None:
    err = problems_of(review(MINIMAL.replace(*change)))
    problem = next(p for p in err.problems if p.location == location)
    assert fragment in problem.message or fragment in problem.fix


def test_checks_must_not_be_empty_and_must_be_a_list() -> None:
    err = problems_of(review("kind: review\nid: x\ntarget: git-range\nchecks: []\n"))
    assert err.problems[0].location == "checks" and "at least one" in err.problems[0].message
    err = problems_of(review("kind: review\nid: x\ntarget: git-range\nchecks: {a: 1}\n"))
    assert "must be a list" in err.problems[0].message


def test_booleans_and_strings_are_strict() -> None:
    err = problems_of(review(MINIMAL.replace("run: make lint", "run: make lint\n    blocking: 'false'")))
    assert err.problems[0].message == "must be true or false, got string 'false'"
    err = problems_of(review(MINIMAL.replace("id: demo", "id: 5")))
    assert err.problems[0].message == "must be a string, got int 5"


def test_newline_in_an_id_is_refused() -> None:
    err = problems_of(review(MINIMAL.replace("id: demo", 'id: "demo\\n"')))
    assert err.problems[0].location == "id"


# --------------------------------------------------------------------------- git pack refs


def test_parse_git_pack_ref_splits_at_the_first_hash() -> None:
    assert parse_git_pack_ref(f"git+https://example.com/org/pack.git#{SHA}") == (
        "https://example.com/org/pack.git",
        SHA,
    )


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [
        (f"git+ssh://example.com/pack#{SHA}", "must use git+https://"),
        (f"git+http://example.com/pack#{SHA}", "must use git+https://"),
        (f"git+file:///tmp/pack#{SHA}", "must use git+https://"),
        (f"git+ext::sh -c touch% /tmp/pwned#{SHA}", "must use git+https://"),
        ("git+https://example.com/pack#main", "full 40-hex commit sha"),
        ("git+https://example.com/pack#0123456", "full 40-hex commit sha"),
        ("git+https://example.com/pack", "full 40-hex commit sha"),
        (f"git+https://example.com/pack#{SHA.upper()}", "full 40-hex commit sha"),
        (f"git+https://host/a#b/pack.git#{SHA}", "the pin starts at the first '#'"),
        (f"git+https://host/a b#{SHA}", "may not contain whitespace"),
        (f"git+https://example.com/pack#{SHA}\n", "full 40-hex commit sha"),
    ],
)
def test_bad_git_pack_refs(ref: str, fragment: str) -> None:
    with pytest.raises(GitPackRefError, match="git pack ref") as info:
        parse_git_pack_ref(ref)
    assert fragment in str(info.value)
    uses = f"uses:\n  - pack: {_yaml_quote(ref)}\n    as: core\nbindings:\n  b: {{checks: [lint, core/x]}}\n"
    err = problems_of(review(MINIMAL + uses))
    problem = next(p for p in err.problems if p.location == "uses[0].pack")
    assert problem.message.startswith("git pack ref") and fragment in problem.message


def _yaml_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') + '"'


@pytest.mark.parametrize("ref", ["has space", "./ok\n", ""])
def test_bad_non_git_pack_refs(ref: str) -> None:
    uses = f"uses:\n  - pack: {_yaml_quote(ref)}\n    as: core\nbindings:\n  b: {{checks: [lint]}}\n"
    err = problems_of(review(MINIMAL + uses))
    assert any(p.location == "uses[0].pack" for p in err.problems)


@pytest.mark.parametrize(
    "ref", ["@scope/pack", "./packs/core", "../shared/pack", "/abs/pack", f"git+https://h/p#{SHA}"]
)
def test_good_pack_refs(ref: str) -> None:
    uses = f"uses:\n  - pack: {_yaml_quote(ref)}\n    as: core\nbindings:\n  b: {{checks: [lint, core/x]}}\n"
    assert parse_review(review(MINIMAL + uses)).manifest.uses[0].pack == ref


# --------------------------------------------------------------------------- packs


PACK = """kind: review-pack
id: core
version: 1.2.3-rc.1+build.5
checks:
  - id: correctness
    kind: agent
    rubric: ./rubrics/correctness.md
  - id: lint
    kind: command
    run: make lint {base}..{head}
"""


def test_pack_parses_with_optional_preset() -> None:
    pack = parse_pack(review(PACK))
    assert pack.version == "1.2.3-rc.1+build.5"
    assert pack.checks[0].timeoutMs == 900_000 and pack.checks[1].timeoutMs == 600_000


@pytest.mark.parametrize(
    ("extra", "location", "fragment"),
    [
        ("target: git-range\n", "target", "a review pack has no 'target'"),
        ("bindings: {}\n", "bindings", "a review pack has no 'bindings'"),
        ("uses: []\n", "uses", "a review pack has no 'uses'"),
        ("name: x\n", "name", "a review pack has no 'name'"),
    ],
)
def test_pack_refuses_consumer_keys(extra: str, location: str, fragment: str) -> None:
    err = problems_of(review(PACK + extra), pack=True)
    assert any(p.location == location and fragment in p.message for p in err.problems)


def test_pack_check_rules() -> None:
    source = PACK.replace("version: 1.2.3-rc.1+build.5", "version: v1") + (
        "  - id: lint\n    kind: command\n    run: x {oops}\n    effects: true\n"
        "  - id: extra\n    kind: agent\n    rubric: r.md\n    fallbackPresets: [a]\n"
    )
    err = problems_of(review(source), pack=True)
    by_location = {p.location: p for p in err.problems}
    assert "not a semver version" in by_location["version"].message
    assert "more than once" in by_location["checks[2].id"].message
    assert "may not set 'effects: true'" in by_location["checks[2].effects"].message
    assert "unknown key 'fallbackPresets'" in by_location["checks[3].fallbackPresets"].message
    assert sum("more than once" in p.message for p in err.problems) == 1


AGENT_EFFECTS = MINIMAL + "  - id: rev\n    kind: agent\n    preset: p\n    rubric: r.md\n"


@pytest.mark.parametrize(
    ("written", "shown"),
    [("0", "int 0"), ("0.0", "float 0.0"), ("-0.0", "float -0.0"), ('"false"', "string 'false'"), ("1", "int 1")],
)
def test_effects_that_only_equals_false_is_refused(written: str, shown: str) -> None:
    # YAML 0, 0.0 and -0.0 equal False: a plain Literal[False] would read them as false
    effects = f"\n    effects: {written}"
    cases = [  # (source, a pack?, where, line, the fix names)
        (AGENT_EFFECTS.rstrip("\n") + effects + "\n", False, "checks[1].effects", 13, "agent check"),
        (PACK.rstrip("\n") + effects + "\n", True, "checks[1].effects", 12, "pack check"),
        (PACK.replace("correctness.md", "correctness.md" + effects), True, "checks[0].effects", 9, "agent check"),
    ]
    for source, pack, location, line, fix in cases:
        err = problems_of(review(source), Path("/repo/REVIEW.md"), pack=pack)
        (problem,) = err.problems
        assert (problem.location, problem.line) == (location, line)
        assert problem.message == f"must be false or left out, got {shown}"
        assert fix in problem.fix
        assert str(err) == f"/repo/REVIEW.md:{line}: {location}: {problem.message}; fix: {problem.fix}"
        assert "\n" not in str(err)


def test_effects_false_or_left_out_is_accepted() -> None:
    for source in (AGENT_EFFECTS, AGENT_EFFECTS + "    effects: false\n"):
        check = parse_review(review(source)).manifest.checks[1]
        assert isinstance(check, AgentCheck) and check.effects is False
    for source in (PACK, PACK + "    effects: false\n", PACK.replace("kind: agent", "kind: agent\n    effects: false")):
        assert all(check.effects is False for check in parse_pack(review(source)).checks)


def test_pack_unbound_placeholder() -> None:
    err = problems_of(review(PACK.replace("{head}", "{tip}")), pack=True)
    assert err.problems[0].location == "checks[1].run" and "{tip}" in err.problems[0].message


def test_problem_list_is_capped_but_counted() -> None:
    from agentreview.manifest.parse import MAX_PROBLEMS

    source = review(MINIMAL + "".join(f"extra{i}: 1\n" for i in range(MAX_PROBLEMS + 50)))
    err = problems_of(source)
    assert len(err.problems) == MAX_PROBLEMS + 1
    assert err.problems[-1].message == "50 more problems not listed"
    assert str(err).endswith(f"(and {MAX_PROBLEMS} more)")


def test_uses_accepts_only_the_as_spelling() -> None:
    uses = "uses:\n  - {pack: ./p, as_: core}\nbindings:\n  b: {checks: [lint]}\n"
    err = problems_of(review(MINIMAL + uses))
    assert "unknown key 'as_'" in only_message(err, "uses[0].as_")


def only_message(err: ManifestError, location: str) -> str:
    return next(p.message for p in err.problems if p.location == location)
