"""Where this host keeps its state (``$AGENTREVIEW_HOME``, default ``~/.agentproto``), and its ``config.toml``.

Nothing here is ever read from the reviewed repository; docs/architecture.md ("State") lists what lives where.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

ENV_HOME = "AGENTREVIEW_HOME"


def home_dir() -> Path:
    value = os.environ.get(ENV_HOME)
    return Path(value).expanduser().resolve() if value else (Path.home() / ".agentproto").resolve()


def ledger_root(home: Path | None = None) -> Path:
    return (home or home_dir()) / "reviews"


def runs_dir(home: Path | None = None) -> Path:
    """The run registry: one record per run, readable by ``status``, ``cancel`` and the MCP server."""
    return (home or home_dir()) / "runs"


def keys_dir(home: Path | None = None) -> Path:
    return (home or home_dir()) / "keys"


def pack_cache_dir(home: Path | None = None) -> Path:
    return (home or home_dir()) / "review-packs"


def cache_dir(home: Path | None = None) -> Path:
    """Disposable caches: each file in it is checked before use and rebuilt when missing or wrong."""
    return (home or home_dir()) / "cache"


@lru_cache(maxsize=1)
def hostname() -> str:
    """The host's name, as ``gethostname(2)`` gives it (``uname``'s node name), without loading ``socket``."""
    return os.uname().nodename or "localhost"


def load_config(home: Path | None = None) -> dict[str, Any]:
    """Read ``config.toml`` (missing: empty), bounded, so a FIFO planted there cannot hang a command."""
    from agentreview.host.files import MissingFileError, read_regular_file

    path = (home or home_dir()) / "config.toml"
    try:
        data = read_regular_file(path)
    except MissingFileError:
        return {}
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    import tomllib  # here, not at the top: only a host with a config.toml parses one

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _unreadable(path, exc) from exc


def _unreadable(path: Path, exc: Exception) -> Exception:
    from agentreview.model.errors import AgentreviewError

    return AgentreviewError(f"{path}: cannot read configuration: {exc} — fix or remove the file")
