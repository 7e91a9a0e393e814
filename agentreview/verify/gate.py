"""``agentreview verify``: AIP-62 §Verification, collecting every problem, without re-running a lane.

The signature (step 7) is checked before the pack digests (step 6): only resolving packs may use the network,
and ``--require-signed`` fetches nothing unverified. Checks are still reported in the spec's order.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.manifest.policy_tree import PolicyTreeError, written_policy
from agentreview.model.digests import manifest_sha
from agentreview.model.errors import EXIT_ERROR, EXIT_INVALID, EXIT_OK, EXIT_SIGNATURE, EXIT_USAGE, AgentreviewError
from agentreview.plugins.deferred import DeferredRegistry
from agentreview.verify.checks import content_checks, lanes_match_binding
from agentreview.verify.composition import composed_from_checks
from agentreview.verify.expectation import Expectation, ci_binding, resolve_expectation
from agentreview.verify.exports import locate
from agentreview.verify.packs import pack_digest_checks
from agentreview.verify.policy import (
    Policy,
    manifest_edit,
    pack_edit_problems,
    policy_change_line,
    policy_files_checks,
    policy_line,
    read_policy,
    signers_edited,
)
from agentreview.verify.result import VERDICT_CHOICES, CheckLine, StepCheck, VerifyOptions, VerifyResult, VerifyStop
from agentreview.verify.signature import signature_checks
from agentreview.verify.trust import find_allowed_signers

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.plugins.registry import Registry

__all__ = ["VerifyOptions", "VerifyResult", "verify"]


PACKS_WITHHELD = (
    "pack digests not verified: with --require-signed the packs (which may be fetched over the network) are "
    "resolved only for an attestation of this manifest whose signature verified"
)


class _Verifier:
    """One verification: runs the steps in order, sharing what earlier steps found."""

    def __init__(self, options: VerifyOptions):
        self.o = options
        self.cwd = options.cwd.resolve()
        self.result = VerifyResult(exit_code=EXIT_OK, reason="verified")
        self.plugins = DeferredRegistry(options.registry)
        self.policy: Policy | None = None
        self.root: Path | None = None
        self.parsed: ParsedReview | None = None
        self.manifest_edit: str | None = None  # --policy-from: how the checkout's manifest differs from REF's

    def registry(self) -> Registry:
        """The installed plugins, loaded on first need (only packs and signatures need them)."""
        return self.plugins.loaded

    def _abs(self, path: Path) -> Path:
        return (path if path.is_absolute() else self.cwd / path).resolve()

    def run(self) -> VerifyResult:
        from agentreview.host.git import GitError

        try:
            self._run()
        except (GitError, AgentreviewError) as exc:
            # git failing mid-way (timeout, missing), or a plugin registry that cannot load.
            self.result.exit_code = getattr(exc, "exit_code", EXIT_ERROR)
            self.result.reason = "error"
            self.result.error = str(exc)
        except VerifyStop as stop:
            self.result.exit_code = stop.exit_code
            self.result.reason = stop.reason
            if stop.path is not None:
                self.result.path = stop.path
            if stop.reason == "not_found":
                hint = self._merge_commit_hint()
                if hint is not None:
                    stop = VerifyStop(stop.exit_code, stop.reason, f"{hint} — {stop}", path=stop.path)
            if stop.reason == "invalid":
                self.result.problems.append(str(stop))
            elif stop.reason in ("not_found", "not_exported") and (self.result.problems or self.manifest_edit):
                # The change edits the review policy (--policy-from) and nothing made under REF's was found:
                # that decides, and the problem says how to review it under REF's policy.
                if self.policy is not None and self.manifest_edit is not None:
                    self._add(*policy_line(self.policy, self.manifest_edit, {}, ""))
                self.result.exit_code, self.result.reason = EXIT_INVALID, "invalid"
                self.result.problems.append(str(stop))
            else:
                self.result.error = str(stop)
        return self.result

    def _run(self) -> None:
        from agentreview.host.git import GitError, repo_remote, repo_root, root_and_commit

        result, o = self.result, self.o
        if o.verdict not in VERDICT_CHOICES:
            choices = ", ".join(VERDICT_CHOICES)
            raise VerifyStop(EXIT_USAGE, "usage", f"--verdict must be one of {choices}, not '{o.verdict}'")
        if o.ci_binding and o.binding is not None:
            raise VerifyStop(EXIT_USAGE, "usage", "--binding and --ci-binding both name the binding — give one")
        # Steps 1 and 2: the manifest and the expected range.
        head_name = o.head or "HEAD"
        try:  # the root and HEAD's commit in one git process, as a run reads them
            if head_name == "HEAD":
                root, head_commit = root_and_commit(self.cwd, "HEAD")
            else:
                root, head_commit = repo_root(self.cwd), None
        except GitError as exc:
            raise VerifyStop(EXIT_ERROR, "error", str(exc)) from exc
        policy = self._read_policy(root)
        parsed = policy.parsed if policy is not None else self._read_manifest(root)
        self.root, self.parsed = root, parsed
        if o.ci_binding:  # from here on the binding is named: the search and step 4 require it
            self.o = o = replace(o, binding=ci_binding(parsed), ci_binding=False)
        try:
            expected = resolve_expectation(root, parsed.manifest.target.base, o.base, head_name, head_commit)
            remote = repo_remote(root)
        except GitError as exc:
            raise VerifyStop(EXIT_ERROR, "error", str(exc)) from exc
        base_sha, head_sha = expected.base_sha, expected.head.commit
        result.base_sha, result.head_sha = base_sha, head_sha
        result.refs.extend(expected.refs)

        # Step 3: the attestation (the range may move to HEAD^ when HEAD only commits exports).
        found = locate(o, parsed, root, base_sha, head_sha, absolute=self._abs, notes=result.notes)
        base_sha, head_sha = found.base_sha, found.head_sha
        result.base_sha, result.head_sha = base_sha, head_sha
        result.path, result.attestation = found.doc.path, found.doc.raw
        raw = found.doc.raw

        # Step 4: content (with --policy-from, manifestSha is expected to be REF's manifest's).
        msha = manifest_sha(parsed.source)
        expect = Expectation(msha, base_sha, head_sha, remote, o.binding, o.verdict)
        self._add(*content_checks(raw, expect))
        manifest_matches = raw.get("manifestSha") == msha
        if manifest_matches:
            line, lane_problems = lanes_match_binding(raw, parsed)
            if line is not None:
                self._add([line], lane_problems)
        edits: list[str] = []
        edited_packs: list[str] = []
        if policy is not None:  # edited or not, the attestation must be REF's policy's
            self._add(*policy_line(policy, self.manifest_edit, raw, msha))
            files = policy_files_checks(policy, root, head_sha, raw)  # its rubrics and path packs
            self._add(files.checks, files.problems)
            edits = ([policy.rel] if self.manifest_edit else []) + files.edits
            edited_packs = files.edited_packs
            if signers_edited(policy, root, head_sha):
                edits.append(".agentproto/allowed_signers")

        # Step 5: composedFrom priors.
        self._add(*composed_from_checks(raw, found.docs, full_chain=o.full_chain))

        # Step 7 before step 6: every check so far and the signature need no network, while
        # resolving packs may fetch what the checkout's uses[] names, which the change chose.
        commit = policy.commit if policy is not None else None
        signers = find_allowed_signers(o.allowed_signers, root, cwd=self.cwd, policy=commit)
        signed = signature_checks(
            raw,
            signers,
            require_signed=o.require_signed,
            base_named=o.base is not None,
            root=root,
            base_sha=base_sha,
            registry=self.registry,
            policy=commit,
        )

        # Step 6: pack digests. With --require-signed, packs are resolved only for a verified
        # signature over an attestation of this very manifest: a forged export, or a signed one
        # beside an edited uses[], cannot make the gate connect anywhere.
        vouched = signed.principal is not None and not signed.problems and manifest_matches
        packs = self._packs(raw, parsed, root, policy, manifest_matches, fetch=vouched or not o.require_signed)
        self._add(packs.checks, packs.problems)  # reported in the spec's order: packs, then the signature
        if policy is not None:
            result.problems.extend(pack_edit_problems(policy, edited_packs, packs.problems))
        result.notes.extend(packs.notes)
        result.checks.extend(signed.checks)
        result.notes.extend(signed.notes)
        if signed.principal is not None:
            result.principal = signed.principal

        if result.problems:
            result.exit_code, result.reason = EXIT_INVALID, "invalid"
        elif signed.problems:
            result.exit_code, result.reason = EXIT_SIGNATURE, "signature"
        result.problems.extend(signed.problems)
        if policy is not None and edits and not result.problems:
            result.policy_change = policy_change_line(policy)
            result.notes.append(f"{result.policy_change}: the change edits {', '.join(dict.fromkeys(edits))}")

    def _packs(
        self,
        raw: dict[str, Any],
        parsed: ParsedReview,
        root: Path,
        policy: Policy | None,
        matches: bool,
        *,
        fetch: bool,
    ) -> StepCheck:
        """Step 6. With ``--policy-from`` the path packs are REF's, read from its tree as git objects
        (a change that edits a pack is checked against the pack it would replace)."""
        o = self.o

        def check(at: ParsedReview, pack_root: Path) -> StepCheck:
            return pack_digest_checks(
                raw, at, pack_root, manifest_matches=matches, registry=self.registry, home=o.home, fetch=fetch,
                withheld=PACKS_WITHHELD,
            )  # fmt: skip

        if policy is None or not parsed.manifest.uses or not fetch:
            return check(parsed, root)

        try:
            with written_policy(root, policy.commit.resolved, policy.rel, parsed.source) as tree:
                tree.fill(parsed)
                if not tree.has_path_packs:
                    return check(parsed, root)
                return check(replace(parsed, path=tree.manifest_path), tree.root)
        except PolicyTreeError as exc:
            raise VerifyStop(EXIT_ERROR, "error", str(exc)) from exc

    def _merge_commit_hint(self) -> str | None:
        """Not found at a head that is GitHub's merge commit (two parents, and ``GITHUB_REF`` is
        ``refs/pull/N/merge`` or an attestation exists for the second parent, the pull request's head)."""
        from agentreview.verify.ci_hints import merge_commit_hint

        if self.root is None or self.parsed is None or self.result.head_sha is None or self.o.head is not None:
            return None
        return merge_commit_hint(self.o, self.root, self.parsed, self.result.head_sha)

    def _add(self, checks: list[CheckLine], problems: list[str]) -> None:
        self.result.checks.extend(checks)
        self.result.problems.extend(problems)

    def _read_policy(self, root: Path) -> Policy | None:
        """``--policy-from REF``: REF's manifest, and the checkout's compared with it (step 1)."""
        if self.o.policy_from is None:
            return None
        policy = read_policy(root, self.cwd, self.o.policy_from, self.o.manifest, self.plugins.given)
        self.result.refs.append(policy.commit.resolved)
        self.plugins.adopt(policy.parsed.registry)
        self.policy, self.manifest_edit = policy, manifest_edit(policy, root)
        return policy

    def _read_manifest(self, root: Path) -> ParsedReview:
        from agentreview.host.home import home_dir
        from agentreview.manifest.parse import parse_review, read_manifest_bytes

        given = self.o.manifest
        path = self._abs(given) if given else root / "REVIEW.md"
        # Read by the name given, not the resolved one: a link to /dev/stdin resolves to a pipe's
        # /proc name that does not exist, and the refusal must say "not a regular file".
        named = (given if given.is_absolute() else self.cwd / given) if given else path
        try:
            source = read_manifest_bytes(named)
            parsed = parse_review(source, path, registry=self.plugins.given, home=self.o.home or home_dir())
        except (AgentreviewError, ValueError, OSError) as exc:
            raise VerifyStop(EXIT_ERROR, "error", str(exc)) from exc
        self.plugins.adopt(parsed.registry)  # loaded for a plugin's check kind: reuse it
        return parsed


def verify(options: VerifyOptions) -> VerifyResult:
    """Run AIP-62 verification; never raises for bad input (the result carries the exit code)."""
    return _Verifier(options).run()
