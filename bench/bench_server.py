"""``agentreview run`` and ``verify`` through the warm server vs in-process vs pre-commit.

The warm server (``agentreview server start``) keeps typer, pydantic, the models and the plugins
imported and forks a child per command; the client that hands the command over is the normal
``agentreview`` console script importing only the standard library. This measures what that buys
on the cases of issue 3, with the repository and manifest of ``bench/bench_run.py`` (imported,
not copied). Every command is a fresh process; in-process runs set ``AGENTREVIEW_NO_SERVER=1``.

Cases (interleaved runs, same interpreter):

* a cache hit and ``verify --require-signed`` of a signed export, vs pre-commit's 8 ``true`` hooks;
* 8 lanes of ``true``, signed and recorded (``--no-cache``);
* 8 lanes of ``sleep 1`` vs the same pre-commit run;
* the client's own checks on every served start, timed in this process against the live server:
  the stamp (a stat of every file the server loaded), this process's context and the server's
  (read from /proc), and what a content hash of the same files would cost instead.

Run: ``.venv/bin/python bench/bench_server.py [--runs N]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_run import setup
from bench.run import Case, machine_line, measure, print_table, venv_script


def both(label: str, argv: list[str], repo: Path, env: dict[str, str]) -> list[Case]:
    """The same command through the server and in-process."""
    return [
        Case(f"{label} [server]", argv, repo, env),
        Case(f"{label} [in-process]", argv, repo, {**env, "AGENTREVIEW_NO_SERVER": "1"}),
    ]


def client_checks(env: dict[str, str], repeat: int = 300) -> None:
    """Microseconds per call of each check the client makes before it hands a command over (best of ten batches)."""
    from agentreview.server import client, context, protocol

    sock = client.connect(env)
    if sock is None:
        print("(no server answered: client checks not measured)")
        return
    with sock:
        hello = protocol.receive(sock, bytearray())
        assert hello is not None
        stamp = hello["stamp"]
        files = [path for path, _ in stamp["files"] if os.path.isfile(path)]

        def hash_all() -> None:
            for path in files:
                with open(path, "rb") as handle:
                    hashlib.blake2b(handle.read()).digest()

        cases = {
            f"stamp: fingerprint of {len(stamp['files'])} files and folders": lambda: client.stamp_matches(stamp),
            "this process's context (/proc/self)": context.own_context,
            "the server's context (/proc/<pid> through a pidfd)": lambda: context.peer_context(sock),
            f"instead of the stamp: blake2b of the {len(files)} files' contents": hash_all,
        }
        print("| client check | µs per start |\n|---|---:|")
        for label, call in cases.items():
            seconds = min(timeit.repeat(call, number=repeat // 10, repeat=10)) / (repeat // 10)
            print(f"| {label} | {seconds * 1e6:.0f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    agentreview = venv_script("agentreview")
    pre_commit = venv_script("pre-commit")
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-server-") as tmp:
        repo, env = setup(Path(tmp))
        local = {**env, "AGENTREVIEW_NO_SERVER": "1"}
        run = [agentreview, "run", "--json"]
        first = json.loads(subprocess.run([*run, "--binding", "noop", "--export"], cwd=repo, env=local,
                                          capture_output=True, text=True, check=True).stdout)
        key = json.loads(subprocess.run([agentreview, "key", "--json"], cwd=repo, env=local, capture_output=True,
                                        text=True, check=True).stdout)
        signers = Path(tmp) / "allowed_signers"
        signers.write_text(key["allowedSignersLine"] + "\n")
        subprocess.run([agentreview, "server", "start", "--idle-timeout", "600"], env=env, check=True, timeout=60)
        try:
            served = json.loads(subprocess.run([agentreview, "server", "status", "--json"], env=env,
                                               capture_output=True, text=True, check=True).stdout)
            print(f"# agentreview through the warm server — {machine_line()}\n")
            print(f"server pid {served['pid']}\n")
            print(f"Cache hit, verify, 8 lanes of `true` ({args.runs * 3} runs each):\n")
            verify = [agentreview, "verify", first["exportPath"], "--require-signed", "--allowed-signers", str(signers)]
            quick = measure(
                [
                    Case("pre-commit run (8 × true)", [pre_commit, "run", "-a", "-c", "true.yaml"], repo, env),
                    *both("agentreview run (cache hit)", [*run, "--binding", "noop"], repo, env),
                    *both("agentreview verify --require-signed", verify, repo, env),
                    *both("agentreview run (8 × true, signed, recorded)", [*run, "--binding", "noop", "--no-cache"],
                          repo, env),
                ],
                runs=args.runs * 3,
                warmup=2,
            )
            print_table(quick, baseline="pre-commit run (8 × true)")
            print(f"\n8 lanes of `sleep 1` ({args.runs} runs each):\n")
            sleeps = measure(
                [
                    Case("pre-commit run (8 × sleep 1)", [pre_commit, "run", "-a", "-c", "sleep.yaml"], repo, env),
                    *both("agentreview run (8 × sleep 1)", [*run, "--binding", "sleep", "--no-cache"], repo, env),
                ],
                runs=args.runs,
                warmup=1,
            )
            print_table(sleeps, baseline="pre-commit run (8 × sleep 1)")
            after = json.loads(subprocess.run([agentreview, "server", "status", "--json"], env=env,
                                              capture_output=True, text=True, check=True).stdout)
            if after.get("running"):
                print(f"\nthe server ran {after['served'] - served['served']} commands")
            else:  # a client found it stale (the checkout was edited meanwhile): later [server] rows ran in-process
                print("\nthe server was gone by the end (stale after an edit?): read its rows with care")
            print("\nThe client's checks on every served start:\n")
            subprocess.run([agentreview, "server", "start", "--idle-timeout", "600"], env=env, check=True,
                           timeout=60, capture_output=True)
            client_checks(env)
        finally:
            subprocess.run([agentreview, "server", "stop"], env=env, check=False, timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
