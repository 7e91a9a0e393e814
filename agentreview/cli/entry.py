"""Console entry point. ``--version`` is answered before anything heavy is imported."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from agentreview import __version__

        sys.stdout.write(f"agentreview {__version__}\n")
        return 0
    from agentreview.cli.app import run_app

    return run_app(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
