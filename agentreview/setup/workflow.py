"""``.github/workflows/agentreview.yml``: the gate on pull requests, one the pull request cannot edit.

``pull_request_target`` runs the base's copy, nothing of the pull request runs, and every action is pinned by a
full commit id; docs/security.md ("A gate the pull request cannot edit") gives the design.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentreview.model.errors import UsageError
from agentreview.setup.writer import Outcome, place

__all__ = [
    "ACTION_HOME",
    "CHECKOUT",
    "DEFAULT_ACTION_REF",
    "UPLOAD_SARIF",
    "WORKFLOW_PATH",
    "parse_action_ref",
    "render_workflow",
    "write_workflow",
]

WORKFLOW_PATH = ".github/workflows/agentreview.yml"

# The project's home: its GitHub Action is action.yml at the root of this repository.
ACTION_HOME = "agentreview/agentreview"
# The commit of ACTION_HOME that init pins by default: a commit of this repository whose
# action.yml takes the inputs the workflow passes (tests/test_init_workflow.py checks both).
# Moved forward with each release to the release's commit (docs/cli.md, "CI gate").
ACTION_COMMIT = "3521c6bab73ca175e5179c0bee835106d228276a"
DEFAULT_ACTION_REF = f"{ACTION_HOME}@{ACTION_COMMIT}"

# Third-party actions, each at a full commit id; the comment names the release it is.
CHECKOUT = "actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd # v6.0.2"
UPLOAD_SARIF = "github/codeql-action/upload-sarif@5d4e8d1aca955e8d8589aabd499c5cae939e33c7 # v4.31.9"

# Outside the checkout, so a file of the pull request's tree can never be uploaded in its place.
SARIF_FILE = "${{ runner.temp }}/agentreview.sarif"
NOTES_REF = "refs/notes/agentreview"

_ACTION_REF = re.compile(r"(?P<repo>[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})(?P<path>(?:/[A-Za-z0-9._-]+)*)"
                         r"@(?P<sha>[^\s]*)")  # fmt: skip
_FULL_SHA = re.compile(r"[0-9a-f]{40}")


def parse_action_ref(ref: str) -> str:
    """``OWNER/REPO[/PATH]@SHA`` as given, when SHA is a full 40-hex commit id; a
    :class:`UsageError` (exit 64) otherwise: a tag or branch can be moved under the gate."""
    match = _ACTION_REF.fullmatch(ref.strip())
    if match is None or ".." in ref:
        raise UsageError(f"--action-ref must be OWNER/REPO@COMMIT (e.g. {DEFAULT_ACTION_REF}), got {ref!r}")
    if not _FULL_SHA.fullmatch(match["sha"]):
        raise UsageError(
            f"--action-ref {ref!r}: pin a full 40-hex commit id, not {match['sha']!r} "
            "(a tag or branch can be moved to other code after review)"
        )
    return ref.strip()


# The one shell step. It sees no expression: the token, the server and the repository come in
# through env:. Its git ignores the checkout's hooks, fsmonitor, credential helpers and ssh
# command, fetches from an explicit URL (no remote of .git/config) and only the notes ref.
FETCH_NOTES = f"""\
set -euo pipefail
# Only absolute PATH entries (bash builtins only): a relative one would run the checkout's ./git.
IFS=: read -ra entries <<< "$PATH"
PATH=""
for entry in "${{entries[@]}}"; do case "$entry" in /*) PATH="${{PATH:+$PATH:}}$entry" ;; esac; done
export PATH
url="${{GITHUB_SERVER_URL}}/${{GITHUB_REPOSITORY}}.git"
auth="$(printf 'x-access-token:%s' "$NOTES_TOKEN" | base64 | tr -d '\\n')"
export GIT_CONFIG_COUNT=1
export GIT_CONFIG_KEY_0="http.${{GITHUB_SERVER_URL}}/.extraheader"
export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $auth"
safe_git() {{
  git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c credential.helper= \\
    -c core.sshCommand=ssh -c core.askPass= -c protocol.ext.allow=never "$@"
}}
status=0
safe_git ls-remote --exit-code "$url" {NOTES_REF} >/dev/null || status=$?
case "$status" in
  0) safe_git fetch --no-tags --no-recurse-submodules "$url" "+{NOTES_REF}:{NOTES_REF}" ;;
  2) echo "no published reviews ({NOTES_REF}); the gate looks for an export commit" ;;
  *) echo "could not list {NOTES_REF} of the repository (git exit $status)" >&2; exit "$status" ;;
esac
"""


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


def render_workflow(action_ref: str = DEFAULT_ACTION_REF) -> str:
    """The workflow with the project's Action pinned at ``action_ref`` (validated)."""
    action = parse_action_ref(action_ref)
    return f"""\
# Written by `agentreview init`: the review gate (docs/cli.md, "CI gate (GitHub Actions)").
# It checks the signed review of the pull request's head under the base branch's REVIEW.md and
# .agentproto/allowed_signers, re-running nothing. Exit 4: no review for the head (run
# `agentreview run --binding local --publish`, or `--export` and commit .reviews/); 6: unsigned
# or signed by a key the base branch does not trust; 1: anything altered.
#
# pull_request_target: GitHub runs this file as the base branch has it, so a pull request cannot
# weaken its own gate. Nothing of the pull request runs here: its head is checked out as data,
# and the agentreview that reads it is the pinned Action's own install (docs/security.md).
name: agentreview
on:
  pull_request_target:  # zizmor: ignore[dangerous-triggers] nothing of the pull request is run (docs/security.md)
    types: [opened, synchronize, reopened]
permissions: {{}}
concurrency:  # a newer push to the pull request replaces the check of the older head
  group: agentreview-${{{{ github.event.pull_request.number }}}}
  cancel-in-progress: true
jobs:
  verify:
    name: verify the signed review
    runs-on: ubuntu-latest
    timeout-minutes: 10
    permissions:
      contents: read
      security-events: write  # the SARIF upload to code scanning, nothing else
    steps:
      - name: check out the pull request's head as data (nothing of it runs)
        uses: {CHECKOUT}
        with:
          ref: ${{{{ github.event.pull_request.head.sha }}}}
          fetch-depth: 0
          persist-credentials: false
      - name: fetch the published reviews (git notes)
        env:
          NOTES_TOKEN: ${{{{ github.token }}}}
        run: |
{_indent(FETCH_NOTES, 10)}\
      - name: verify the signed review under the base branch's policy
        id: verify
        uses: {action}
        with:
          policy-ref: refs/remotes/origin/${{{{ github.base_ref }}}}
          require-signed: "true"
          sarif: {SARIF_FILE}
      - name: show the findings in code scanning
        if: ${{{{ always() && steps.verify.outputs.sarif != '' }}}}
        uses: {UPLOAD_SARIF}
        with:
          sarif_file: {SARIF_FILE}
          category: agentreview
"""


def write_workflow(root: Path, *, force: bool, action_ref: str = DEFAULT_ACTION_REF) -> Outcome:
    return place(root / WORKFLOW_PATH, render_workflow(action_ref).encode(), root=root, force=force)
