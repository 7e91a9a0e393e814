"""The documentation site (mkdocs.yml over docs/) builds in strict mode, and strict mode bites.

These run the real ``mkdocs build --strict`` as a subprocess, as .ci/run does, so the test
command guards the site too: a page missing from the nav, a broken link or anchor, or a link to
the example distributions that a reader of the site could not follow fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _config() -> dict[str, object]:
    loaded = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _nav_pages() -> dict[str, str]:
    """Nav title -> Markdown path, from mkdocs.yml (a flat nav)."""
    pages: dict[str, str] = {}
    nav = _config()["nav"]
    assert isinstance(nav, list)
    for item in nav:
        assert isinstance(item, dict) and len(item) == 1, item
        ((title, path),) = item.items()
        pages[str(title)] = str(path)
    return pages


def _rendered(site: Path, page: str) -> Path:
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


def test_the_site_builds_strict_and_renders_every_nav_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = _build(ROOT, site)
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr

    pages = _nav_pages()
    assert set(pages) == {
        "Home", "Getting started", "Concepts", "Commands", "Plugins", "Providers", "Security",
        "Sharing reviews", "Architecture", "Performance",
    }
    for title, page in pages.items():
        html_file = _rendered(site, page)
        assert html_file.is_file(), f"nav page {title} ({page}) was not rendered"
        html = html_file.read_text(encoding="utf-8")
        heading = (DOCS / page).read_text(encoding="utf-8").splitlines()[0].removeprefix("# ").strip()
        assert re.search(r"<h1[^>]*>", html), f"{page}: no heading rendered"
        assert heading.replace("`", "") in re.sub(r"<[^>]+>", "", html), f"{page}: heading {heading!r} missing"
    # Every Markdown page of docs/ is in the nav (the example distributions are not pages).
    top_level = {p.name for p in DOCS.glob("*.md")}
    assert top_level == set(pages.values())
    assert not (site / "examples").exists()
    # The search index is built locally; nothing is loaded from a font or asset CDN.
    assert (site / "search" / "search_index.json").is_file()
    for html_file in site.rglob("*.html"):
        html = html_file.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in html and "fonts.gstatic.com" not in html, html_file


def test_links_to_examples_and_schemas_open_the_repository_tree(tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert _build(ROOT, site).returncode == 0
    config = _config()
    tree = f"{str(config['repo_url']).rstrip('/')}/tree/main/docs/"
    plugins = (site / "plugins" / "index.html").read_text(encoding="utf-8")
    for example in ("agentreview-provider-example", "agentreview-signer-example", "agentreview-checkkind-example"):
        assert f'href="{tree}examples/{example}/"' in plugins
    assert f'href="{tree}schemas"' in (site / "cli" / "index.html").read_text(encoding="utf-8")
    # No rendered page keeps a relative link into the excluded folder, which would 404 on the site.
    for html_file in site.rglob("*.html"):
        assert not re.search(r'href="(\.\./)*examples/', html_file.read_text(encoding="utf-8")), html_file


def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(DOCS, project / "docs")
    shutil.copy2(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(ROOT / "scripts", project / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    concepts = project / "docs" / "concepts.md"
    concepts.write_text(
        concepts.read_text(encoding="utf-8")
        + "\nSee [the gone page](gone.md) and [a missing section](cli.md#no-such-section).\n",
        encoding="utf-8",
    )
    result = _build(project, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "'concepts.md' contains a link 'gone.md'" in output
    assert "does not contain an anchor '#no-such-section'" in output
    assert "strict mode" in output
