"""Cold start: every agentreview command a fresh process, against pre-commit.

    .venv/bin/python bench/bench_cold.py [--runs 15] [--warmup 2] [--json FILE]

What a user feels in a git hook or a CI step is a cold process: interpreter start-up, imports
and work. Every case is a fresh process of this virtualenv's interpreter with a fresh
``AGENTREVIEW_HOME`` under a temporary directory, runs are interleaved round-robin
(bench/run.py) and both baselines are taken in the same run as the commands they are compared
with:

* baseline 1, ``pre-commit run -a -c true.yaml``: 8 local ``language: system`` hooks of ``true``;
* baseline 2, ``pre-commit --version``;
* a cache hit, ``verify --require-signed`` of a signed export, a run of 8 ``true`` lanes
  (``--no-cache``: signed and recorded), the first command on a new manifest, and ``verify`` as
  a fresh CI runner runs it (an empty home before every run: no memo, no plugin listing),
  against 1;
* ``agentreview check`` and ``agentreview --version``, against 2.

The first command on a new manifest runs the same 8 lanes from a REVIEW.md outside the
repository (``--manifest``) rewritten with a new comment before every run, so its bytes, and
with them its manifestSha, ledger key and any memo keyed by the bytes, are new every time.

Before timing, every case runs once untimed and its output is checked (a cache hit must be one,
a no-cache run must be signed and not cached, ...): a command that fails aborts the bench with
its stderr instead of being timed. Prints one table per baseline, then one line per target;
exits 1 when a target misses.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import Case, Result, format_table, machine_line, measure, venv_python, venv_script  # noqa: E402

LANES = 8
RUN_BASELINE = "pre-commit run -a -c true.yaml"
VERSION_BASELINE = "pre-commit --version"
CACHE_HIT = "agentreview run (cache hit)"
VERIFY = "agentreview verify --require-signed"
NO_CACHE = "agentreview run --no-cache (8 × true, signed)"
NEW_MANIFEST = "agentreview run (new manifest)"
FRESH_VERIFY = "agentreview verify on a fresh runner (empty home)"
CHECK = "agentreview check"
VERSION = "agentreview --version"
FLOOR = "python -c pass"


@dataclass(frozen=True)
class Target:
    label: str
    baseline: str
    limit: float  # the largest allowed ratio of the label's median to the baseline's


TARGETS = (
    Target(CACHE_HIT, RUN_BASELINE, 0.75),
    Target(VERIFY, RUN_BASELINE, 1.0),
    Target(NO_CACHE, RUN_BASELINE, 1.25),
    Target(NEW_MANIFEST, RUN_BASELINE, 1.5),
    Target(FRESH_VERIFY, RUN_BASELINE, 1.5),  # a CI gate's first command: the same limit
    Target(CHECK, VERSION_BASELINE, 1.25),
    Target(VERSION, VERSION_BASELINE, 0.5),
)
# Each baseline's table: the baseline first, then what is compared with it.
TABLES = {
    RUN_BASELINE: (RUN_BASELINE, CACHE_HIT, VERIFY, NO_CACHE, NEW_MANIFEST, FRESH_VERIFY),
    VERSION_BASELINE: (VERSION_BASELINE, FLOOR, VERSION, CHECK),
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


def manifest(comment: str = "") -> str:
    """A REVIEW.md whose ``noop`` binding runs 8 ``true`` lanes; ``comment`` changes its bytes only."""
    checks = "".join(f"  - id: true{i}\n    kind: command\n    run: 'true'\n" for i in range(LANES))
    trues = ", ".join(f"true{i}" for i in range(LANES))
    note = f"# {comment}\n" if comment else ""
    return (
        f"---\n{note}kind: review\nid: bench\ntarget: {{ kind: git-range, base: main }}\nchecks:\n{checks}"
        f"bindings:\n  noop:\n    checks: [{trues}]\nverdict:\n  exportDir: .reviews\n---\n"
    )


def precommit_config() -> str:
    hooks = "".join(
        f"      - id: h{i}\n        name: h{i}\n        entry: 'true'\n        language: system\n"
        "        pass_filenames: false\n        always_run: true\n"
        for i in range(LANES)
    )
    return f"repos:\n  - repo: local\n    hooks:\n{hooks}"


class FreshManifest:
    """Rewrites one REVIEW.md outside the repository with bytes no earlier run has seen.

    A nonce per bench and a counter per write: nothing cached by an earlier bench, or by an
    earlier run of this one, can be keyed by these bytes.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.nonce = uuid.uuid4().hex
        self.shas: list[str] = []  # manifestSha of every version written

    def __call__(self) -> None:
        data = manifest(f"new manifest {self.nonce} #{len(self.shas) + 1}").encode()
        self.path.write_bytes(data)
        self.shas.append(hashlib.sha256(data).hexdigest())


class EmptyHome:
    """Makes ``path`` an empty AGENTREVIEW_HOME before every run, as on a fresh CI runner:
    no parse memo, no plugin listing, no ledger (verify needs none of them to decide)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir()


@dataclass(frozen=True)
class Workspace:
    """A feature branch one commit past main, a signed export of it, and the env every case runs in."""

    root: Path
    repo: Path
    home: Path
    env: dict[str, str]
    export_path: Path
    allowed_signers: Path
    fresh: FreshManifest


def cold_env(root: Path) -> dict[str, str]:
    """This environment without any AGENTREVIEW_ setting, and a fresh home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.update(
        AGENTREVIEW_HOME=str(root / "home"),
        PRE_COMMIT_HOME=str(root / "pre-commit-cache"),
        CI="true",
    )
    return env


def checked(argv: Sequence[str], cwd: Path, env: dict[str, str], what: str) -> str:
    """Run one untimed command; abort the bench with its stderr when it fails."""
    proc = subprocess.run(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        said = proc.stderr.strip() or proc.stdout.strip()[-2000:]  # --json reports its error on stdout
        raise SystemExit(f"bench: {what} exited {proc.returncode}: {said or 'no output'}")
    return proc.stdout


def run_json(argv: Sequence[str], cwd: Path, env: dict[str, str], what: str) -> dict[str, Any]:
    out = checked(argv, cwd, env, what)
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        raise SystemExit(f"bench: {what} printed no JSON result: {out[:200]!r}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"bench: {what} printed {type(data).__name__}, not a JSON object")
    return data


def setup(root: Path) -> Workspace:
    """The repository, one signed and exported run (so the cache hit has its entry), the trusted key."""
    repo = root / "repo"
    repo.mkdir()
    env = cold_env(root)
    agentreview = venv_script("agentreview")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.test")
    git(repo, "config", "user.name", "Bench")
    git(repo, "config", "commit.gpgsign", "false")
    (repo / "REVIEW.md").write_text(manifest())
    (repo / "true.yaml").write_text(precommit_config())
    git(repo, "add", "REVIEW.md", "true.yaml")
    git(repo, "commit", "-q", "-m", "init")
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "app.txt").write_text("change\n")
    git(repo, "add", "app.txt")
    git(repo, "commit", "-q", "-m", "change")
    first = run_json([agentreview, "run", "--json", "--binding", "noop", "--export"], repo, env, "the first run")
    export = first.get("exportPath")
    if first.get("verdict") != "pass" or not export:
        raise SystemExit(f"bench: the first run did not pass with an export: {first}")
    key = run_json([agentreview, "key", "--json"], repo, env, "agentreview key --json")
    signers = root / "allowed_signers"
    signers.write_text(str(key["allowedSignersLine"]) + "\n")
    fresh_dir = root / "elsewhere"
    fresh_dir.mkdir()
    home = Path(env["AGENTREVIEW_HOME"])
    return Workspace(root, repo, home, env, Path(export), signers, FreshManifest(fresh_dir / "REVIEW.md"))


def cases(ws: Workspace) -> list[Case]:
    agentreview = venv_script("agentreview")
    pre_commit = venv_script("pre-commit")
    run = [agentreview, "run", "--json", "--binding", "noop"]
    verify = [agentreview, "verify", str(ws.export_path), "--require-signed", "--allowed-signers"]

    def case(label: str, argv: list[str], before: Callable[[], object] | None = None) -> Case:
        return Case(label, argv, cwd=ws.repo, env=ws.env, before=before)

    runner_home = EmptyHome(ws.root / "runner-home")

    return [
        case(RUN_BASELINE, [pre_commit, "run", "-a", "-c", "true.yaml"]),
        case(VERSION_BASELINE, [pre_commit, "--version"]),
        case(FLOOR, [venv_python(), "-c", "pass"]),
        case(CACHE_HIT, run),
        case(VERIFY, [*verify, str(ws.allowed_signers)]),
        case(NO_CACHE, [*run, "--no-cache"]),
        case(NEW_MANIFEST, [*run, "--manifest", str(ws.fresh.path)], before=ws.fresh),
        Case(
            FRESH_VERIFY,
            [*verify, str(ws.allowed_signers)],
            cwd=ws.repo,
            env={**ws.env, "AGENTREVIEW_HOME": str(runner_home.path)},
            before=runner_home,
        ),
        case(CHECK, [agentreview, "check"]),
        case(VERSION, [agentreview, "--version"]),
    ]


def probe(ws: Workspace, all_cases: Sequence[Case]) -> None:
    """Run every case once, untimed, and check that it did what its label says."""
    for c in all_cases:
        if c.before is not None:
            c.before()
        if list(c.argv[1:3]) == ["run", "--json"]:
            result = run_json(c.argv, ws.repo, ws.env, f"'{c.label}'")
            attestation = result.get("attestation") or {}
            wanted_cached = c.label == CACHE_HIT
            if result.get("verdict") != "pass" or bool(result.get("cached")) != wanted_cached:
                raise SystemExit(f"bench: '{c.label}' should pass with cached={wanted_cached}: {result}")
            signed = bool((attestation.get("attestor") or {}).get("signature"))
            if not wanted_cached and (result.get("signingError") or not signed or not result.get("ledgerPath")):
                raise SystemExit(f"bench: '{c.label}' was not signed and recorded: {result.get('signingError')}")
        else:
            checked(c.argv, ws.repo, dict(c.env or ws.env), f"'{c.label}'")


def assert_new_manifests_ran(ws: Workspace) -> None:
    """Every version of the new manifest was reviewed and recorded under its own ledger key.

    A run served from a cache records nothing, so one ledger entry per version (the ledger's
    ``reviews/<remote>/<manifestSha>/<binding>/`` layout) shows that none of them was.
    """
    reviews = ws.home / "reviews"
    missing = [sha for sha in ws.fresh.shas if not any(reviews.glob(f"*/{sha}/noop/*.json"))]
    if missing or len(set(ws.fresh.shas)) != len(ws.fresh.shas):
        raise SystemExit(
            f"bench: {len(missing)} of {len(ws.fresh.shas)} new-manifest runs left no ledger entry under {reviews}"
        )


def ratio(results: dict[str, Result], label: str, baseline: str) -> float:
    return results[label].median / results[baseline].median


def report(results: list[Result], runs: int, warmup: int) -> tuple[list[str], list[dict[str, Any]]]:
    """The printed lines and the targets as data."""
    by_label = {r.case.label: r for r in results}
    lines = [f"Machine: {machine_line()}", ""]
    for baseline, labels in TABLES.items():
        lines += [f"Against `{baseline}` ({runs} runs each, {warmup} warm-up, interleaved):", ""]
        lines += [format_table([by_label[label] for label in labels], baseline=baseline), ""]
    targets = []
    for t in TARGETS:
        r = ratio(by_label, t.label, t.baseline)
        ok = r <= t.limit
        targets.append({"label": t.label, "baseline": t.baseline, "limit": t.limit, "ratio": r, "ok": ok})
        lines.append(f"target {t.label}: {r:.2f}x {t.baseline} (limit {t.limit:g}x) {'ok' if ok else 'MISSED'}")
    return lines, targets


def portable(argv: Sequence[str], root: Path) -> str:
    """A case's command line as docs can show it: scripts by name, the temporary directory as $TMP."""
    bindir = str(Path(sys.executable).parent) + os.sep
    return " ".join(a.replace(bindir, "").replace(str(root), "$TMP") for a in argv)


def as_json(results: list[Result], targets: list[dict[str, Any]], runs: int, warmup: int, root: Path) -> dict[str, Any]:
    return {
        "machine": machine_line(),
        "runs": runs,
        "warmup": warmup,
        "environment": "a fresh AGENTREVIEW_HOME=$TMP/home",
        "cases": [
            {
                "label": r.case.label,
                "command": portable(r.case.argv, root),
                "median_ms": round(r.median * 1000, 2),
                "min_ms": round(r.minimum * 1000, 2),
                "iqr_ms": round(r.spread * 1000, 2),
                "seconds": [round(s, 6) for s in r.seconds],
            }
            for r in results
        ],
        "targets": targets,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of every case (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs of every case first (default 2)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results to FILE")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    with tempfile.TemporaryDirectory(prefix="agentreview-bench-cold-") as tmp:
        ws = setup(Path(tmp))
        all_cases = cases(ws)
        probe(ws, all_cases)
        results = measure(all_cases, runs=args.runs, warmup=args.warmup)
        assert_new_manifests_ran(ws)
    lines, targets = report(results, args.runs, args.warmup)
    print("\n".join(lines))
    if args.json:
        data = as_json(results, targets, args.runs, args.warmup, ws.root)
        args.json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return 0 if all(t["ok"] for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
