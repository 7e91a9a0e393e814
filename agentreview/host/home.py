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
    import socket

    return socket.gethostname() or "localhost"


def load_config(home: Path | None = None) -> dict[str, Any]:
    """Read ``config.toml``; a missing file is an empty configuration.

    Read with the bounded regular-file reader, so a FIFO or device planted in its place is
    refused at once instead of hanging every command that signs.
    """
    import tomllib  # here, not at the top: most commands never read the configuration

    from agentreview.host.files import MissingFileError, read_regular_file

    path = (home or home_dir()) / "config.toml"
    try:
        return tomllib.loads(read_regular_file(path).decode("utf-8"))
    except MissingFileError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        from agentreview.model.errors import AgentreviewError

        raise AgentreviewError(f"{path}: cannot read configuration: {exc} — fix or remove the file") from exc
