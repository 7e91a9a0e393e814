"""``agentreview run`` and ``verify`` through the warm server vs in-process vs pre-commit.

The warm server (``agentreview server start``) keeps typer, pydantic, the models and the plugins
imported and forks a child per command; the client that hands the command over is the normal
``agentreview`` console script importing only the standard library. This measures what that buys
on the cases of issue 3, with the repository and manifest of ``bench/bench_run.py`` (imported,
not copied). Every command is a fresh process; in-process runs set ``AGENTREVIEW_NO_SERVER=1``.

Cases (interleaved runs, same interpreter):

* a cache hit and ``verify --require-signed`` of a signed export, vs pre-commit's 8 ``true`` hooks;
* 8 lanes of ``true``, signed and recorded (``--no-cache``);
* 8 lanes of ``sleep 1`` vs the same pre-commit run.

Run: ``.venv/bin/python bench/bench_server.py [--runs N]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
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
            print(f"\nthe server ran {after['served'] - served['served']} commands")
        finally:
            subprocess.run([agentreview, "server", "stop"], env=env, check=False, timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
