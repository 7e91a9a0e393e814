"""A consumer manifest that imports packs, and resolving it the way ``agentreview run`` does.

Shared by the pack tests (test_packs_resolve.py, test_packs_git.py) and bench/bench_packs.py,
so each one states only the ``uses:`` entries and bound checks it is about.
"""

from __future__ import annotations

from pathlib import Path

from agentreview.manifest.parse import parse_review
from agentreview.model.contracts import PackLoadContext
from agentreview.packs.resolve import ResolvedReview, resolve_review
from agentreview.plugins.registry import Registry


def consumer(uses: str, checks: str = "types, core/correctness") -> str:
    """A ``kind: review`` manifest with one command check ``types``, the ``uses:`` entries
    ``uses`` (YAML list items, no trailing newline) and a binding ``ci`` of ``checks``."""
    return f"""---
kind: review
id: app
target: git-range
checks:
  - id: types
    kind: command
    run: "true"
uses:
{uses}
bindings:
  ci:
    checks: [{checks}]
---
"""


def resolve(
    repo: Path, text: str, registry: Registry, manifest: str = "REVIEW.md", *, home: Path | None = None
) -> ResolvedReview:
    """Write ``text`` to ``repo/manifest`` and resolve it; the host home defaults to ``repo``'s sibling ``home``."""
    path = repo / manifest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    parsed = parse_review(path.read_bytes(), path)
    ctx = PackLoadContext(repo_root=repo, manifest_dir=path.parent, home=home or repo.parent / "home")
    return resolve_review(parsed, registry=registry, ctx=ctx)


# A consumer that imports one pack (its ref substituted for PACK_REF) with one agent check,
# shared by the verify tests of pack digests and of the order of verification.
PACK_CONSUMER = """---
kind: review
id: demo
target: { kind: git-range, base: main }
checks:
  - id: types
    kind: command
    run: "true"
uses:
  - pack: "PACK_REF"
    as: core
    preset: kimi
bindings:
  default:
    checks: [types, core/correctness]
verdict:
  exportDir: .reviews
---
"""
PACK_MD = """---
kind: review-pack
id: core
version: 1.2.3
checks:
  - id: correctness
    kind: agent
    rubric: ./rubrics/correctness.md
---
"""
PACK_RUBRIC = "# pack correctness\n"
