"""Ledger at scale: 100,000 entries, a cache lookup, and ``agentreview ledger --limit 50`` as a whole process.

Run:  .venv/bin/python bench/bench_ledger.py [--entries N] [--repeat R] [--keep]

Entries are written straight to disk (as a host without the index would), spread
over 20 repositories x 5 manifests x 2 bindings. The first ``ledger`` call builds
the index from the files; the later ones measure the steady state. Targets: a
cache lookup adds < 50 ms; ``ledger --limit 50`` stays within 1.5x of
``pre-commit --version`` (both whole processes, median of R runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentreview.host.git import repo_slug
from agentreview.model.attestation import Attestation
from agentreview.model.digests import range_sha
from agentreview.store.ledger import Ledger

REPOS, MANIFESTS, BINDINGS = 20, 5, ("default", "ci")
RUBRICS = [{"check": "correctness", "path": "rubrics/correctness.md", "sha256": "b" * 64}]
BIN = Path(sys.executable).parent


def template() -> dict:
    att = Attestation.build(
        run_id="review-template", review_id="widgets", manifest_sha="0" * 64, binding="default",
        repo_remote="github.com/acme/r0", base_sha="1" * 40, head_sha="2" * 40,
        lanes=[
            {"id": "types", "kind": "command", "status": "pass", "blocking": True, "findings": [],
             "durationMs": 41250, "exitCode": 0},
            {"id": "correctness", "kind": "agent", "status": "pass", "blocking": True, "findings": [
                {"severity": "low", "title": "naming", "detail": "a helper could be clearer", "file": "a.py",
                 "line": 3}], "durationMs": 90000, "preset": "claude", "sessionId": "s-1", "summary": "looks fine"},
        ],
        daemon="agentreview@bench", rubrics=RUBRICS,
    )
    return att.to_json_dict()


def populate(root: Path, count: int) -> list[tuple[str, str, str, str]]:
    """Write ``count`` entry files directly; return a few keys to look up."""
    base_doc = template()
    keys = []
    per_leaf = max(1, count // (REPOS * MANIFESTS * len(BINDINGS)))
    n = 0
    while n < count:
        for r in range(REPOS):
            remote = f"github.com/acme/r{r}"
            for m in range(MANIFESTS):
                msha = f"{m:064x}"
                for binding in BINDINGS:
                    leaf = root / repo_slug(remote) / msha / binding
                    leaf.mkdir(parents=True, exist_ok=True)
                    for _ in range(per_leaf):
                        if n >= count:
                            break
                        head = f"{n:040x}"
                        rsha = range_sha("1" * 40, head)
                        doc = dict(base_doc)
                        doc.update(runId=f"review-{n:08d}", manifestSha=msha, binding=binding, rangeSha=rsha,
                                   target={"repoRemote": remote, "baseSha": "1" * 40, "headSha": head},
                                   createdAt=f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T00:00:00.{n % 1000:03d}Z")
                        entry = {"attestation": doc, "host": {"repoRoot": f"/src/r{r}", "manifestPath": "/x"}}
                        (leaf / f"{rsha}.json").write_text(json.dumps(entry, indent=2) + "\n")
                        if n % max(1, count // 10) == 0:
                            keys.append((remote, msha, binding, rsha))
                        n += 1
    return keys


def run_ms(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed


def median_ms(argv: list[str], env: dict[str, str], repeat: int) -> float:
    run_ms(argv, env)  # one warm-up (page cache, .pyc)
    return statistics.median(run_ms(argv, env) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary home")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="agentreview-bench-"))
    # Byte-code caching on, into the temporary home: an installed agentreview has its .pyc
    # files like pre-commit does, and a PYTHONDONTWRITEBYTECODE environment would otherwise
    # make every agentreview process recompile its sources and skew the comparison.
    env = {**os.environ, "AGENTREVIEW_HOME": str(home), "PYTHONPYCACHEPREFIX": str(home / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    root = home / "reviews"
    results: list[tuple[str, str]] = []
    try:
        t0 = time.perf_counter()
        keys = populate(root, args.entries)
        results.append((f"write {args.entries:,} entry files", f"{time.perf_counter() - t0:8.2f} s"))

        ledger_cmd = [str(BIN / "agentreview"), "ledger", "--limit", "50"]
        t0 = time.perf_counter()
        run_ms(ledger_cmd, env)
        results.append(("first `ledger --limit 50` (builds the index)", f"{time.perf_counter() - t0:8.2f} s"))

        precommit = median_ms([str(BIN / "pre-commit"), "--version"], env, args.repeat)
        ledger_ms = median_ms(ledger_cmd, env, args.repeat)
        repo_ms = median_ms([*ledger_cmd, "--repo", "github.com/acme/r7", "--json"], env, args.repeat)
        version_ms = median_ms([str(BIN / "agentreview"), "--version"], env, args.repeat)
        # The CLI floor: the same process (typer, argument parsing) without touching the ledger.
        help_ms = median_ms([*ledger_cmd, "--help"], env, args.repeat)
        results += [
            ("`pre-commit --version` (median)", f"{precommit:8.1f} ms"),
            ("`agentreview --version` (median)", f"{version_ms:8.1f} ms"),
            ("`agentreview ledger --help` (median, CLI floor)", f"{help_ms:8.1f} ms  ({help_ms / precommit:.2f}x)"),
            ("`agentreview ledger --limit 50` (median)", f"{ledger_ms:8.1f} ms  ({ledger_ms / precommit:.2f}x)"),
            ("`ledger --limit 50 --repo R --json` (median)", f"{repo_ms:8.1f} ms  ({repo_ms / precommit:.2f}x)"),
        ]

        # A cache lookup in the runner's process (pydantic and the attestation model already imported).
        led = Ledger(root)
        rubrics = RUBRICS
        first = time.perf_counter()
        assert led.lookup_cached(*keys[0], rubrics, []) is not None
        first_ms = (time.perf_counter() - first) * 1000
        timings = []
        for key in keys * 5:
            start = time.perf_counter()
            assert led.lookup_cached(*key, rubrics, []) is not None
            timings.append((time.perf_counter() - start) * 1000)
        miss = time.perf_counter()
        assert led.lookup_cached(keys[0][0], keys[0][1], keys[0][2], "f" * 64, rubrics, []) is None
        miss_ms = (time.perf_counter() - miss) * 1000
        results += [
            ("cache lookup, first in process", f"{first_ms:8.2f} ms"),
            (f"cache lookup, hit (median of {len(timings)})", f"{statistics.median(timings):8.2f} ms"),
            ("cache lookup, miss", f"{miss_ms:8.2f} ms"),
        ]

        # Composition input and a list right after a put (one leaf re-listed).
        start = time.perf_counter()
        cands = list(led.candidates(*keys[1][:3]))
        elapsed = (time.perf_counter() - start) * 1000
        results.append((f"candidates() for one key prefix ({len(cands)} parsed)", f"{elapsed:8.1f} ms"))
        fresh = Attestation.read({**template(), "runId": "review-new", "createdAt": "2030-01-01T00:00:00.000Z"})
        led.put(fresh, {"repoRoot": "/src/r0", "manifestPath": "/x"})
        start = time.perf_counter()
        rows = led.list(limit=50)
        results.append(("list(limit=50) right after a put", f"{(time.perf_counter() - start) * 1000:8.1f} ms"))
        assert rows[0].run_id == "review-new"
        start = time.perf_counter()
        led.list(limit=50)
        results.append(("list(limit=50) in process, steady", f"{(time.perf_counter() - start) * 1000:8.1f} ms"))
        led.close()
    finally:
        if args.keep:
            print(f"kept {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)

    width = max(len(name) for name, _ in results)
    print(f"{'measure'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 24}")
    for name, value in results:
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
