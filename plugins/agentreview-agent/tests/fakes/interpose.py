"""An interposer in front of a fake reviewer CLI, for what no real CLI can be made to do on demand.

Installed as ``<name>-interposed`` beside the fake; without a setting it runs the fake unchanged.
``control("interpose")`` may ``reject`` an argv value (as Codex refuses a ``-c`` it cannot load),
fail ``host_path`` or ``auth`` runs, ``refresh`` a credential by rename, or ``stall`` mid-stream.
"""

import json
import os
import subprocess
import sys
import time

from fakelib import control, record

HOST_PATH = "Error: failed to initialize in-process app-server client: Operation not permitted (os error 1)"


def _count(key):
    """How many review runs have used the ``key`` budget so far (kept beside control.json)."""
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), f"interpose-{key}.count")
    try:
        with open(path) as fh:
            used = int(fh.read() or 0)
    except FileNotFoundError:
        used = 0
    with open(path, "w") as fh:
        fh.write(str(used + 1))
    return used


def main():
    argv = sys.argv[1:]
    fake = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), os.path.basename(sys.argv[0]).split("-")[0])
    settings = control("interpose", {}) or {}
    probing = argv == ["--version"] or "--help" in argv or argv[:2] in (["features", "list"], ["debug", "agent"])
    if not probing and argv[:1] != ["export"]:
        reject = settings.get("reject")
        if reject and any(reject in part for part in argv):
            record(argv=argv, interposed="rejected")
            print(f"Error loading config.toml: unknown variant `{reject}`", file=sys.stderr)
            return 1
        if _count("host_path") < settings.get("host_path", 0):
            record(argv=argv, interposed="host_path")
            print(HOST_PATH, file=sys.stderr)
            return 1
        if settings.get("stall"):
            record(argv=argv, interposed="stall")
            sys.stdout.write(json.dumps(settings["stall"]) + "\n")
            sys.stdout.flush()
            time.sleep(300)
            return 1
    env = dict(os.environ)
    if not probing and _count("auth") < settings.get("auth", 0):
        control_path = os.path.join(os.path.dirname(fake), "control.json")
        with open(control_path) as fh:
            saved = fh.read()
        with open(control_path, "w") as fh:
            fh.write(json.dumps({**json.loads(saved), "scenario": "auth"}))
        try:
            proc = subprocess.run([fake, *argv], stdin=sys.stdin, env=env, check=False)
        finally:
            with open(control_path, "w") as fh:
                fh.write(saved)
        return proc.returncode
    proc = subprocess.run([fake, *argv], stdin=sys.stdin, env=env, check=False)
    refresh = settings.get("refresh")
    if refresh and not probing:
        directory = os.environ[refresh["dir_env"]]
        tmp = os.path.join(directory, refresh["name"] + ".tmp")
        with open(tmp, "w") as fh:
            fh.write(json.dumps(refresh["content"]))
        os.rename(tmp, os.path.join(directory, refresh["name"]))
    return proc.returncode


sys.exit(main())
