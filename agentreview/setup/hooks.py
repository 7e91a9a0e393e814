"""The pre-push hook, where git runs hooks, chaining whatever hook was already there.

The folder is git's own answer (``core.hooksPath`` by ``--show-scope``, ignoring the runner's ``command`` scope);
an existing hook moves aside to ``pre-push.local`` and runs first.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from agentreview.host import git as repo
from agentreview.setup.writer import Outcome, place, shown

__all__ = ["HOOK_MARKER", "agentreview_command", "hooks_dir", "install_pre_push", "render_hook"]

HOOK_MARKER = "# agentreview init: pre-push hook"
CHAINED = "pre-push.local"
GONE = (
    "agentreview pre-push hook: $agentreview (which ran 'agentreview init') is gone or moved; "
    "run 'agentreview init --force' with the agentreview you use now (or push with --no-verify to skip the review)"
)


def agentreview_command() -> list[str]:
    """How the hook starts agentreview without PATH: the interpreter running ``init`` (a virtualenv's
    ``bin/python`` kept as named, not resolved, so its packages come with it) with ``-m agentreview``;
    a frozen build's own executable."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "agentreview"]


def render_hook(command: list[str] | None = None) -> str:
    argv = command or agentreview_command()
    program = shlex.quote(argv[0])
    rest = " ".join(shlex.quote(arg) for arg in argv[1:])
    return f"""\
#!/bin/sh
{HOOK_MARKER}
# Reviews exactly what is pushed with REVIEW.md's `local` binding: each ref git names on stdin
# (deletions and tags are not reviewed). A block (1), incomplete (2) or could-not-run (3) stops the
# push. The hook that was here before runs first, from pre-push.local, with the same arguments and
# stdin. agentreview is started by the path `agentreview init` ran from, not from PATH.
# `agentreview init` recognises this file by the line above and rewrites it only with --force.
agentreview={program}
if [ ! -x "$agentreview" ]; then
    echo "{GONE}" >&2
    exit 3
fi
pushed=$(cat)
hook_dir=$(dirname "$0")
if [ -x "$hook_dir/{CHAINED}" ]; then
    printf '%s\\n' "$pushed" | "$hook_dir/{CHAINED}" "$@" || exit $?
fi
printf '%s\\n' "$pushed" | "$agentreview" {rest}{" " if rest else ""}run --binding local --supersede --pre-push
"""


# The hook earlier versions wrote: it found agentreview on PATH and ignored the pushed refs. init
# replaces it without --force, as no edit of the user's is lost.
_EARLIER_HOOK = f"""\
#!/bin/sh
{HOOK_MARKER}
# Reviews the commits being pushed with REVIEW.md's `local` binding: a block (1), incomplete (2)
# or could-not-run (3) stops the push. The hook that was here before runs first, from
# pre-push.local, with the same arguments and stdin. `agentreview init` recognises this file by
# the line above and rewrites it only with --force.
hook_dir=$(dirname "$0")
if [ -x "$hook_dir/{CHAINED}" ]; then
    "$hook_dir/{CHAINED}" "$@" || exit $?
fi
exec agentreview run --binding local --supersede </dev/null
"""


def hooks_dir(root: Path) -> Path:
    """The folder git runs this repository's hooks from."""
    proc = repo.git(["config", "--show-scope", "--type=path", "--get-all", "core.hooksPath"], root, check=False)
    configured = None
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        scope, _, value = line.partition("\t")
        if scope != "command" and value:
            configured = value
    if configured:
        path = Path(configured)
        return path if path.is_absolute() else root / path
    common = Path(repo.git(["rev-parse", "--git-common-dir"], root).stdout.strip())
    return (common if common.is_absolute() else root / common) / "hooks"


def install_pre_push(root: Path, *, force: bool) -> Outcome:
    """Install (or recognise) the pre-push hook; the outcome names the hook's path."""
    folder = hooks_dir(root)
    hook = folder / "pre-push"
    chained = folder / CHAINED
    data = render_hook().encode()
    name = shown(hook, root)
    if os.path.lexists(hook):
        try:
            ours = HOOK_MARKER.encode() in hook.read_bytes()[:4096]
        except OSError:
            ours = False
        if ours:
            earlier = _is_earlier_hook(hook)
            result = place(hook, data, root=root, force=force or earlier, mode=0o755, confine=False)
            if earlier and result.status == "written":
                return Outcome(result.path, "written", "replaced the earlier hook that ignored the pushed refs")
            return result
        if os.path.lexists(chained):
            return Outcome(
                name,
                "skipped",
                f"a pre-push hook of yours is there and {CHAINED} is taken too; not touched — "
                f"add `agentreview run --binding local --pre-push` to your hook",
            )
        os.rename(hook, chained)
        result = place(hook, data, root=root, force=False, mode=0o755, confine=False)
        return Outcome(result.path, result.status, f"the hook that was there runs first, as {shown(chained, root)}")
    folder.mkdir(parents=True, exist_ok=True)
    return place(hook, data, root=root, force=force, mode=0o755, confine=False)


def _is_earlier_hook(hook: Path) -> bool:
    try:
        return hook.read_bytes() == _EARLIER_HOOK.encode()
    except OSError:
        return False
