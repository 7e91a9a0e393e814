"""The REVIEW.md and rubric ``init`` writes: the repository's own commands, one agent check, one binding.

Rendered by hand, so it reads like a file a person wrote and a second ``init`` writes the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentreview.host import git as repo
from agentreview.setup.detect import DetectedCheck
from agentreview.setup.readiness import unusable

__all__ = ["FALLBACK_PRESET", "RUBRIC", "RUBRIC_PATH", "default_base", "pick_preset", "render_manifest", "review_id"]

RUBRIC_PATH = "rubrics/correctness.md"
PREFERRED_PROVIDERS = ("claude", "codex", "opencode", "kimi")
FALLBACK_PRESET = "claude"
LS_REMOTE_TIMEOUT_S = 10.0
# ls-remote is the one network call of init; the remote's configuration must not turn it into a
# program run: a fixed upload-pack, and ssh that never prompts (the hardened runner adds the rest).
_LS_REMOTE_CONFIG = {"core.sshCommand": "ssh -o BatchMode=yes", "credential.helper": ""}


def review_id(root: Path) -> str:
    """An id (``^[a-z][a-z0-9-]*$``, at most 64) from the repository folder's name."""
    slug = re.sub(r"[^a-z0-9-]+", "-", root.name.lower())
    slug = re.sub(r"-{2,}", "-", slug).strip("-")
    slug = re.sub(r"^[^a-z]+", "", slug)
    return (slug[:64].rstrip("-")) or "repo"


def pick_preset(providers: Mapping[str, Any], presets: Mapping[str, Any] | None = None) -> str | None:
    """The first preset whose reviewer CLI is usable here (each probe bounded), or None.

    Built-ins in the preferred order, then user presets; ``exec`` is no candidate: it has no command until written.
    """
    order = [p for p in PREFERRED_PROVIDERS if p in providers]
    order += sorted(p for p in providers if p not in PREFERRED_PROVIDERS and p != "exec")
    for name in order:
        try:
            if providers[name].status().usable:
                return name
        except Exception:  # a provider's bug must not stop init
            continue
    for name, spec in sorted((presets or {}).items()):
        if not spec.builtin and unusable(spec, providers) is None:
            return str(name)
    return None


def _branch_of(ref: str) -> str | None:
    for prefix in ("refs/remotes/origin/", "refs/heads/"):
        if ref.startswith(prefix) and ref[len(prefix) :]:
            return ref[len(prefix) :]
    return None


def default_base(root: Path) -> tuple[str, str | None]:
    """``(base, warning)``: ``refs/remotes/origin/<default branch>``, else ``refs/heads/main`` without ``origin``.

    Full refs, since a tag could shadow a short name; a remote that does not answer gives ``origin/main`` and a warning.
    """
    if repo.origin_url(root) is None:
        return "refs/heads/main", None
    local = repo.git(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], root, check=False)
    branch = _branch_of(local.stdout.strip()) if local.returncode == 0 else None
    if branch:
        return f"refs/remotes/origin/{branch}", None
    try:
        proc = repo.run_git(
            ["ls-remote", "--upload-pack=git-upload-pack", "--symref", "origin", "HEAD"],
            root,
            timeout=LS_REMOTE_TIMEOUT_S,
            check=False,
            config=_LS_REMOTE_CONFIG,
        )
    except repo.GitError as exc:
        return "refs/remotes/origin/main", f"could not ask origin for its default branch ({exc}); assumed main"
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("ref: ") and line.endswith("\tHEAD"):
            branch = _branch_of(line[len("ref: ") : -len("\tHEAD")])
            if branch:
                return f"refs/remotes/origin/{branch}", None
    assumed = "origin did not name its default branch; assumed main (edit target.base in REVIEW.md)"
    return "refs/remotes/origin/main", assumed


def _scalar(text: str) -> str:
    """A YAML scalar for ``text``: plain when it is plainly safe, else JSON-quoted (valid YAML 1.2)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 ./_@+-]*", text) and not text.endswith(" "):
        return text
    return json.dumps(text, ensure_ascii=False)


def render_manifest(*, rid: str, name: str, base: str, checks: Sequence[DetectedCheck], preset: str | None) -> str:
    """REVIEW.md for these command checks plus, with a ``preset``, the ``correctness`` agent check.

    One binding, ``local``: run, hook and gate all use the manifest's only binding, so a second would be a mere alias.
    """
    ids = [c.id for c in checks] + (["correctness"] if preset else [])
    lines = [
        "---",
        "kind: review",
        f"id: {rid}",
        f"name: {_scalar(name)}",
        f"target: {{ kind: git-range, base: {_scalar(base)} }}",
        "checks:",
    ]
    for check in checks:
        lines += [
            f"  - id: {check.id}",
            "    kind: command",
            f"    description: {_scalar('found by agentreview init: ' + check.reason)}",
            f"    run: {_scalar(check.run)}",
            "    timeoutMs: 600000",
        ]
    if preset:
        lines += [
            "  - id: correctness",
            "    kind: agent",
            "    description: a read-only reviewer checks the change against the rubric",
            f"    preset: {_scalar(preset)}",
            f"    rubric: ./{RUBRIC_PATH}",
            "    blockOn: high",
            "    timeoutMs: 900000",
        ]
    lines += [
        "bindings:",
        "  local:",
        "    on: pre-push",
        f"    checks: [{', '.join(ids)}]",
        "verdict:",
        "  exportDir: .reviews",
        "---",
        "",
        f"# {name}: review policy",
        "",
        "Written by `agentreview init`; edit it like any other file. The `local` binding runs on",
        "`agentreview run` and before every `git push` (the pre-push hook). It reviews the commits",
        f"from `merge-base({base}, HEAD)` to `HEAD`: the command checks above",
    ]
    if preset:
        lines += [
            f"and a read-only reviewer (preset `{preset}`, see `agentreview presets`) against",
            f"[{RUBRIC_PATH}]({RUBRIC_PATH}). A high finding blocks.",
        ]
    else:
        lines += [
            "(no reviewer CLI was usable when this file was written: set one up, see `agentreview",
            "presets`, then `agentreview init --force --reviewer PRESET` adds the agent check).",
        ]
    lines += [
        "",
        "Review and export before you push (`agentreview run --export`), commit the export in",
        "`.reviews/`, and the pull request gate (`agentreview verify --policy-from",
        "refs/remotes/origin/<base> --require-signed`) accepts the change. Change this file, the rubric or",
        "`.agentproto/allowed_signers` in a pull request of their own: the gate reads them from the",
        "base branch.",
        "",
    ]
    return "\n".join(lines)


RUBRIC = """\
# Correctness rubric

You review one change: the commits between the base and the head named in your prompt. Read the
diff first, then whatever surrounding code you need to judge it. Report what is wrong with the
change, not with code it does not touch, and give each finding a file and line.

## high (blocks the push)

- The change does something other than what its code, names, commit messages or tests say it
  does: a wrong condition, an inverted check, an off-by-one, a wrong unit, a swapped argument.
- Data can be lost or corrupted: a write that is not atomic where a reader may see half of it,
  an error swallowed after a partial update, a migration with no way back, a delete that is
  wider than intended.
- Input from outside (a request, a file, an environment variable, a command line) reaches a
  shell, an SQL query, `eval`/`exec`, a path on disk or a deserializer without validation.
- A secret, key or token is added to the repository or written to a log.
- Concurrency that can go wrong: shared state changed without the lock the rest of the code
  uses, a check-then-act race on a file or a row.
- A public interface (function signature, CLI option, file format, HTTP API) changes in a way
  that breaks its existing callers, with no migration.

## medium

- An error path that is untested and wrong: the wrong exception caught, a resource not closed,
  a retry without a bound, a timeout missing on a network or process call.
- Behaviour changed with no test that would catch a regression of it.
- A failure reported to the user without saying what failed and how to fix it.

## low

- A new function or branch without a test, when the project tests such code.
- A name, comment or docstring that says something the code does not do.
- Dead code, a leftover debug print, a TODO without an owner.

Do not report style the project's formatter or linter already enforces, and do not speculate:
when you are not sure something is wrong, say what would confirm it, as a low finding. An empty
findings list means you found nothing wrong.
"""
