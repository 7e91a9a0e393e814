"""Attacks on ``agentreview verify`` by a contributor who controls the reviewed branch.

Each test builds the forged state for real (git repository, ssh-keygen signatures,
symbolic links) and asserts that the CI gate refuses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture: fixtures)
    PRINCIPAL,
    Key,
    Repo,
    git,
    isolated_env,
    keys_fixture,
    sign,
    signers_line,
)


@pytest.fixture
def trusted_repo(tmp_path: Path, keys: dict[str, Key]) -> Repo:
    """``main`` trusts only the organisation's key in .agentproto/allowed_signers."""
    return Repo(tmp_path / "repo", files={".agentproto/allowed_signers": signers_line(keys["trusted"])})


def _planted(tmp_path: Path, key: Key) -> Path:
    # Stands in for a file the attacker can place outside the checkout, e.g. in the
    # git pack cache that verify itself fills from a pack URL the change names.
    planted = tmp_path / "elsewhere" / "allowed_signers"
    planted.parent.mkdir(parents=True)
    planted.write_text(signers_line(key))
    return planted


def test_allowed_signers_symlinked_out_of_the_checkout_cannot_vouch(
    trusted_repo: Repo, keys: dict[str, Key], tmp_path: Path
) -> None:
    repo = trusted_repo
    link = repo.root / ".agentproto" / "allowed_signers"
    link.unlink()
    link.symlink_to(_planted(tmp_path, keys["other"]))
    repo.head = repo.commit("trust my key", {})
    repo.export(sign(repo.attestation(), keys["other"]))
    result = repo.verify(require_signed=True, base="main")
    assert result.exit_code == 6, (result.problems, result.notes)
    assert any("cannot vouch for its own signer" in p for p in result.problems), result.problems


def test_allowed_signers_directory_symlinked_out_of_the_checkout_cannot_vouch(
    tmp_path: Path, keys: dict[str, Key]
) -> None:
    repo = Repo(tmp_path / "repo")
    planted = _planted(tmp_path, keys["other"])
    (repo.root / ".agentproto").symlink_to(planted.parent, target_is_directory=True)
    repo.head = repo.commit("trust my key", {})
    repo.export(sign(repo.attestation(), keys["other"]))
    result = repo.verify(require_signed=True, base="main")
    assert result.exit_code == 6, (result.problems, result.notes)


def test_allowed_signers_symlink_committed_at_the_base_is_not_trusted_either(
    tmp_path: Path, keys: dict[str, Key]
) -> None:
    # Unchanged in the range, but a link: its target is not content the base vouches for.
    planted = _planted(tmp_path, keys["other"])
    repo = Repo(tmp_path / "repo", files={})
    git(repo.root, "checkout", "-q", "main")
    (repo.root / ".agentproto").mkdir()
    (repo.root / ".agentproto" / "allowed_signers").symlink_to(planted)
    repo.base = repo.commit("link", {})
    git(repo.root, "checkout", "-q", "feature")
    git(repo.root, "rebase", "-q", "main")
    repo.head = git(repo.root, "rev-parse", "HEAD")
    repo.export(sign(repo.attestation(), keys["other"]))
    assert repo.verify(require_signed=True, base="main").exit_code == 6


def test_the_base_version_is_what_is_verified_against(trusted_repo: Repo, keys: dict[str, Key]) -> None:
    # The honest case still verifies, and the principal comes from the base's file.
    repo = trusted_repo
    repo.export(sign(repo.attestation(), keys["trusted"]))
    result = repo.verify(require_signed=True, base="main")
    assert result.exit_code == 0, result.problems
    assert result.principal == PRINCIPAL
    # A working-tree edit (not committed) that adds the attacker's key is a difference too.
    signers = repo.root / ".agentproto" / "allowed_signers"
    signers.write_text(signers.read_text() + signers_line(keys["other"]))
    repo.export(sign(repo.attestation(), keys["other"]))
    assert repo.verify(require_signed=True, base="main").exit_code == 6


def test_a_key_fingerprint_not_of_the_signing_key_is_refused(trusted_repo: Repo, keys: dict[str, Key]) -> None:
    # keyFingerprint is outside the signed bytes: an export could claim the organisation's
    # key while carrying another one's signature, and only the tie to the sig catches it.
    repo = trusted_repo
    signers = repo.root.parent / "trusted_signers"  # outside the checkout: trusted as given
    signers.write_text(signers_line(keys["trusted"]) + signers_line(keys["other"]))
    raw = sign(repo.attestation(), keys["other"])
    assert repo.verify(allowed_signers=signers, require_signed=True).exit_code == 4  # nothing exported yet
    raw["attestor"]["signature"]["keyFingerprint"] = keys["trusted"].fingerprint
    repo.export(raw)
    result = repo.verify(allowed_signers=signers, require_signed=True)
    assert result.exit_code == 6, result.problems
    assert any("is not the key that signed" in p for p in result.problems), result.problems
    raw["attestor"]["signature"]["keyFingerprint"] = keys["other"].fingerprint
    repo.export(raw)
    assert repo.verify(allowed_signers=signers, require_signed=True).exit_code == 0


def test_sshsig_fingerprint_matches_ssh_keygen(keys: dict[str, Key], trusted_repo: Repo) -> None:
    from agentreview.signing.ssh_signer import sshsig_key_fingerprint

    raw = sign(trusted_repo.attestation(), keys["trusted"])
    assert sshsig_key_fingerprint(raw["attestor"]["signature"]["sig"]) == keys["trusted"].fingerprint
    assert sshsig_key_fingerprint("not a signature") is None


@pytest.mark.parametrize("depth", [70, 500, 5000])
def test_a_deeply_nested_export_is_refused_not_a_crash(tmp_path: Path, depth: int) -> None:
    repo = Repo(tmp_path / "repo")
    path = repo.export(repo.attestation())
    nested = "[" * depth + "]" * depth
    path.write_text(path.read_text().replace('"findings": []', f'"findings": [], "x": {nested}', 1))
    scanned = repo.verify()
    assert scanned.exit_code == 4, (scanned.problems, scanned.error)
    assert any("nested deeper than" in n or "not valid JSON" in n for n in scanned.notes), scanned.notes
    named = repo.verify(path=path)
    assert named.exit_code == 1 and named.problems, named.problems


def test_canonical_json_of_a_deep_value_is_a_clear_error() -> None:
    from agentreview.model.digests import CanonicalJsonError, canonical_json

    value: list = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(CanonicalJsonError):
        canonical_json({"a": value})


# --------------------------------------------------------------------------- allowed_signers named inside the checkout


def _append_own_key(repo: Repo, keys: dict[str, Key], rel: str = ".agentproto/allowed_signers") -> None:
    """The change appends its author's key to an allowed_signers file of the checkout and signs its own export."""
    path = repo.root / rel
    repo.head = repo.commit("trust my key too", {rel: path.read_text() + signers_line(keys["other"])})
    repo.export(sign(repo.attestation(), keys["other"]))


@pytest.mark.parametrize("named", ["relative", "absolute", "dot-dot"])
def test_allowed_signers_flag_naming_the_checkouts_own_file_cannot_vouch(
    trusted_repo: Repo, keys: dict[str, Key], named: str
) -> None:
    # Issue 9 item 1: naming the in-checkout file with --allowed-signers skipped the check the
    # default gets (unchanged since the base), so the change's own key verified its own export.
    repo = trusted_repo
    _append_own_key(repo, keys)
    path = {
        "relative": Path(".agentproto/allowed_signers"),
        "absolute": repo.root / ".agentproto" / "allowed_signers",
        "dot-dot": Path("src/../.agentproto/allowed_signers"),
    }[named]
    result = repo.verify(base="main", require_signed=True, allowed_signers=path)
    assert result.exit_code == 6, (result.problems, result.notes)
    assert result.principal is None
    assert any("cannot vouch for its own signer" in p for p in result.problems), result.problems
    assert not any(c.name == "signature" and c.ok for c in result.checks)


def test_readme_pattern_trusted_dir_in_the_checkout_cannot_vouch(tmp_path: Path, keys: dict[str, Key]) -> None:
    # The README's old recipe: --allowed-signers trusted/allowed_signers, a path the change edits.
    repo = Repo(tmp_path / "repo", files={"trusted/allowed_signers": signers_line(keys["trusted"])})
    _append_own_key(repo, keys, "trusted/allowed_signers")
    result = repo.verify(base="main", require_signed=True, allowed_signers=Path("trusted/allowed_signers"))
    assert result.exit_code == 6, (result.problems, result.notes)
    assert result.principal is None


def test_in_checkout_allowed_signers_flag_unchanged_since_the_named_base_still_verifies(
    tmp_path: Path, keys: dict[str, Key]
) -> None:
    repo = Repo(tmp_path / "repo", files={"trusted/allowed_signers": signers_line(keys["trusted"])})
    repo.export(sign(repo.attestation(), keys["trusted"]))
    result = repo.verify(base="main", require_signed=True, allowed_signers=Path("trusted/allowed_signers"))
    assert result.exit_code == 0, result.problems
    assert result.principal == PRINCIPAL
    # Without a base the caller names, the base would be the checkout's target.base: refused.
    unnamed = repo.verify(require_signed=True, allowed_signers=Path("trusted/allowed_signers"))
    assert unnamed.exit_code == 6 and unnamed.principal is None
    assert any("pass --base" in p for p in unnamed.problems), unnamed.problems


def test_in_checkout_link_to_a_file_unchanged_since_the_base_cannot_vouch(tmp_path: Path, keys: dict[str, Key]) -> None:
    # The base holds a test fixture trusting a key whose private half is public (as test
    # fixtures' keys are). The change turns the named file into a link to that fixture: the
    # real path is inside the repository and its bytes are unchanged since the base, but the
    # link is the change's own.
    repo = Repo(
        tmp_path / "repo",
        files={
            "trusted/allowed_signers": signers_line(keys["trusted"]),
            "tests/fixtures/allowed_signers": signers_line(keys["other"]),
        },
    )
    named = repo.root / "trusted" / "allowed_signers"
    named.unlink()
    named.symlink_to(Path("..") / "tests" / "fixtures" / "allowed_signers")
    repo.head = repo.commit("use the fixture", {})
    repo.export(sign(repo.attestation(), keys["other"]))
    result = repo.verify(base="main", require_signed=True, allowed_signers=Path("trusted/allowed_signers"))
    assert result.exit_code == 6, (result.problems, result.notes)
    assert result.principal is None


def test_a_link_from_outside_into_the_checkout_is_treated_as_the_checkouts_file(
    trusted_repo: Repo, keys: dict[str, Key], tmp_path: Path
) -> None:
    # The real path decides, not only the name: a path outside the repository that leads into it.
    repo = trusted_repo
    _append_own_key(repo, keys)
    outside = tmp_path / "outside"
    outside.symlink_to(repo.root / ".agentproto", target_is_directory=True)
    result = repo.verify(base="main", require_signed=True, allowed_signers=outside / "allowed_signers")
    assert result.exit_code == 6, (result.problems, result.notes)
    assert result.principal is None


def test_allowed_signers_outside_the_checkout_is_still_trusted_as_given(
    trusted_repo: Repo, keys: dict[str, Key], tmp_path: Path
) -> None:
    repo = trusted_repo
    outside = tmp_path / "ci" / "allowed_signers"
    outside.parent.mkdir()
    outside.write_text(signers_line(keys["other"]))
    repo.export(sign(repo.attestation(), keys["other"]))
    result = repo.verify(base="main", require_signed=True, allowed_signers=outside)
    assert result.exit_code == 0, result.problems
    assert result.principal == PRINCIPAL


# --------------------------------------------------------------------------- untrusted signers name no principal


@pytest.mark.parametrize("base", ["main", None])
def test_untrusted_allowed_signers_yields_no_principal(
    trusted_repo: Repo, keys: dict[str, Key], base: str | None
) -> None:
    # Issue 9 item 6: without --require-signed, a signature checked against a file the change
    # edited (or a base the checkout chose) reported the principal and a ✓ signature line.
    from agentreview.verify.report import render_text, result_json

    repo = trusted_repo
    _append_own_key(repo, keys)
    result = repo.verify(base=base)
    assert result.exit_code == 0, result.problems  # not required: only a note
    assert result.principal is None
    assert result_json(result)["principal"] is None
    line = next(c for c in result.checks if c.name == "signature")
    assert not line.ok and "not trusted" in line.actual, line
    text = render_text(result)
    assert "✓ signature" not in text and "signature verified" not in text and "[signed:" not in text
    why = "cannot vouch for its own signer" if base else "trusted only as of a base the caller names"
    assert any(why in n for n in result.notes), result.notes
