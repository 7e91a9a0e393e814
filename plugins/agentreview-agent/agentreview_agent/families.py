"""Same-family exclusion: a model of the writer's family shares its blind spots (reviewer-clis.md §1.2).

The writing families only grow, so a claimed co-author can only exclude reviewers, never make a pass.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentreview.api import GitError, PresetSpec, run_git

PROVIDER_FAMILY = {"claude": "anthropic", "codex": "openai", "kimi": "moonshot"}
# Names a model provider, a vendor domain or an agent goes by -> its family.
ALIASES = {
    "anthropic": "anthropic", "claude": "anthropic", "claude code": "anthropic",
    "openai": "openai", "codex": "openai", "chatgpt": "openai", "openai codex": "openai", "chatgpt codex": "openai",
    "moonshot": "moonshot", "moonshotai": "moonshot", "kimi": "moonshot", "kimi code": "moonshot",
    "google": "google", "gemini": "google", "xai": "xai", "grok": "xai", "deepseek": "deepseek", "mistral": "mistral",
}  # fmt: skip
DOMAINS = {
    "anthropic.com": "anthropic", "openai.com": "openai", "moonshot.ai": "moonshot", "moonshot.cn": "moonshot",
    "kimi.com": "moonshot", "google.com": "google", "x.ai": "xai", "deepseek.com": "deepseek", "mistral.ai": "mistral",
}  # fmt: skip
AGENT_TRAILERS = ("co-authored-by", "assisted-by", "generated-by", "authored-by")
MAX_COMMITS = 5000
_PERSON = re.compile(r"^\s*(?P<name>[^<]*?)\s*(?:<(?P<email>[^>]*)>)?\s*$")


def family_of(name: str) -> str | None:
    """The family a provider id, agent name or family name stands for (``None`` when it names none)."""
    key = " ".join(name.strip().lower().replace("_", " ").split())
    return ALIASES.get(key) or (key if key in ALIASES.values() else None)


def preset_family(spec: PresetSpec) -> str | None:
    """A preset's family before it runs: its provider's, or an OpenCode preset's model provider."""
    if spec.provider in PROVIDER_FAMILY:
        return PROVIDER_FAMILY[spec.provider]
    if spec.provider == "opencode" and spec.model and "/" in spec.model:
        return family_of(spec.model.split("/", 1)[0]) or spec.model.split("/", 1)[0].lower()
    return None


def _email_family(email: str) -> str | None:
    domain = email.rpartition("@")[2].strip().lower()
    return next((family for known, family in DOMAINS.items() if domain == known or domain.endswith("." + known)), None)


def _person_family(text: str) -> str | None:
    match = _PERSON.match(text)
    if not match:
        return None
    email = match.group("email") or ""
    return _email_family(email) if email else family_of(match.group("name") or "")


def range_families(repo_root: Path, base_sha: str, head_sha: str) -> dict[str, str]:
    """The families the range's commits name as an author (family -> the evidence, one short line).
    Raises ``GitError`` when git cannot list the range."""
    fmt = "%H%x1f%ae%x1f%ce%x1f%(trailers:unfold,only)%x1e"
    proc = run_git(
        ["log", f"--max-count={MAX_COMMITS}", f"--format={fmt}", f"{base_sha}..{head_sha}"], repo_root, timeout=60
    )
    found: dict[str, str] = {}
    for record in proc.stdout.decode("utf-8", "replace").split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) != 4:
            continue
        sha, author, committer, trailers = parts
        for role, email in (("author", author), ("committer", committer)):
            family = _email_family(email)
            if family:
                found.setdefault(family, f"commit {sha[:12]}: {role} {email}")
        for line in trailers.splitlines():
            key, sep, value = line.partition(":")
            if not sep or key.strip().lower() not in AGENT_TRAILERS:
                continue
            family = _person_family(value)
            if family:
                found.setdefault(family, f"commit {sha[:12]}: {key.strip()}: {value.strip()[:80]}")
    return found


def authoring_families(
    told: frozenset[str], repo_root: Path, base_sha: str, head_sha: str
) -> tuple[dict[str, str], str | None]:
    """Every family that wrote the change (family -> evidence) and, when the commits could not be read,
    why (the families the run was told still count)."""
    found = {family: "agentreview run --authored-by" for family in told}
    try:
        for family, evidence in range_families(repo_root, base_sha, head_sha).items():
            found.setdefault(family, evidence)
    except (GitError, OSError) as exc:
        return found, f"the range's commit trailers could not be read for the same-family rule: {exc}"
    return found, None
