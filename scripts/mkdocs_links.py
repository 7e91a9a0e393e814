"""MkDocs hook: links from pages to docs/examples/ and docs/schemas/ open the repository's tree.

The pages keep plain relative links (``[example](examples/agentreview-signer-example/)``), so they
work where most people read them, on GitHub and in an editor. Those targets are not pages of the
site (the example distributions are excluded from the build; a directory has no page), so the
rendered site rewrites them to the same path in the repository's tree, derived from ``repo_url``
and ``edit_uri`` in mkdocs.yml. Every other link is left to MkDocs, which checks it in strict mode.
"""

from __future__ import annotations

import re
from typing import Any

# A Markdown inline link whose target is docs/examples/... or docs/schemas[/...], relative to docs/.
_LINK = re.compile(r"\]\(((?:examples|schemas)(?:/[^)\s]*)?)\)")


def tree_url(repo_url: str, edit_uri: str) -> str:
    """The browsable docs/ folder: ``<repo_url>/tree/<branch>/docs/`` from ``edit/<branch>/docs/``."""
    path = edit_uri.strip("/")
    for verb in ("edit/", "blob/"):
        if path.startswith(verb):
            path = "tree/" + path[len(verb) :]
    return f"{repo_url.rstrip('/')}/{path}/"


def rewrite(markdown: str, base: str) -> str:
    """Point every link to examples/ or schemas/ at ``base`` + the same path."""
    return _LINK.sub(lambda m: f"]({base}{m.group(1)})", markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: runs before a page's links are resolved and validated."""
    repo_url = config.get("repo_url")
    if not repo_url:
        return markdown
    return rewrite(markdown, tree_url(repo_url, config.get("edit_uri") or "edit/main/docs/"))
