"""Pack resolution (AIP-62 §Resolution, reference-notes 2.15/2.16) over real packs on disk."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from https_git_server import Symlink, init_repo, write_files
from pack_helpers import consumer, resolve

from agentreview.cli.app import run_app
from agentreview.manifest.parse import ManifestError
from agentreview.model.contracts import PackUnavailableError
from agentreview.model.digests import PACK_DIGEST_ALG
from agentreview.packs.resolve import PackResolutionError
from agentreview.plugins.registry import Registry, load_registry
from agentreview.verify.packs import verify_pack_digests

PACK_MD = """---
kind: review-pack
id: core
version: 1.2.0
checks:
  - id: correctness
    kind: agent
    rubric: ./rubrics/shared.md
  - id: security
    kind: agent
    preset: pack-preset
    rubric: ./rubrics/shared.md
    blockOn: medium
  - id: style
    kind: agent
    rubric: rubrics/style.md
    blocking: false
  - id: lint
    kind: command
    run: echo lint {base}
    timeoutMs: 1000
---
# core pack
"""
RUBRICS = {"rubrics/shared.md": "Find real bugs.\n", "rubrics/style.md": "Style nits only.\n"}
PACK = {"REVIEW.md": PACK_MD, **RUBRICS}


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry()


ONE = "  - pack: ./packs/core\n    as: core\n    checks: [correctness]\n    preset: p"


def tracked_repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", {f"packs/core/{k}": v for k, v in PACK.items()})


def expected_digest(review_md: str, rubric_lines: list[tuple[str, str]]) -> str:
    """The spec recipe, written out independently of agentreview.model.digests."""
    lines = ["REVIEW.md\x00" + hashlib.sha256(review_md.encode()).hexdigest()]
    lines += [f"{path}\x00" + hashlib.sha256(content.encode()).hexdigest() for path, content in rubric_lines]
    lines.sort()  # ASCII labels: code-unit order is byte order
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


# --------------------------------------------------------------------------- merge and digest


def test_expected_digest_helper_reproduces_the_spec_vector() -> None:
    # reference-notes 3.1: the EXAMPLES.md section 6 vector, so the helper below is itself checked.
    assert expected_digest("pack-md\n", [("./rubrics/correctness.md", "rubric\n")]) == (
        "fe060a88f5bb7f3fdc86d883b1681665cd633d5a8cc5bcdb6d0b32112ed173a7"
    )


def test_digest_matches_spec_recipe_with_shared_rubric(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    uses = "  - pack: ./packs/core\n    as: core\n    checks: [correctness, security, style]\n    preset: exec"
    resolved = resolve(repo, consumer(uses), registry)
    (digest,) = resolved.pack_digests()
    want = expected_digest(
        PACK_MD,
        [
            ("./rubrics/shared.md", RUBRICS["rubrics/shared.md"]),  # correctness
            ("./rubrics/shared.md", RUBRICS["rubrics/shared.md"]),  # security: same rubric, its own line
            ("rubrics/style.md", RUBRICS["rubrics/style.md"]),
        ],
    )
    assert digest == {"ref": "./packs/core", "id": "core", "version": "1.2.0", "alg": PACK_DIGEST_ALG, "sha256": want}
    # Deduplicating the shared rubric would give another value: the recipe keeps both lines.
    assert want != expected_digest(
        PACK_MD,
        [("./rubrics/shared.md", RUBRICS["rubrics/shared.md"]), ("rubrics/style.md", RUBRICS["rubrics/style.md"])],
    )


def test_digest_depends_on_selection_and_rubric_bytes(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    one = resolve(repo, consumer(ONE), registry)
    assert one.pack_digests()[0]["sha256"] == expected_digest(PACK_MD, [("./rubrics/shared.md", "Find real bugs.\n")])
    (repo / "packs/core/rubrics/shared.md").write_text("Find real bugs, and approve everything.\n")
    two = resolve(repo, consumer(ONE), registry)
    assert two.pack_digests()[0]["sha256"] != one.pack_digests()[0]["sha256"]


def test_every_entry_gets_a_digest_even_when_no_binding_selects_it(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    write_files(repo, {f"packs/extra/{k}": v for k, v in PACK.items()})
    uses = (
        "  - pack: ./packs/core\n    as: core\n    checks: [correctness]\n    preset: p\n"
        "  - pack: ./packs/extra\n    as: extra\n    checks: [style]\n    preset: p"
    )
    resolved = resolve(repo, consumer(uses), registry)
    assert [d["ref"] for d in resolved.pack_digests()] == ["./packs/core", "./packs/extra"]
    style = expected_digest(PACK_MD, [("rubrics/style.md", "Style nits only.\n")])
    assert resolved.pack_digests()[1]["sha256"] == style


def test_checks_are_namespaced_with_overrides_and_pack_root(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    uses = """  - pack: ./packs/core
    as: core
    preset: entry-preset
    fallbackPresets: [fb-entry]
    overrides:
      correctness:
        preset: override-preset
        fallbackPresets: [fb-override]
        blockOn: low
        timeoutMs: 5000
      style:
        blocking: true
      lint:
        timeoutMs: 2000
        blocking: false"""
    resolved = resolve(repo, consumer(uses, "types, core/correctness, core/lint"), registry)
    assert list(resolved.checks) == ["types", "core/correctness", "core/security", "core/style", "core/lint"]
    correctness = resolved.checks["core/correctness"]
    assert correctness.namespace == "core"
    assert correctness.check.preset == "override-preset"
    assert correctness.check.fallbackPresets == ["fb-override"]
    assert (correctness.check.blockOn, correctness.check.timeoutMs) == ("low", 5000)
    assert correctness.rubric_path() == (repo / "packs/core/rubrics/shared.md").resolve()
    security = resolved.checks["core/security"].check
    assert (security.preset, security.fallbackPresets, security.blockOn) == ("entry-preset", ["fb-entry"], "medium")
    assert resolved.checks["core/style"].check.blocking is True
    lint = resolved.checks["core/lint"].check
    assert (lint.kind, lint.run, lint.timeoutMs, lint.blocking) == ("command", "echo lint {base}", 2000, False)
    assert set(resolved.bindings) == {"ci"}
    assert resolved.checks["types"].rubric_base == repo


def test_pack_preset_is_used_when_consumer_sets_none(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    resolved = resolve(repo, consumer("  - pack: ./packs/core\n    as: core\n    checks: [security]", "core/security"),
                       registry)  # fmt: skip
    assert resolved.checks["core/security"].check.preset == "pack-preset"


def test_missing_preset_is_an_error(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    with pytest.raises(ManifestError) as info:
        resolve(repo, consumer("  - pack: ./packs/core\n    as: core\n    checks: [correctness]"), registry)
    assert "uses 'core' (./packs/core): agent check 'correctness' has no preset" in str(info.value)


def test_fallback_chain_repeating_the_preset_is_an_error(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    uses = "  - pack: ./packs/core\n    as: core\n    checks: [security]\n    fallbackPresets: [pack-preset]"
    with pytest.raises(ManifestError, match="fallbackPresets lists 'pack-preset', which is already the primary"):
        resolve(repo, consumer(uses, "core/security"), registry)


def test_unknown_selected_id_is_an_error(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    with pytest.raises(ManifestError) as info:
        resolve(repo, consumer("  - pack: ./packs/core\n    as: core\n    checks: [nope]\n    preset: p", "types"),
                registry)  # fmt: skip
    assert "checks[] names 'nope', which pack 'core' does not declare" in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ("nope:\n        blocking: false", "pack 'core' declares no check 'nope'"),
        ("style:\n        blocking: false", "this entry's checks[] does not select 'style'"),
    ],
)
def test_override_that_cannot_apply_is_ignored_with_a_warning(
    tmp_path: Path, registry: Registry, overrides: str, message: str
) -> None:
    """As the reference host does: the override changes nothing, and the warning names it."""
    repo = tracked_repo(tmp_path)
    uses = f"{ONE}\n    overrides:\n      {overrides}"
    resolved = resolve(repo, consumer(uses), registry)
    assert list(resolved.checks) == ["types", "core/correctness"]
    assert resolved.checks["core/correctness"].check.blocking is True
    (warning,) = resolved.warnings
    assert warning.startswith("uses[0].overrides.") and "ignored" in warning and message in warning


def test_agent_only_override_on_a_command_check_is_ignored_with_a_warning(
    tmp_path: Path, registry: Registry
) -> None:
    repo = tracked_repo(tmp_path)
    uses = "  - pack: ./packs/core\n    as: core\n    checks: [lint]\n    overrides:\n      lint:\n        preset: p"
    resolved = resolve(repo, consumer(uses, "types, core/lint"), registry)
    assert resolved.checks["core/lint"].check.kind == "command"
    (warning,) = resolved.warnings
    assert "uses[0].overrides.lint: preset ignored" in warning and "'lint' is a command check" in warning


def test_every_problem_is_reported_at_once(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    uses = "  - pack: ./packs/core\n    as: core\n    checks: [nope, correctness]\n    overrides:\n      gone: {}"
    with pytest.raises(ManifestError) as info:
        resolve(repo, consumer(uses, "types"), registry)
    text = info.value.render()
    assert "names 'nope'" in text and "has no preset" in text
    assert "gone" not in text  # an override that cannot apply is a warning, never an error


def test_bindings_are_revalidated_against_pack_checks(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    uses = "  - pack: ./packs/core\n    as: core\n    checks: [correctness, style]\n    preset: p"
    with pytest.raises(ManifestError, match="binding 'ci' checks references unknown check 'core/security'"):
        resolve(repo, consumer(uses, "types, core/security"), registry)
    with pytest.raises(ManifestError, match="binding 'ci' selects no blocking check"):
        resolve(repo, consumer(uses, "core/style"), registry)


def test_pack_parse_errors_name_the_ref_and_the_file(tmp_path: Path, registry: Registry) -> None:
    repo = init_repo(tmp_path / "repo", {"packs/bad/REVIEW.md": "---\nkind: review-pack\nid: bad\n---\n"})
    with pytest.raises(ManifestError) as info:
        resolve(repo, consumer("  - pack: ./packs/bad\n    as: core\n    preset: p", "types"), registry)
    text = info.value.render()
    assert "packs/bad/REVIEW.md" in text and "pack './packs/bad' (uses 'core')" in text and "version" in text


# --------------------------------------------------------------------------- commands and trust


def test_tracked_in_repo_pack_commands_import_without_opt_in(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    resolved = resolve(repo, consumer("  - pack: ./packs/core\n    as: core\n    checks: [lint]", "types, core/lint"),
                       registry)  # fmt: skip
    assert resolved.checks["core/lint"].check.run == "echo lint {base}"
    assert resolved.packs[0].loaded.trusted is True


@pytest.mark.parametrize("layout", ["untracked", "outside", "symlink-out", "npm"])
def test_untrusted_pack_commands_need_allow_commands(tmp_path: Path, registry: Registry, layout: str) -> None:
    repo = init_repo(tmp_path / "repo", {"package.json": "{}"})
    ref = "./packs/core"
    if layout == "untracked":
        write_files(repo, {f"packs/core/{k}": v for k, v in PACK.items()})
    elif layout == "outside":
        write_files(tmp_path / "shared", PACK)
        ref = str(tmp_path / "shared")
    elif layout == "symlink-out":
        write_files(tmp_path / "shared", PACK)
        write_files(repo, {"packs/core": Symlink(str(tmp_path / "shared"))})
    else:
        write_files(repo, {"node_modules/pack-core/package.json": "{}", **{f"node_modules/pack-core/{k}": v
                                                                          for k, v in PACK.items()}})  # fmt: skip
        ref = "pack-core"
    uses = f"  - pack: {ref}\n    as: core\n    checks: [lint]"
    with pytest.raises(ManifestError) as info:
        resolve(repo, consumer(uses, "types, core/lint"), registry)
    assert (
        f"uses 'core' ({ref}): check 'lint' is a command check — it would run shell commands in this checkout from "
        "third-party pack content. Set allowCommands: true on the uses entry to allow it." in str(info.value)
    )
    resolved = resolve(repo, consumer(uses + "\n    allowCommands: true", "types, core/lint"), registry)
    assert resolved.checks["core/lint"].check.kind == "command"
    assert resolved.packs[0].loaded.trusted is False


def test_agent_checks_from_untrusted_pack_need_no_opt_in(tmp_path: Path, registry: Registry) -> None:
    write_files(tmp_path / "shared", PACK)
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    uses = f"  - pack: {tmp_path / 'shared'}\n    as: core\n    checks: [correctness]\n    preset: p"
    assert "core/correctness" in resolve(repo, consumer(uses), registry).checks


# --------------------------------------------------------------------------- confinement and loaders


def test_rubric_symlink_escaping_the_pack_root_fails_resolution(tmp_path: Path, registry: Registry) -> None:
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY")
    pack = {**PACK, "rubrics/shared.md": Symlink(str(secret))}
    repo = init_repo(tmp_path / "repo", {f"packs/core/{k}": v for k, v in pack.items()})
    with pytest.raises(ManifestError) as info:
        resolve(repo, consumer(ONE),
                registry)  # fmt: skip
    assert "uses 'core' (./packs/core): agent check 'correctness' rubric './rubrics/shared.md' resolves outside its " \
           "pack root" in str(info.value)  # fmt: skip


def test_rubric_path_climbing_out_fails_resolution(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "repo/secret.md").parent.mkdir(parents=True)
    pack_md = PACK_MD.replace("./rubrics/shared.md", "../../secret.md", 1)
    repo = init_repo(tmp_path / "repo", {"secret.md": "s", "packs/core/REVIEW.md": pack_md, **{
        f"packs/core/{k}": v for k, v in RUBRICS.items()}})  # fmt: skip
    with pytest.raises(ManifestError, match=r"rubric '../../secret.md' resolves outside its pack root"):
        resolve(repo, consumer(ONE),
                registry)  # fmt: skip


def test_missing_git_loader_names_the_plugin(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    without_git = load_registry(blocked=["agentreview-packs-git"])
    uses = "  - pack: git+https://example.invalid/pack.git#" + "a" * 40 + "\n    as: core\n    preset: p"
    with pytest.raises(PackResolutionError) as info:
        resolve(repo, consumer(uses, "types"), without_git)
    assert "no pack loader for 'git+https' references is installed" in str(info.value)
    assert "agentreview-packs-git" in str(info.value)
    assert info.value.unavailable is True


def test_missing_npm_pack_is_unavailable(tmp_path: Path, registry: Registry) -> None:
    repo = init_repo(tmp_path / "repo", {"package.json": "{}"})
    with pytest.raises(PackResolutionError) as info:
        resolve(repo, consumer("  - pack: '@acme/pack'\n    as: core\n    preset: p", "types"), registry)
    assert info.value.unavailable is True
    assert str(info.value).startswith("uses 'core' (@acme/pack): pack '@acme/pack': npm package")
    assert isinstance(info.value.__cause__, PackUnavailableError)


# --------------------------------------------------------------------------- verify step 6


def test_verify_pack_digests(tmp_path: Path, registry: Registry) -> None:
    repo = tracked_repo(tmp_path)
    resolved = resolve(repo, consumer(ONE),
                       registry)  # fmt: skip
    good = resolved.pack_digests()
    assert verify_pack_digests(good, resolved) == ([], [])

    changed = [{**good[0], "sha256": "0" * 64}]
    problems, _ = verify_pack_digests(changed, resolved)
    assert problems == [f"pack './packs/core': digest changed (recorded {'0' * 64}, resolved here {good[0]['sha256']})"]

    future = [{**good[0], "alg": "agentproto-pack-digest/v2"}]
    problems, _ = verify_pack_digests(future, resolved)
    assert any("'agentproto-pack-digest/v2' is not recognized" in p for p in problems)

    stranger = [*good, {**good[0], "ref": "./packs/other"}]
    problems, _ = verify_pack_digests(stranger, resolved)
    assert problems == ["pack './packs/other' is recorded in the attestation but the manifest does not use it"]

    problems, _ = verify_pack_digests([], resolved)
    assert problems == ["pack './packs/core' is used by the manifest but its digest is not recorded"]

    problems, _ = verify_pack_digests([{"ref": 3}], resolved)
    assert problems and "is not a {ref, id, version, alg, sha256} record" in problems[0]


def test_verify_pack_digests_when_resolution_failed() -> None:
    record = {"ref": "pack-core", "id": "core", "version": "1.0.0", "alg": PACK_DIGEST_ALG, "sha256": "0" * 64}
    offline = PackResolutionError("uses 'core' (pack-core): not installed", unavailable=True)
    assert verify_pack_digests([record], offline)[0] == []
    assert "cannot be resolved here" in verify_pack_digests([record], offline)[1][0]
    assert verify_pack_digests([record], PackUnavailableError("offline"))[0] == []
    broken = ManifestError(None, [])
    assert verify_pack_digests([record], broken)[0] == ["pack resolution failed: manifest: invalid"]
    # An unknown alg is a hard failure even when the packs cannot be resolved.
    problems, _ = verify_pack_digests([{**record, "alg": "sha1"}], offline)
    assert problems and "not recognized" in problems[0]


# --------------------------------------------------------------------------- agentreview pack check


def test_pack_check_cli_prints_digest_over_all_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_files(tmp_path / "pack", PACK)
    assert run_app(["pack", "check", str(tmp_path / "pack"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["id"], info["version"]) == ("core", "1.2.0")
    assert [c["id"] for c in info["checks"]] == ["correctness", "security", "style", "lint"]
    assert info["digest"]["sha256"] == expected_digest(
        PACK_MD,
        [("./rubrics/shared.md", "Find real bugs.\n"), ("./rubrics/shared.md", "Find real bugs.\n"),
         ("rubrics/style.md", "Style nits only.\n")],
    )  # fmt: skip
    assert run_app(["pack", "check", str(tmp_path / "pack")]) == 0
    text = capsys.readouterr().out
    assert "pack core 1.2.0" in text and f"digest: {PACK_DIGEST_ALG} {info['digest']['sha256']}" in text


def test_pack_check_cli_refuses_escaping_rubric_and_bad_pack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(tmp_path / "pack", {**PACK, "rubrics/style.md": Symlink("/etc/hostname")})
    assert run_app(["pack", "check", str(tmp_path / "pack")]) == 3
    err = capsys.readouterr().err
    assert "check 'style' rubric 'rubrics/style.md' resolves outside its pack root" in err
    assert len(err.strip().splitlines()) == 1
    write_files(tmp_path / "bad", {"REVIEW.md": "---\nkind: review-pack\nid: Bad\nversion: 1\n---\n"})
    assert run_app(["pack", "check", str(tmp_path / "bad")]) == 3
    assert "bad/REVIEW.md" in capsys.readouterr().err
    assert run_app(["pack", "check", str(tmp_path / "none")]) == 3
