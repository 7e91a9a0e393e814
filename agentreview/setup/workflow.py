"""``.github/workflows/agentreview.yml``: the gate on pull requests.

It re-runs nothing: it verifies the signed export committed with the change, on the pull
request's head (not GitHub's merge commit) with the full history the merge-base needs, under the
base branch's policy (``--policy-from``: REVIEW.md and ``.agentproto/allowed_signers`` as the
base has them, so the change cannot loosen its own gate), and ``--require-signed``. The same
recipe as docs/cli.md's CI gate; see docs/security.md for what a pass proves.
"""

from __future__ import annotations

from pathlib import Path

from agentreview import __version__
from agentreview.setup.writer import Outcome, place

__all__ = ["WORKFLOW_PATH", "render_workflow", "write_workflow"]

WORKFLOW_PATH = ".github/workflows/agentreview.yml"
# The full ref: a short `origin/<branch>` would be refused when a tag of that name exists (tags are
# fetched with the history), and a full ref is never ambiguous.
VERIFY_RUN = 'agentreview verify --policy-from "refs/remotes/origin/${{ github.base_ref }}" --require-signed'


def render_workflow() -> str:
    return f"""\
# Written by `agentreview init`: the review gate. It checks the signed review export committed
# with the pull request against its head, under the base branch's REVIEW.md and
# .agentproto/allowed_signers (a change cannot edit its own gate). Exit 4: no export for the
# head (run `agentreview run --binding local --export` and commit .reviews/); 6: unsigned or
# signed by a key the base branch does not trust; 1: anything altered.
name: agentreview
on:
  pull_request:
permissions:
  contents: read
jobs:
  verify:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{{{ github.event.pull_request.head.sha }}}}
          fetch-depth: 0
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: install agentreview (the core is enough to verify)
        run: python -m pip install "agentreview=={__version__}"
      - name: verify the signed review under the base branch's policy
        run: {VERIFY_RUN}
      # Reviews shared through git notes (`agentreview run --publish`) need no export commit:
      # replace the step above with
      #   run: |
      #     git fetch origin refs/notes/agentreview:refs/notes/agentreview
      #     {VERIFY_RUN} --notes
"""


def write_workflow(root: Path, *, force: bool) -> Outcome:
    return place(root / WORKFLOW_PATH, render_workflow().encode(), root=root, force=force)
