"""A shim in front of a REAL reviewer CLI that edits one thing in its stdout stream.

A real CLI cannot be made to print a field a later release adds or an unsafe value its own flags
rule out, so the real CLI runs unchanged and the shim applies the fixture ``shim.json`` beside it
(never the environment, which is what the provider under test decides) to what it prints.
"""

import json
import os
import subprocess
import sys


def main():
    with open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "shim.json")) as fh:
        fixture = json.load(fh)
    proc = subprocess.Popen([fixture["real"], *sys.argv[1:]], stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    wanted = fixture.get("subcommand")
    if wanted and sys.argv[1:2] != [wanted]:
        fixture = {"real": fixture["real"]}
    if not any(flag in sys.argv for flag in ("--help", "--version")):
        for line in fixture.get("before", []):
            out.write(line.encode() + b"\n")
    first = True
    for raw in proc.stdout:
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if isinstance(event, dict) and event.get("type") == "system" and event.get("subtype") == "init":
            raw = (json.dumps({**event, **fixture.get("init_extra", {})}) + "\n").encode()
        out.write(raw)
        if first:
            for line in fixture.get("after_first", []):
                out.write(line.encode() + b"\n")
            first = False
        out.flush()
    return proc.wait()


sys.exit(main())
