"""A host after a year of reviews: what each command costs at 20, 10,000 and 100,000 ledger entries.

Run:  .venv/bin/python bench/bench_scale.py [--sizes 20,10000,100000] [--notes 10000] [--repeat 5] [--keep]

One repository (a clone of a bare remote) whose REVIEW.md has a command binding and an agent
binding; the agent lane's reviewer is an ``exec`` preset running a tiny script that approves
(a real process, no model: what is measured is the host's work around it). For each size a
fresh home is filled like this: one real ``agentreview run`` records an entry, and that entry,
read back by the ledger, is the template of the others: each copy changes the head, rangeSha,
runId and createdAt, is read with the attestation model and written with ``entry_text`` (the
function ``Ledger.put`` writes with) at the path ``entry_path`` names, without the per-entry
fsync and lock; ``ledger --reindex`` then indexes them. All copies sit under the runs' own
repository, manifest, binding and base, on heads that are siblings of the reviewed line: the
worst case for finding a composition prior. The bare remote's notes ref holds ``--notes``
attestations, one per commit of a side branch of the same repository.

Each row is the median of ``--repeat`` whole processes (a miss gets a new commit each time),
with the largest peak RSS among them (wait4), beside the bare git commands a step needs.
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
from collections.abc import Sequence
from pathlib import Path

from agentreview.model.attestation import Attestation
from agentreview.model.digests import canonical_json, range_sha
from agentreview.store.entries import HostInfo, entry_text
from agentreview.store.layout import LedgerKey, entry_path

BIN = Path(sys.executable).parent
NOTES = "refs/notes/agentreview"
REVIEWER = """
import json, os, sys
sys.stdin.read()
with open(os.environ["AGENTREVIEW_VERDICT_PATH"], "w") as fh:
    json.dump({"decision": "approve", "summary": "ok", "findings": []}, fh)
"""
MANIFEST = """---
kind: review
id: scale
target: { kind: git-range, base: main }
checks:
  - id: tests
    kind: command
    run: 'true'
  - id: review
    kind: agent
    preset: rev
    rubric: ./rubric.md
bindings:
  cmd: {checks: [tests]}
  agent: {checks: [review]}
---

# scale
"""
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "b",
           "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}


def git(cwd: Path, *args: str, data: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=True, timeout=600,
                          env={**os.environ, **GIT_ENV})
    return proc.stdout.decode().strip()


class Timed:
    """Whole-process samples of one step: wall milliseconds and peak RSS (MiB)."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.rss: list[float] = []

    def run(self, argv: Sequence[str], cwd: Path, env: dict[str, str], *, ok: Sequence[int] = (0,)) -> str:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            self.ms.append((time.perf_counter() - start) * 1000)
            self.rss.append(usage.ru_maxrss / 1024)
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            text = out.read().decode()
            if proc.returncode not in ok:
                raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err.read().decode()[-2000:]}")
        return text

    @property
    def median(self) -> float:
        return statistics.median(self.ms) if self.ms else float("nan")

    @property
    def peak(self) -> float:
        return max(self.rss) if self.rss else float("nan")


class Bench:
    def __init__(self, tmp: Path, notes: int, repeat: int):
        self.tmp, self.repeat, self.notes = tmp, repeat, notes
        self.bare, self.clone = tmp / "remote.git", tmp / "clone"
        self.script = tmp / "reviewer.py"
        self.branch = 0

    # ------------------------------------------------------------------ the repository

    def setup(self) -> None:
        origin = self.tmp / "origin"
        origin.mkdir()
        git(origin, "init", "-q", "-b", "main")
        (origin / "README.md").write_text("hello\n")
        (origin / "rubric.md").write_text("look for bugs\n")
        (origin / "REVIEW.md").write_text(MANIFEST)
        git(origin, "add", "-A")
        git(origin, "commit", "-q", "-m", "initial")
        # a side branch of ``notes`` commits (fast-import: seconds for 10,000), annotated later
        base = git(origin, "rev-parse", "HEAD")
        stream = [f"reset refs/heads/history\nfrom {base}\n"]
        for n in range(self.notes):
            msg = f"history {n}"
            stream.append(f"commit refs/heads/history\nmark :{n + 1}\n"
                          f"committer b <b@example.com> {1700000000 + n} +0000\ndata {len(msg)}\n{msg}\n")
        git(origin, "fast-import", "--quiet", data="".join(stream).encode())
        git(self.tmp, "init", "-q", "--bare", "-b", "main", str(self.bare))
        git(origin, "push", "-q", str(self.bare), "main", "history")
        git(self.tmp, "clone", "-q", str(self.bare), str(self.clone))
        git(self.clone, "fetch", "-q", "origin", "history:history")
        self.script.write_text(REVIEWER)

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
        env.update(GIT_ENV)
        env.update({"AGENTREVIEW_HOME": str(home), "CI": "true", "PYTHONPYCACHEPREFIX": str(self.tmp / "pycache")})
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return env

    def home(self, name: str) -> Path:
        home = self.tmp / name
        home.mkdir()
        (home / "presets.toml").write_text(
            f'[presets.rev]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(self.script)])}\n'
        )
        return home

    def new_line(self) -> str:
        """A new branch off main with one commit: a head no entry has reviewed, and no prior on its line."""
        self.branch += 1
        git(self.clone, "switch", "-q", "-c", f"line-{self.branch}", "main")
        return self.commit()

    def commit(self) -> str:
        self.branch += 1
        (self.clone / f"f{self.branch}.txt").write_text(f"{self.branch}\n")
        git(self.clone, "add", "-A")
        git(self.clone, "commit", "-q", "-m", f"change {self.branch}")
        return git(self.clone, "rev-parse", "HEAD")

    def agentreview(self, *args: str) -> list[str]:
        return [str(BIN / "agentreview"), *args]

    # ------------------------------------------------------------------ filling a home

    def notes_ref(self, template: dict) -> None:
        """``notes`` attestations pushed to the bare remote, one per commit of the side branch."""
        commits = git(self.clone, "rev-list", "--reverse", "history").split()[1:]  # main's commit excluded
        base = git(self.clone, "rev-parse", "main")
        stream = []
        for n, commit in enumerate(commits[: self.notes]):
            att = copy_of(template, base, commit, f"review-note{n:06d}", f"2024-06-01T00:00:00.{n % 1000:03d}Z")
            line = canonical_json(att) + b"\n"
            stream.append(f"blob\nmark :{n + 1}\ndata {len(line)}\n".encode() + line + b"\n")
        stream.append(b"commit " + NOTES.encode() + b"\ncommitter b <b@example.com> 1700000000 +0000\ndata 5\nnotes\n")
        stream.extend(f"N :{n + 1} {commit}\n".encode() for n, commit in enumerate(commits[: self.notes]))
        git(self.clone, "fast-import", "--quiet", data=b"".join(stream))
        git(self.clone, "push", "-q", "origin", NOTES)
        git(self.clone, "update-ref", "-d", NOTES)


def copy_of(template: dict, base: str, head: str, run_id: str, created: str) -> dict:
    att = json.loads(json.dumps(template))
    att["target"]["baseSha"], att["target"]["headSha"] = base, head
    att["rangeSha"], att["runId"], att["createdAt"] = range_sha(base, head), run_id, created
    att["attestor"].pop("signature", None)
    return att


def populate(root: Path, template: dict, host: HostInfo, count: int) -> None:
    """``count`` copies of ``template`` on sibling heads of the same base (see the module docstring)."""
    base = template["target"]["baseSha"]
    for n in range(count):
        head = f"{n + 1:040x}"
        created = f"2025-{1 + n // 2_000_000:02d}-01T00:00:00.{n % 1000:03d}Z"
        att = Attestation.read(copy_of(template, base, head, f"review-bench{n:07d}", created))
        path = entry_path(root, LedgerKey.of(att))
        if n == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(entry_text(att, host))


def make_template(bench: Bench) -> dict:
    """The attestation one real agent-lane run records (in a scratch home): what every copy is made of."""
    home = bench.home("home-template")
    bench.new_line()
    first = json.loads(Timed().run(bench.agentreview("run", "--json", "--binding", "agent"), bench.clone,
                                   bench.env(home)))
    template: dict = json.loads(Path(first["ledgerPath"]).read_text())["attestation"]
    return template


def measure_size(bench: Bench, size: int, template: dict) -> dict[str, Timed]:
    """Every step at one ledger size."""
    home = bench.home(f"home-{size}")
    env = bench.env(home)
    run = bench.agentreview
    rows: dict[str, Timed] = {}

    def step(name: str) -> Timed:
        return rows.setdefault(name, Timed())

    # one real run records the first entry (and, the first time, the template of all the others)
    bench.new_line()
    first = json.loads(Timed().run(run("run", "--json", "--binding", "agent"), bench.clone, env))
    entry = json.loads(Path(first["ledgerPath"]).read_text())
    host = HostInfo.from_json(entry["host"])
    repo = entry["attestation"]["target"]["repoRemote"]
    base = entry["attestation"]["target"]["baseSha"]
    tmpl = copy_of(template, base, "0" * 40, "review-template", "2025-01-01T00:00:00.000Z")
    tmpl["target"]["repoRemote"] = repo
    t0 = time.perf_counter()
    populate(home / "reviews", tmpl, host, max(0, size - 1))
    Timed().run(run("ledger", "--reindex", "--limit", "1"), bench.clone, env)
    print(f"  {size:,} entries written and indexed in {time.perf_counter() - t0:.1f} s", flush=True)

    for _ in range(bench.repeat):
        # agent lane, no prior on this line (every copy is a passing sibling on the same base)
        bench.new_line()
        step("miss, agent lane, no prior").run(run("run", "--json", "--binding", "agent"), bench.clone, env)
        step("first `ledger` after a write").run(run("ledger"), bench.clone, env)
        # agent lane composed on the run just recorded on this line
        bench.commit()
        out = step("miss, agent lane, with a prior").run(run("run", "--json", "--binding", "agent"), bench.clone, env)
        if "composedFrom" not in json.loads(out)["attestation"]["lanes"][0]:
            raise SystemExit("the agent lane did not compose on its prior: the bench measures the wrong thing")
        step("hit").run(run("run", "--json", "--binding", "agent"), bench.clone, env)
        bench.commit()
        step("miss, command lane").run(run("run", "--json", "--binding", "cmd"), bench.clone, env)
        step("`ledger`").run(run("ledger"), bench.clone, env)
        step("`ledger --repo`").run(run("ledger", "--repo", repo), bench.clone, env)
        step("MCP review_ledger(cwd)").run(
            [sys.executable, "-c", "import sys; from agentreview.mcp.queries import review_ledger; "
             "review_ledger(cwd=sys.argv[1], include_running=True, running=lambda repo: [])", str(bench.clone)],
            bench.clone, env,
        )
        step("git floor: `git status`").run(["git", "status", "--porcelain"], bench.clone, env)
        step("git floor: `git rev-list --first-parent -n 1000`").run(
            ["git", "rev-list", "--first-parent", "-n", "1000", "HEAD"], bench.clone, env)

    if bench.notes:
        step("git floor: bare `git fetch` of the notes ref").run(
            ["git", "fetch", "-q", "origin", f"+{NOTES}:refs/notes/bench-floor"], bench.clone, env)
        git(bench.clone, "update-ref", "-d", "refs/notes/bench-floor")
        step("`fetch`, new notes").run(run("fetch", "--remote", "origin"), bench.clone, env)
        for _ in range(bench.notes // 1000 + 2):  # the rest of the notes (a fetch reads a bounded batch)
            Timed().run(run("fetch", "--remote", "origin"), bench.clone, env)
        for _ in range(bench.repeat):
            step("`fetch`, nothing new").run(run("fetch", "--remote", "origin"), bench.clone, env)
            step("git floor: bare `git fetch`, nothing new").run(
                ["git", "fetch", "-q", "origin", f"+{NOTES}:{NOTES}"], bench.clone, env, ok=(0, 1))
            bench.new_line()
            step(f"miss, agent lane, no prior, {bench.notes:,} imported").run(
                run("run", "--json", "--binding", "agent"), bench.clone, env)
            step(f"`ledger`, {bench.notes:,} imported").run(run("ledger"), bench.clone, env)
        git(bench.clone, "update-ref", "-d", NOTES)  # the next size fetches them all again
    return rows


def table(sizes: Sequence[int], results: dict[int, dict[str, Timed]]) -> str:
    names: list[str] = []
    for size in sizes:
        names += [n for n in results[size] if n not in names]
    head = ["step"] + [f"{s:,} entries" for s in sizes] + [f"{sizes[-1]:,} / {sizes[0]:,}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cell(t: Timed | None) -> str:
        return "-" if t is None else f"{t.median:,.0f} ms, {t.peak:,.0f} MiB"

    for name in names:
        first, last = results[sizes[0]].get(name), results[sizes[-1]].get(name)
        ratio = f"{last.median / first.median:.2f}x time, {last.peak / first.peak:.2f}x RSS" if first and last else "-"
        lines.append("| " + " | ".join([name, *(cell(results[s].get(name)) for s in sizes), ratio]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,10000,100000", help="ledger sizes, comma-separated")
    parser.add_argument("--notes", type=int, default=10_000, help="notes on the remote's notes ref (0: no fetch)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    tmp = Path(tempfile.mkdtemp(prefix="agentreview-scale-"))
    bench = Bench(tmp, args.notes, args.repeat)
    results: dict[int, dict[str, Timed]] = {}
    try:
        bench.setup()
        template = make_template(bench)
        if args.notes:
            bench.notes_ref(template)
        for size in sizes:
            print(f"ledger of {size:,} entries", flush=True)
            results[size] = measure_size(bench, size, template)
        print()
        print(table(sizes, results))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
