"""Benchmark: resolving a manifest that imports 10 git packs from the verified cache.

Starts the test suite's HTTPS git server on 127.0.0.1 (throw-away certificate),
publishes 10 packs, resolves once to fill the cache (the first cold fetch in the
process, one-time costs included), repeats the cold fetch into fresh homes (median
reported), stops the server, then times warm resolutions — each one re-verifies
all 10 cache entries against their pinned shas, parses the packs, reads the
rubrics through the confined reader and computes the digests. Target: < 150 ms
for the whole manifest.

    .venv/bin/python bench/bench_packs.py [--runs 20] [--cold-runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from https_git_server import GitHttpsServer, init_repo, self_signed_cert
from pack_helpers import consumer

PACKS = 10
TARGET_MS = 150.0


def pack_files(n: int) -> dict[str, str]:
    review = f"""---
kind: review-pack
id: pack-{n}
version: 1.0.{n}
checks:
  - id: correctness
    kind: agent
    rubric: rubrics/correctness.md
  - id: security
    kind: agent
    rubric: rubrics/security.md
---
"""
    files = {"REVIEW.md": review, "README.md": "# pack\n" * 50}
    files |= {f"rubrics/{name}.md": f"Rubric {name} {n}\n" * 40 for name in ("correctness", "security")}
    files |= {f"docs/page-{i}.md": f"doc {i}\n" * 20 for i in range(10)}
    return files


def manifest(refs: list[str]) -> str:
    uses = "\n".join(f'  - pack: "{ref}"\n    as: p{i}\n    preset: exec' for i, ref in enumerate(refs))
    return consumer(uses, ", ".join(["types", *(f"p{i}/correctness" for i in range(len(refs)))]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=5, help="further cold fetches into fresh homes")
    args = parser.parse_args()

    from agentreview_packs_git.plugin import GitPackLoader

    from agentreview.manifest.parse import parse_review
    from agentreview.model.contracts import PackLoadContext
    from agentreview.packs.resolve import resolve_review
    from agentreview.plugins.registry import load_registry

    with tempfile.TemporaryDirectory(prefix="bench-packs-") as tmp_name:
        tmp = Path(tmp_name)
        cert, key = self_signed_cert(tmp)
        os.environ["GIT_SSL_CAINFO"] = str(cert)
        home = tmp / "home"
        os.environ["AGENTREVIEW_HOME"] = str(home)
        (tmp / "server").mkdir()
        server = GitHttpsServer(project_root=tmp / "server", work_root=tmp / "work", ca_file=cert)
        server.start(cert, key)
        refs = [server.ref(f"pack-{n}", server.make_repo(f"pack-{n}", pack_files(n))) for n in range(PACKS)]
        repo = init_repo(tmp / "repo", {"README": "bench\n"})
        path = repo / "REVIEW.md"
        path.write_text(manifest(refs))

        t0 = time.perf_counter()
        registry = load_registry()
        registry_ms = (time.perf_counter() - t0) * 1000
        ctx = PackLoadContext(repo_root=repo, manifest_dir=repo, home=home)

        def resolve_once(context: PackLoadContext = ctx) -> tuple[float, float]:
            start = time.perf_counter()
            parsed = parse_review(path.read_bytes(), path)
            mid = time.perf_counter()
            resolve_review(parsed, registry=registry, ctx=context)
            end = time.perf_counter()
            return (end - start) * 1000, (end - mid) * 1000

        cold_total, cold_resolve = resolve_once()
        colds = [
            resolve_once(PackLoadContext(repo_root=repo, manifest_dir=repo, home=tmp / f"cold-home-{i}"))[0]
            for i in range(args.cold_runs)
        ]
        server.stop()  # warm runs must not need the network
        warm = [resolve_once() for _ in range(args.runs)]
        loader = GitPackLoader()
        t0 = time.perf_counter()
        for ref in refs:
            loader.load(ref, ctx)
        verify_ms = (time.perf_counter() - t0) * 1000

    totals = [w[0] for w in warm]
    resolves = [w[1] for w in warm]
    rows = [
        ("plugin registry load (once per process)", registry_ms),
        ("cold: parse + resolve, 10 packs fetched over HTTPS", cold_total),
        ("cold: resolve only", cold_resolve),
        *(
            [(f"cold again, fresh home: parse + resolve, median of {len(colds)}", statistics.median(colds))]
            if colds
            else []
        ),
        (f"warm: parse + resolve, median of {args.runs}", statistics.median(totals)),
        ("warm: parse + resolve, min", min(totals)),
        ("warm: parse + resolve, max", max(totals)),
        (f"warm: resolve only, median of {args.runs}", statistics.median(resolves)),
        ("warm: 10 cache hits verified (loader only)", verify_ms),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measurement':<{width}}  {'ms':>9}")
    print(f"{'-' * width}  {'-' * 9}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:9.1f}")
    verdict = "OK" if statistics.median(totals) < TARGET_MS else "OVER TARGET"
    print(f"\ntarget: warm resolution of {PACKS} cached git packs < {TARGET_MS:.0f} ms — {verdict}")
    return 0 if verdict == "OK" else 1


if __name__ == "__main__":
    raise SystemExit(main())
