"""What the fake reviewer CLIs share: argv lookup, JSON-line output, ``--help`` text, the test's
settings, and the run record.

A fake takes its settings from ``control.json`` beside it, never from its environment: the
environment is what the provider under test decides, and each run records all of it.
"""

import json
import os
import re
import sys


def control(key, default=None):
    """The test's setting ``key`` (``FakeCli.play``) from ``control.json`` in the fake's own directory."""
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "control.json")
    try:
        with open(path) as fh:
            return json.load(fh).get(key, default)
    except FileNotFoundError:
        return default


def arg(argv, *flags, default=None):
    """The value after the first of ``flags`` that ``argv`` holds, else ``default``."""
    for flag in flags:
        if flag in argv:
            return argv[argv.index(flag) + 1]
    return default


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _append(key, entry):
    path = control(key)
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")


def print_help(text):
    """Print ``text`` without the flags the test drops (an older CLI that lacks them); the probe's
    argv and environment go to the ``probes`` record."""
    _append("probes", {"argv": sys.argv[1:], "env": dict(os.environ)})
    for flag in filter(None, control("help_drop", "").split(",")):
        text = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", "", text)
    print(text)


def top_listing(directory):
    """Each entry directly in ``directory``: ``link:<target>`` for a symlink, else ``file``."""
    return {
        n: ("link:" + os.readlink(os.path.join(directory, n))) if os.path.islink(os.path.join(directory, n)) else "file"
        for n in sorted(os.listdir(directory))
    }


def record(**fields):
    """Append one run to the ``record``: ``fields`` plus the whole environment the fake was given."""
    _append("record", {**fields, "env": dict(os.environ)})
