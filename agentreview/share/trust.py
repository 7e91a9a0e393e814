"""Team trust (beyond v1, off by default): a foreign attestation whose signature verifies against ``[team]
allowed_signers`` may serve as a cache hit or prior under the rules own entries obey. Notes are unsigned transport,
so trust comes only from the signature checked at use, never the principal stored at import; the team file must
lie outside any git work tree (the change could edit it); a verdict or rangeSha not following from it is refused."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.model.errors import AgentreviewError

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.plugins.registry import Registry


@dataclass(frozen=True)
class TrustedForeign:
    """A foreign attestation whose signature verified against the team file just now."""

    attestation: Attestation
    principal: str  # the principal the signature verified as (not the one stored at import)
    remote: str  # the git remote it was fetched from (host metadata, never exported)
    path: Path  # its foreign entry file


def team_signers_path(home: Path) -> Path | None:
    """The configured team allowed_signers file, or None when team trust is off; bad configuration is one line."""
    from agentreview.host.home import load_config

    config_file = home / "config.toml"
    team = load_config(home).get("team")
    if team is None:
        return None
    if not isinstance(team, dict) or "allowed_signers" not in team:
        raise AgentreviewError(f'{config_file}: [team] needs allowed_signers = "<path>" — add it or remove [team]')
    value = team["allowed_signers"]
    if not isinstance(value, str) or not value.strip():
        raise AgentreviewError(f"{config_file}: [team].allowed_signers must be a path string — fix it")
    path = Path(value).expanduser()
    path = (path if path.is_absolute() else home / path).resolve()
    inside = next((parent for parent in path.parents if (parent / ".git").exists()), None)
    if inside is not None:
        raise AgentreviewError(
            f"{config_file}: [team].allowed_signers {path} is inside the git repository {inside}; the team file "
            "must be the host owner's, outside any repository — copy it to $AGENTREVIEW_HOME and point there"
        )
    return path


def _consistent(att: Attestation) -> bool:
    """A verdict that follows from the lanes and a rangeSha that follows from the target."""
    from agentreview.model.digests import range_sha

    try:
        return att.refold() == att.verdict and att.rangeSha == range_sha(att.target.baseSha, att.target.headSha)
    except Exception:
        return False


def trusted_foreign(
    home: Path,
    registry: Registry,
    repo_remote: str,
    manifest_sha: str,
    binding: str,
    *,
    want: Callable[[dict[str, Any]], bool] | None = None,
    warn: Callable[[str], None] | None = None,
    **narrow: Any,
) -> Iterator[TrustedForeign]:
    """Foreign entries under the key whose signature verifies against the team file, newest first (none when team
    trust is off). ``narrow`` goes to :meth:`Ledger.foreign_candidates`; ``want`` picks the raw documents worth a
    signature check (one signer process each)."""
    from agentreview.host.files import read_regular_file
    from agentreview.host.home import ledger_root
    from agentreview.model.attestation import Attestation
    from agentreview.model.contracts.errors import SignatureInvalidError
    from agentreview.signing.signers import verify_signature
    from agentreview.store.ledger import Ledger

    note = warn or (lambda _msg: None)
    with Ledger(ledger_root(home), warn=note) as ledger:
        rows = [
            (path, raw, host)
            for path, raw, host in ledger.foreign_candidates(repo_remote, manifest_sha, binding, **narrow)
            if want is None or want(raw)
        ]
    if not rows:  # nothing foreign could serve: the configuration is not even read
        return
    signers = team_signers_path(home)
    if signers is None:
        return
    try:
        data = read_regular_file(signers)
    except Exception as exc:  # missing, a FIFO, unreadable: one line naming the setting
        raise AgentreviewError(
            f"{home / 'config.toml'}: [team].allowed_signers {signers} cannot be read: {exc} — fix the path"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="agentreview-team-") as tmp:
        copy = Path(tmp) / "allowed_signers"  # a private copy: the file is read once per use
        copy.write_bytes(data)
        for path, raw, host in rows:
            try:
                principal = verify_signature(raw, copy, registry)
                att = Attestation.read(raw)
            except SignatureInvalidError as exc:
                why = str(exc).replace(str(copy), str(signers))
                note(f"foreign attestation {str(raw.get('runId'))[:40]} not used: {why}")
                continue
            except ValueError:
                continue
            if not _consistent(att):
                note(f"foreign attestation {att.runId} not used: its verdict or rangeSha does not follow from it")
                continue
            yield TrustedForeign(att, principal, _remote(host), path)


def _remote(host: dict[str, Any]) -> str:
    foreign = host.get("foreign")
    remote = foreign.get("remote") if isinstance(foreign, dict) else None
    return remote if isinstance(remote, str) else ""
