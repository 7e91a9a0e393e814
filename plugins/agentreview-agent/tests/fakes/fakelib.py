"""What the fake reviewer CLIs share: argv lookup, JSON-line output, ``--help`` text, and the run record.

The conftest's ``fake_cli`` installs each ``fake_<name>.py`` on PATH with this folder on
its ``sys.path``, so the fakes import this module as ``fakelib``.
"""

import json
import os
import re
import sys


def arg(argv, *flags, default=None):
    """The value after the first of ``flags`` that ``argv`` holds, else ``default``."""
    for flag in flags:
        if flag in argv:
            return argv[argv.index(flag) + 1]
    return default


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def print_help(text):
    """Print ``text`` without the flags named in ``$FAKE_HELP_DROP`` (an older CLI that lacks them)."""
    for flag in filter(None, os.environ.get("FAKE_HELP_DROP", "").split(",")):
        text = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", "", text)
    print(text)


def top_listing(directory):
    """Each entry directly in ``directory``: ``link:<target>`` for a symlink, else ``file``."""
    return {
        n: ("link:" + os.readlink(os.path.join(directory, n))) if os.path.islink(os.path.join(directory, n)) else "file"
        for n in sorted(os.listdir(directory))
    }


def record(env_prefixes, **fields):
    """Append one run to ``$FAKE_RECORD``: ``fields`` plus the environment variables starting with ``env_prefixes``."""
    path = os.environ.get("FAKE_RECORD")
    if path:
        env = {k: v for k, v in os.environ.items() if k.startswith(env_prefixes)}
        with open(path, "a") as fh:
            fh.write(json.dumps({**fields, "env": env}) + "\n")
