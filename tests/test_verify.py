"""``agentreview.verify.gate`` on real git repositories, real export files and real ssh-keygen signatures.

Every attack is a concrete tampered file: the verifier must refuse it with the
reference's problem string, and must accept the untampered original.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pack_helpers import PACK_CONSUMER, PACK_MD, PACK_RUBRIC
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    PRINCIPAL,
    Key,
    Repo,
    allowed_signers,
    git,
    isolated_env,
    keys_fixture,
    repo_fixture,
    sign,
    signers_line,
)

from agentreview.model.attestation import Attestation
from agentreview.model.digests import attestation_sha256_of
from agentreview.verify.exports import (
    MAX_ATTESTATION_BYTES,
    ExportDoc,
    UnreadableExport,
    find_for_range,
    read_export,
    scan_export_dir,
)
from agentreview.verify.gate import VerifyOptions, VerifyResult, verify


def expect_problem(result: VerifyResult, problem: str, exit_code: int = 1) -> None:
    assert result.exit_code == exit_code, (result.exit_code, result.problems, result.error)
    assert problem in result.problems, result.problems


# --------------------------------------------------------------------------- acceptance


def test_accepts_an_untampered_unsigned_export(repo: Repo) -> None:
    path = repo.export(repo.attestation())
    result = repo.verify()
    assert result.exit_code == 0, (result.problems, result.error)
    assert result.ok and result.reason == "verified"
    assert result.path == path
    assert (result.base_sha, result.head_sha) == (repo.base, repo.head)
    assert result.verdict == "pass"
    assert result.principal is None
    assert any("not signed" in n for n in result.notes)
    names = [c.name for c in result.checks]
    for name in ("schema", "rangeSha", "verdict follows from lanes", "manifestSha", "target.baseSha",
                 "target.headSha", "target.repoRemote", "verdict", "clean working tree"):  # fmt: skip
        assert name in names
    assert all(c.ok for c in result.checks)


def test_accepts_a_signed_export_and_names_the_verified_principal(repo: Repo, keys: dict[str, Key]) -> None:
    repo.export(sign(repo.attestation(), keys["trusted"]))
    signers = allowed_signers(repo.root.parent / "trust" / "allowed_signers", keys["trusted"])
    result = repo.verify(allowed_signers=signers, require_signed=True)
    assert result.exit_code == 0, (result.problems, result.error)
    assert result.principal == PRINCIPAL


def test_explicit_file_is_used_without_range_filtering(repo: Repo) -> None:
    other = repo.export(repo.attestation(head=repo.base), name="elsewhere.json")
    result = repo.verify(path=other)
    assert result.path == other
    expect_problem(result, "headSha mismatch")


# --------------------------------------------------------------------------- tampering (content)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(raw: dict[str, Any]) -> None:
        node: Any = raw
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


CONTENT_TAMPERING = [
    ("verdict", _set("verdict", "block"), "verdict 'block' does not follow from its lanes (expected 'pass')"),
    ("lane status", _set("lanes.0.status", "fail"), "verdict 'pass' does not follow from its lanes (expected 'block')"),
    ("target.baseSha", _set("target.baseSha", "1" * 40), "baseSha mismatch"),
    ("target.headSha", _set("target.headSha", "2" * 40), "headSha mismatch"),
    ("target.repoRemote", _set("target.repoRemote", "github.com/evil/demo"), "repoRemote mismatch"),
    ("rangeSha", _set("rangeSha", "0" * 64), "rangeSha does not match target.baseSha..target.headSha"),
    ("manifestSha", _set("manifestSha", "f" * 64), "manifestSha mismatch"),
    ("dirty", _set("dirty", True), "attestation was produced from a dirty working tree"),
    ("schema", _set("schema", "agentproto.review.attestation/v2"), "unknown schema 'agentproto.review.attestation/v2'"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "mutate", "problem"), CONTENT_TAMPERING, ids=[t[0] for t in CONTENT_TAMPERING])
def test_rejects_a_tampered_copy(repo: Repo, what: str, mutate: Callable[[dict[str, Any]], None], problem: str) -> None:
    raw = repo.attestation()
    mutate(raw)
    path = repo.export(raw, name="tampered.json")
    expect_problem(repo.verify(path=path, verdict="any"), problem)


def test_a_tampered_target_also_breaks_the_range_sha(repo: Repo) -> None:
    raw = repo.attestation()
    raw["target"]["headSha"] = repo.base
    result = repo.verify(path=repo.export(raw, name="t.json"))
    assert "rangeSha does not match target.baseSha..target.headSha" in result.problems
    assert "headSha mismatch" in result.problems


def test_every_problem_is_collected_in_the_reference_order(repo: Repo) -> None:
    raw = repo.attestation()
    raw["verdict"] = "block"
    raw["manifestSha"] = "f" * 64
    raw["target"]["repoRemote"] = "elsewhere"
    raw["dirty"] = True
    result = repo.verify(path=repo.export(raw, name="t.json"))
    assert result.exit_code == 1
    assert result.problems == [
        "verdict 'block' does not follow from its lanes (expected 'pass')",
        "manifestSha mismatch",
        "repoRemote mismatch",
        "verdict is 'block', expected 'pass'",
        "attestation was produced from a dirty working tree",
    ]


def test_an_edited_review_md_no_longer_matches(repo: Repo) -> None:
    repo.export(repo.attestation())
    manifest = repo.root / "REVIEW.md"
    manifest.write_text(manifest.read_text().replace('run: "true"', 'run: "exit 0"'))
    expect_problem(repo.verify(), "manifestSha mismatch")


def test_expected_verdict_defaults_to_pass_and_any_skips_it(repo: Repo) -> None:
    repo.export(repo.attestation(types_status="fail"))
    expect_problem(repo.verify(), "verdict is 'block', expected 'pass'")
    assert repo.verify(verdict="block").exit_code == 0
    assert repo.verify(verdict="any").exit_code == 0
    usage = repo.verify(verdict="maybe")
    assert usage.exit_code == 64 and "--verdict" in (usage.error or "")


def test_binding_is_checked_only_when_given(repo: Repo) -> None:
    path = repo.export(repo.attestation())
    assert repo.verify(path=path).exit_code == 0
    expect_problem(repo.verify(path=path, binding="ci"), "binding mismatch")


def test_lanes_must_be_the_attested_bindings_checks(repo: Repo) -> None:
    raw = repo.attestation()
    raw["lanes"] = raw["lanes"][:1]  # drop the agent lane; the fold still says pass
    result = repo.verify(path=repo.export(raw, name="t.json"))
    assert result.exit_code == 1
    assert any("do not match the checks of binding 'default'" in p for p in result.problems)


def test_a_shape_error_is_a_problem_not_a_traceback(repo: Repo) -> None:
    raw = repo.attestation()
    raw["lanes"][0]["status"] = "passed"
    raw["extraTop"] = {"kept": True}
    result = repo.verify(path=repo.export(raw, name="t.json"))
    assert result.exit_code == 1
    assert any(p.startswith("attestation member lanes.0.status") for p in result.problems), result.problems


def test_a_named_file_that_is_not_an_attestation_is_invalid(repo: Repo) -> None:
    bad = repo.root / ".reviews"
    bad.mkdir()
    (bad / "x.json").write_text("{not json")
    result = repo.verify(path=bad / "x.json")
    assert result.exit_code == 1 and result.reason == "invalid"
    assert any("not valid JSON" in p for p in result.problems)
    (bad / "y.json").write_text("[1, 2]")
    assert repo.verify(path=bad / "y.json").exit_code == 1


# --------------------------------------------------------------------------- tampering (signed)


SIGNED_TAMPERING = [
    ("a lane's findings", _set("lanes.1.findings", [{"severity": "low", "title": "nit", "detail": ""}])),
    ("a lane's summary", _set("lanes.1.summary", "all good")),
    ("the claimed principal", _set("attestor.signature.principal", "boss@example.com")),
    ("the signature bytes", None),
    ("createdAt", _set("createdAt", "2027-01-01T00:00:00.000Z")),
]


@pytest.mark.parametrize(("what", "mutate"), SIGNED_TAMPERING, ids=[t[0] for t in SIGNED_TAMPERING])
def test_a_signed_export_edited_after_signing_fails_the_signature(
    repo: Repo, keys: dict[str, Key], what: str, mutate: Callable[[dict[str, Any]], None] | None
) -> None:
    raw = sign(repo.attestation(), keys["trusted"])
    if mutate is None:
        sig = raw["attestor"]["signature"]["sig"]
        lines = sig.splitlines()
        body = lines[3]
        lines[3] = body[:10] + ("A" if body[10] != "A" else "B") + body[11:]
        raw["attestor"]["signature"]["sig"] = "\n".join(lines) + "\n"
    else:
        mutate(raw)
    repo.export(raw)
    signers = allowed_signers(repo.root.parent / "trust" / "allowed_signers", keys["trusted"])
    # A signed export is checked whenever allowed_signers is known, required or not.
    for require in (False, True):
        result = repo.verify(allowed_signers=signers, require_signed=require)
        assert result.exit_code == 6, (what, result.problems, result.error)
        assert result.reason == "signature"
        assert result.principal is None


def test_findings_tampering_on_an_unsigned_export_is_caught_only_by_requiring_signatures(repo: Repo) -> None:
    raw = repo.attestation()
    raw["lanes"][1]["findings"] = [{"severity": "low", "title": "nit", "detail": ""}]
    repo.export(raw)
    assert repo.verify().exit_code == 0  # the documented limit of an unsigned export
    expect_problem(repo.verify(require_signed=True), "attestation is not signed", 6)


# --------------------------------------------------------------------------- --require-signed


def test_require_signed_refuses_unsigned(repo: Repo, keys: dict[str, Key]) -> None:
    repo.export(repo.attestation())
    signers = allowed_signers(repo.root.parent / "trust" / "allowed_signers", keys["trusted"])
    expect_problem(repo.verify(allowed_signers=signers, require_signed=True), "attestation is not signed", 6)


def test_require_signed_without_allowed_signers(repo: Repo, keys: dict[str, Key]) -> None:
    repo.export(sign(repo.attestation(), keys["trusted"]))
    expect_problem(repo.verify(require_signed=True), "no --allowed-signers file to verify the signature against", 6)
    unchecked = repo.verify()
    assert unchecked.exit_code == 0
    assert any("not checked" in n for n in unchecked.notes)


@pytest.mark.parametrize("case", ["other key", "principal not listed", "namespace restricted elsewhere"])
def test_require_signed_refuses_a_wrongly_signed_export(repo: Repo, keys: dict[str, Key], case: str) -> None:
    signers = repo.root.parent / "trust" / "allowed_signers"
    if case == "other key":
        repo.export(sign(repo.attestation(), keys["other"]))
        allowed_signers(signers, keys["trusted"])
    elif case == "principal not listed":
        repo.export(sign(repo.attestation(), keys["trusted"]))
        allowed_signers(signers, keys["trusted"], principal="someone-else@example.com")
    else:
        repo.export(sign(repo.attestation(), keys["trusted"]))
        allowed_signers(signers, keys["trusted"], namespaces="git")
    result = repo.verify(allowed_signers=signers, require_signed=True)
    assert result.exit_code == 6, (case, result.problems)
    assert result.principal is None
    reason = {
        "other key": "no principal 'ci@example.com' maps to the signing key",
        "principal not listed": "no principal 'ci@example.com' maps to the signing key",
        "namespace restricted elsewhere": "signature does not verify",
    }[case]
    assert len(result.problems) == 1 and result.problems[0].startswith(reason), result.problems


def _signed_with_signers_trusted_on_main(repo: Repo, key: Key) -> None:
    """main trusts ``key`` in .agentproto/allowed_signers; feature is rebased on it and its export signed by ``key``."""
    git(repo.root, "checkout", "-q", "main")
    repo.base = repo.commit("trust", {".agentproto/allowed_signers": signers_line(key)})
    git(repo.root, "checkout", "-q", "feature")
    git(repo.root, "rebase", "-q", "main")
    repo.head = git(repo.root, "rev-parse", "HEAD")
    repo.export(sign(repo.attestation(), key))


def test_allowed_signers_default_is_in_the_checkout(repo: Repo, keys: dict[str, Key]) -> None:
    _signed_with_signers_trusted_on_main(repo, keys["trusted"])
    result = repo.verify(require_signed=True, base="main")
    assert result.exit_code == 0, result.problems
    assert result.principal == PRINCIPAL


def test_checkout_signers_need_a_base_the_caller_names(repo: Repo, keys: dict[str, Key]) -> None:
    # The base would otherwise come from the checkout's REVIEW.md, which the change controls:
    # it could point target.base at its own commit that adds its key to allowed_signers.
    _signed_with_signers_trusted_on_main(repo, keys["trusted"])
    result = repo.verify(require_signed=True)
    assert result.exit_code == 6
    assert any("pass --base" in p for p in result.problems)


def test_a_range_cannot_add_its_own_signer(repo: Repo, keys: dict[str, Key]) -> None:
    # The change itself adds an allowed_signers naming the author's key: under
    # --require-signed that file must not count.
    repo.head = repo.commit("trust me", {".agentproto/allowed_signers": signers_line(keys["other"])})
    repo.export(sign(repo.attestation(), keys["other"]))
    result = repo.verify(require_signed=True, base="main")
    assert result.exit_code == 6
    assert any("cannot vouch for its own signer" in p for p in result.problems)
    assert repo.verify().exit_code == 0  # without --require-signed it is only a note


def test_missing_allowed_signers_file_is_a_usage_error(repo: Repo) -> None:
    repo.export(repo.attestation())
    result = repo.verify(allowed_signers=Path("nope/allowed_signers"))
    assert result.exit_code == 64
    assert "nope/allowed_signers" in (result.error or "")


# --------------------------------------------------------------------------- locating


def test_not_found_when_no_export_matches_the_range(repo: Repo) -> None:
    repo.export(repo.attestation(head=repo.base))
    result = repo.verify()
    assert result.exit_code == 4 and result.reason == "not_found"
    assert result.head_sha == repo.head
    assert repo.verify(path=Path(".reviews/missing.json")).exit_code == 4


def test_not_found_when_the_export_dir_does_not_exist(repo: Repo) -> None:
    assert repo.verify().exit_code == 4


def test_not_exported_only_with_if_exported(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo", export_dir=False)
    result = repo.verify(if_exported=True)
    assert result.exit_code == 5 and result.reason == "not_exported"
    usage = repo.verify()
    assert usage.exit_code == 64 and "verdict.exportDir" in (usage.error or "")
    # An explicit directory still works without exportDir.
    path = repo.export(repo.attestation())
    assert repo.verify(path=path.parent).exit_code == 0


def test_binding_filters_the_directory_scan(repo: Repo) -> None:
    repo.export(repo.attestation(binding="ci"), name="ci.json")
    assert repo.verify(binding="default").exit_code == 4
    result = repo.verify(binding="ci")
    assert result.path is not None and result.path.name == "ci.json"


def test_newest_created_at_wins(repo: Repo) -> None:
    repo.export(repo.attestation(created_at="2026-01-01T00:00:00.000Z"), name="b-old.json")
    repo.export(repo.attestation(types_status="fail", created_at="2026-02-01T00:00:00+01:00"), name="a-new.json")
    result = repo.verify()
    assert result.path is not None and result.path.name == "a-new.json"
    expect_problem(result, "verdict is 'block', expected 'pass'")


def test_unreadable_files_in_the_directory_are_skipped_with_a_note(repo: Repo) -> None:
    repo.export(repo.attestation())
    (repo.root / ".reviews" / "broken.json").write_text('{"a": 1, "a": 2}')
    os.mkfifo(repo.root / ".reviews" / "pipe.json")  # must never block the gate
    result = repo.verify()
    assert result.exit_code == 0, result.problems
    assert any("broken.json" in n and "duplicate key" in n for n in result.notes)
    assert any("pipe.json" in n and "not a regular file" in n for n in result.notes)


def test_head_parent_retry_after_committing_the_export(repo: Repo) -> None:
    repo.export(repo.attestation())
    committed = repo.commit("add the review export", {})
    assert committed != repo.head
    result = repo.verify()
    assert result.exit_code == 0, (result.problems, result.error)
    assert result.head_sha == repo.head
    assert any("verified its parent" in n for n in result.notes)
    # An explicit --head disables the retry.
    assert repo.verify(head="HEAD").exit_code == 4


def test_no_retry_when_head_also_changes_code(repo: Repo) -> None:
    repo.export(repo.attestation())
    repo.commit("export and sneak in code", {"src/a.py": "a = 3\n"})
    assert repo.verify().exit_code == 4


def test_no_retry_for_an_export_dir_at_the_repo_root(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo", export_dir=False)
    manifest = repo.root / "REVIEW.md"
    manifest.write_text(manifest.read_text().replace("---\n\n# demo", "verdict:\n  exportDir: .\n---\n\n# demo"))
    repo.base = repo.commit("export to root", {})
    git(repo.root, "branch", "-f", "main", repo.base)
    repo.head = repo.commit("change", {"src/a.py": "a = 5\n"})
    (repo.root / "att.json").write_text(json.dumps(repo.attestation()))
    assert repo.verify().exit_code == 0
    repo.commit("add export at the root", {})
    # HEAD only adds a *.json at the root, but the root is everything: no retry.
    assert repo.verify().exit_code == 4


# --------------------------------------------------------------------------- composedFrom


def _composed(prior: dict[str, Any]) -> dict[str, Any]:
    return {
        "composedFrom": {
            "rangeSha": prior["rangeSha"],
            "headSha": prior["target"]["headSha"],
            "attestationSha256": attestation_sha256_of(prior),
        }
    }


@pytest.fixture
def chain(repo: Repo) -> tuple[Repo, list[dict[str, Any]]]:
    """base..m1 (p1) <- base..m2 (p2, composed from p1) <- base..head (composed from p2)."""
    m1 = repo.head
    m2 = repo.commit("more", {"src/b.py": "b = 1\n"})
    repo.head = repo.commit("even more", {"src/c.py": "c = 1\n"})
    p1 = repo.attestation(head=m1)
    p2 = repo.attestation(head=m2, correctness=_composed(p1))
    current = repo.attestation(correctness=_composed(p2))
    return repo, [p1, p2, current]


def test_composed_from_accepted_with_the_prior_exported(repo: Repo) -> None:
    prior = repo.attestation()
    mid = repo.head
    repo.head = repo.commit("more", {"src/b.py": "b = 1\n"})
    repo.export(prior)
    repo.export(repo.attestation(correctness=_composed(prior)))
    result = repo.verify()
    assert result.exit_code == 0, result.problems
    assert any(c.name == "lane 'correctness' composedFrom" and c.ok for c in result.checks)
    assert mid != repo.head


def test_composed_from_chain_of_two_priors_is_followed(chain: tuple[Repo, list[dict[str, Any]]]) -> None:
    repo, (p1, p2, current) = chain
    for raw in (p1, p2, current):
        repo.export(raw)
    result = repo.verify(full_chain=True)
    assert result.exit_code == 0, result.problems
    composed = [c for c in result.checks if "composedFrom" in c.name]
    assert len(composed) == 2 and all(c.ok for c in composed)
    # One level deep by default (the spec's step 5): only the attestation's own prior is checked.
    result = repo.verify()
    assert result.exit_code == 0, result.problems
    assert [c.name for c in result.checks if "composedFrom" in c.name] == ["lane 'correctness' composedFrom"]


def test_composed_from_missing_prior_at_depth_two(chain: tuple[Repo, list[dict[str, Any]]]) -> None:
    repo, (_p1, p2, current) = chain
    repo.export(p2)
    repo.export(current)
    result = repo.verify(full_chain=True)
    assert result.exit_code == 1
    assert any("is not in the export directory" in p and p.startswith("prior ") for p in result.problems)
    # The spec's step 5 is one level deep: the prior's own prior is not looked at.
    result = repo.verify()
    assert result.exit_code == 0, result.problems


def test_composed_from_missing_prior(repo: Repo) -> None:
    prior = repo.attestation()
    repo.head = repo.commit("more", {"src/b.py": "b = 1\n"})
    repo.export(repo.attestation(correctness=_composed(prior)))
    result = repo.verify()
    assert result.exit_code == 1
    assert any("is not in the export directory" in p for p in result.problems)


@pytest.mark.parametrize(
    "alter",
    ["createdAt", "verdict", "dirty", "lane", "resigned-json-key-order"],
)
def test_composed_from_altered_prior(repo: Repo, alter: str) -> None:
    prior = repo.attestation()
    repo.head = repo.commit("more", {"src/b.py": "b = 1\n"})
    current = repo.attestation(correctness=_composed(prior))
    if alter == "createdAt":
        prior["createdAt"] = "2030-01-01T00:00:00.000Z"
    elif alter == "verdict":
        prior["lanes"][0]["status"] = "fail"
        prior["verdict"] = "block"
    elif alter == "dirty":
        prior["dirty"] = True
    elif alter == "lane":
        prior["lanes"][1]["summary"] = "rewritten"
    else:
        # Reordering keys does not change canonical JSON: still the same prior.
        prior = dict(reversed(list(prior.items())))
    repo.export(prior)
    repo.export(current)
    result = repo.verify()
    if alter == "resigned-json-key-order":
        assert result.exit_code == 0, result.problems
        return
    assert result.exit_code == 1
    assert any("attestationSha256 does not match" in p for p in result.problems), result.problems


def test_composed_from_prior_that_did_not_pass_is_refused(repo: Repo) -> None:
    # The pin matches, but the prior itself is a block (a host bug or a forged composition).
    prior = repo.attestation(types_status="fail")
    repo.head = repo.commit("more", {"src/b.py": "b = 1\n"})
    repo.export(prior)
    repo.export(repo.attestation(correctness=_composed(prior)))
    result = repo.verify()
    assert result.exit_code == 1
    assert "lane 'correctness': composedFrom prior: verdict is 'block', expected 'pass'" in result.problems


def test_composed_from_on_a_command_lane_is_refused(repo: Repo) -> None:
    prior = repo.attestation()
    repo.head = repo.commit("more", {"src/b.py": "b = 1\n"})
    repo.export(prior)
    current = repo.attestation()
    current["lanes"][0].update(_composed(prior))  # a command lane claiming it reviewed only the delta
    repo.export(current)
    result = repo.verify()
    assert result.exit_code == 1
    assert any("only agent lanes compose" in p for p in result.problems), result.problems


def test_composed_from_prior_under_another_manifest_is_refused(repo: Repo) -> None:
    prior = repo.attestation()
    prior_other = copy.deepcopy(prior)
    prior_other["manifestSha"] = "e" * 64
    repo.head = repo.commit("more", {"src/b.py": "b = 1\n"})
    repo.export(prior_other)
    repo.export(repo.attestation(correctness=_composed(prior_other)))
    result = repo.verify()
    assert result.exit_code == 1
    assert any("manifestSha differs" in p for p in result.problems)


def test_composed_from_chain_depth_is_bounded() -> None:
    from agentreview.verify.composition import MAX_CHAIN_DEPTH, composed_from_checks

    docs: list[ExportDoc] = []
    prev: dict[str, Any] | None = None
    for i in range(MAX_CHAIN_DEPTH + 2):
        base, head = "b" * 40, f"{i:040x}"
        lanes: list[dict[str, Any]] = [{"id": "x", "kind": "agent", "status": "pass", "blocking": True,
                                        "findings": [], "durationMs": 1}]  # fmt: skip
        if prev is not None:
            lanes[0].update(_composed(prev))
        raw = json.loads(
            Attestation.build(
                run_id=f"review-{i}", review_id="d", manifest_sha="c" * 64, binding="default", repo_remote="r",
                base_sha=base, head_sha=head, lanes=lanes, daemon="t", created_at="2026-01-01T00:00:00Z",
            ).export_text()
        )  # fmt: skip
        docs.append(ExportDoc(Path(f"{i}.json"), raw))
        prev = raw
    assert prev is not None
    _, problems = composed_from_checks(prev, docs, full_chain=True)
    assert any(f"deeper than {MAX_CHAIN_DEPTH}" in p for p in problems), problems[:3]
    _, problems = composed_from_checks(docs[10].raw, docs, full_chain=True)
    assert problems == []
    checks, problems = composed_from_checks(prev, docs)  # one level deep: the depth never matters
    assert problems == [] and len(checks) == 1


# --------------------------------------------------------------------------- pack digests



def _pack_repo(tmp_path: Path, ref: str = "./packs/core") -> tuple[Repo, dict[str, Any]]:
    from agentreview.model.digests import pack_digest_sha256

    files = {"packs/core/REVIEW.md": PACK_MD, "packs/core/rubrics/correctness.md": PACK_RUBRIC}
    repo = Repo(tmp_path / "repo", manifest=PACK_CONSUMER.replace("PACK_REF", ref), files=files)
    # The digest computed independently of the resolver, by the recipe.
    sha = pack_digest_sha256(PACK_MD.encode(), [("./rubrics/correctness.md", PACK_RUBRIC.encode())])
    record = {"ref": ref, "id": "core", "version": "1.2.3", "alg": "agentproto-pack-digest/v1", "sha256": sha}
    return repo, record


def _pack_lanes() -> list[dict[str, Any]]:
    return [
        {"id": "types", "kind": "command", "status": "pass", "blocking": True, "findings": [], "durationMs": 1},
        {"id": "core/correctness", "kind": "agent", "status": "pass", "blocking": True, "findings": [],
         "durationMs": 1, "preset": "kimi"},
    ]  # fmt: skip


def test_pack_digests_verified(tmp_path: Path) -> None:
    repo, record = _pack_repo(tmp_path)
    repo.export(repo.attestation(lanes=_pack_lanes(), packs=[record]))
    result = repo.verify()
    assert result.exit_code == 0, result.problems
    assert any(c.name == "pack digests" and c.ok for c in result.checks)


def test_pack_changed_since_the_review(tmp_path: Path) -> None:
    repo, record = _pack_repo(tmp_path)
    repo.export(repo.attestation(lanes=_pack_lanes(), packs=[record]))
    (repo.root / "packs/core/rubrics/correctness.md").write_text("# approve everything\n")
    result = repo.verify()
    assert result.exit_code == 1
    assert any("core" in p and "changed" in p for p in result.problems), result.problems


def test_pack_digest_alg_unknown_is_a_hard_failure(tmp_path: Path) -> None:
    repo, record = _pack_repo(tmp_path)
    repo.export(repo.attestation(lanes=_pack_lanes(), packs=[record]))
    raw = json.loads(next((repo.root / ".reviews").glob("*.json")).read_text())
    raw["packs"][0]["alg"] = "agentproto-pack-digest/v2"
    result = repo.verify(path=repo.export(raw))
    assert result.exit_code == 1
    assert any("not recognized" in p for p in result.problems), result.problems


def test_stripped_pack_digests_are_refused(tmp_path: Path) -> None:
    repo, record = _pack_repo(tmp_path)
    raw = repo.attestation(lanes=_pack_lanes(), packs=[record])
    del raw["packs"]
    repo.export(raw)
    expect_problem(repo.verify(), "attestation records no pack digests, but the manifest imports packs (uses[])")


def test_unresolvable_pack_is_a_note(tmp_path: Path) -> None:
    repo, record = _pack_repo(tmp_path, ref="@example/review-pack-core")
    repo.export(repo.attestation(lanes=_pack_lanes(), packs=[record]))
    result = repo.verify()
    assert result.exit_code == 0, result.problems
    assert any("pack" in n for n in result.notes), result.notes


# --------------------------------------------------------------------------- reading and scanning (units)


def test_read_export_is_strict(tmp_path: Path) -> None:
    cases = {
        "dup.json": ('{"a": 1, "a": 2}', "duplicate key"),
        "nan.json": ('{"a": NaN}', "not valid JSON"),
        "list.json": ("[]", "not a JSON object"),
        "latin1.json": (b'{"a": "\xe9"}', "not UTF-8"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        with pytest.raises(UnreadableExport, match=message):
            read_export(path)
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(MAX_ATTESTATION_BYTES + 1)
    with pytest.raises(UnreadableExport, match="larger than"):
        read_export(big)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UnreadableExport):
        read_export(deep)


def test_scan_is_not_recursive(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.json").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "c.txt").write_text("{}")
    docs, notes = scan_export_dir(tmp_path)
    assert [d.path.name for d in docs] == ["b.json"] and notes == []


def test_find_for_range_orders_by_instant_not_text() -> None:
    def doc(name: str, created: str) -> ExportDoc:
        return ExportDoc(Path(name), {"target": {"baseSha": "b", "headSha": "h"}, "createdAt": created})

    # 10:30+02:00 is 08:30Z, earlier than 09:00Z although its text sorts later.
    docs = [doc("x.json", "2026-01-01T10:30:00+02:00"), doc("y.json", "2026-01-01T09:00:00Z"), doc("z.json", "bad")]
    found = find_for_range(docs, "b", "h", None)
    assert found is not None and found.path.name == "y.json"
    assert find_for_range(docs, "b", "other", None) is None


def test_could_not_run_outside_a_repository_or_with_a_bad_manifest(tmp_path: Path, repo: Repo) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    result = verify(VerifyOptions(cwd=outside))
    assert result.exit_code == 3 and result.error
    (repo.root / "REVIEW.md").write_text("---\nkind: review\nid: demo\nbogus: 1\n---\n")
    result = repo.verify()
    assert result.exit_code == 3 and "REVIEW.md" in (result.error or "")
    result = repo.verify(manifest=Path("nope.md"))
    assert result.exit_code == 3


# --------------------------------------------------------------------------- signature algs


@pytest.mark.parametrize("require", [False, True])
def test_a_signature_alg_no_installed_signer_handles_is_a_signature_failure_naming_it(
    repo: Repo, keys: dict[str, Key], require: bool
) -> None:
    raw = sign(repo.attestation(), keys["trusted"])
    raw["attestor"]["signature"]["alg"] = "x509-rsa"  # a sane alg, but no installed signer declares it
    repo.export(raw)
    signers = allowed_signers(repo.root.parent / "trust" / "allowed_signers", keys["trusted"])
    result = repo.verify(allowed_signers=signers, require_signed=require)
    assert result.exit_code == 6 and result.reason == "signature", (result.problems, result.error)
    assert not [c for c in result.checks if not c.ok and c.name != "signature"]  # the shape is fine
    (problem,) = result.problems
    assert problem.startswith("no installed signer can check signature alg 'x509-rsa' (installed signers check: ")
    assert "ssh-ed25519" in problem and "install or enable the agentreview plugin" in problem


def test_a_signature_alg_of_no_sane_shape_is_an_invalid_document(repo: Repo, keys: dict[str, Key]) -> None:
    raw = sign(repo.attestation(), keys["trusted"])
    raw["attestor"]["signature"]["alg"] = "ssh ed25519\n"
    repo.export(raw)
    result = repo.verify()
    assert result.exit_code == 1
    assert any(p.startswith("attestation member attestor.signature.alg: ") for p in result.problems), result.problems


def test_the_ssh_signature_is_checked_even_when_plugins_are_selected_by_name(
    repo: Repo, keys: dict[str, Key], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signer is found by the signature's alg; without the built-in ssh signer, nothing checks ssh-ed25519."""
    repo.export(sign(repo.attestation(), keys["trusted"]))
    signers = allowed_signers(repo.root.parent / "trust" / "allowed_signers", keys["trusted"])
    monkeypatch.setenv("AGENTREVIEW_PLUGINS", "builtin-ssh-signer")
    assert repo.verify(allowed_signers=signers, require_signed=True).principal == PRINCIPAL
    monkeypatch.setenv("AGENTREVIEW_PLUGINS", "agentreview-command")
    result = repo.verify(allowed_signers=signers, require_signed=True)
    assert result.exit_code == 6
    assert result.problems[0].startswith(
        "no installed signer can check signature alg 'ssh-ed25519' (installed signers check: none)"
    )
