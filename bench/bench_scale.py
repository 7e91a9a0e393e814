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

Each row is the median of ``--repeat`` whole processes (a miss gets a new commit each time), the
sizes interleaved round by round (one clone and home per size), with the largest peak RSS among
them (``/usr/bin/time``), beside the bare git commands a step needs. ``fetch`` of the new notes
is timed once per size: one call that imports all of them (the per-fetch cap is above 10,000), after
one untimed fetch in a scratch clone, so that it reads compiled bytecode as a host that ran it before does.
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
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
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
        """Run ``argv`` to the end; its peak RSS comes from ``/usr/bin/time`` (a process started by
        this one would count this interpreter's memory, copied at the fork, as its own)."""
        with tempfile.TemporaryDirectory() as scratch:
            rss_file = Path(scratch) / "rss"
            wrapped = [TIME, "-f", "%M", "-o", str(rss_file), *argv] if TIME else list(argv)
            start = time.perf_counter()
            proc = subprocess.run(wrapped, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL,
                                  timeout=3600)
            self.ms.append((time.perf_counter() - start) * 1000)
            if proc.returncode not in ok:
                raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
            if TIME and rss_file.exists():
                words = rss_file.read_text().split()
                if words and words[-1].isdigit():
                    self.rss.append(int(words[-1]) / 1024)
        return str(proc.stdout.decode())

    @property
    def median(self) -> float:
        return statistics.median(self.ms) if self.ms else float("nan")

    @property
    def peak(self) -> float:
        return max(self.rss) if self.rss else float("nan")


class Site:
    """One clone of the remote and a home of its own; ``line`` numbers the branches and commits it makes."""

    def __init__(self, clone: Path, home: Path, env: dict[str, str]):
        self.clone, self.home, self.env = clone, home, env
        self.line = 0
        self.repo = ""
        self.rows: dict[str, Timed] = {}

    def step(self, name: str) -> Timed:
        return self.rows.setdefault(name, Timed())

    def new_line(self) -> str:
        """A new branch off main with one commit: a head no entry has reviewed, and no prior on its line."""
        self.line += 1
        git(self.clone, "switch", "-q", "-c", f"line-{self.line}", "main")
        return self.commit()

    def commit(self) -> str:
        self.line += 1
        (self.clone / f"f{self.line}.txt").write_text(f"{self.line}\n")
        git(self.clone, "add", "-A")
        git(self.clone, "commit", "-q", "-m", f"change {self.line}")
        return git(self.clone, "rev-parse", "HEAD")


class Bench:
    def __init__(self, tmp: Path, notes: int):
        self.tmp, self.notes = tmp, notes
        self.bare = tmp / "remote.git"
        self.script = tmp / "reviewer.py"

    def setup(self) -> None:
        """main (README, rubric, REVIEW.md) and a side branch of ``notes`` commits, pushed to a bare remote."""
        origin = self.tmp / "origin"
        origin.mkdir()
        git(origin, "init", "-q", "-b", "main")
        (origin / "README.md").write_text("hello\n")
        (origin / "rubric.md").write_text("look for bugs\n")
        (origin / "REVIEW.md").write_text(MANIFEST)
        git(origin, "add", "-A")
        git(origin, "commit", "-q", "-m", "initial")
        base = git(origin, "rev-parse", "HEAD")
        stream = [f"reset refs/heads/history\nfrom {base}\n"]
        for n in range(self.notes):  # fast-import: seconds for 10,000 commits
            msg = f"history {n}"
            stream.append(f"commit refs/heads/history\nmark :{n + 1}\n"
                          f"committer b <b@example.com> {1700000000 + n} +0000\ndata {len(msg)}\n{msg}\n")
        git(origin, "fast-import", "--quiet", data="".join(stream).encode())
        git(self.tmp, "init", "-q", "--bare", "-b", "main", str(self.bare))
        git(origin, "push", "-q", str(self.bare), "main", "history")
        self.script.write_text(REVIEWER)

    def site(self, name: str) -> Site:
        home = self.tmp / f"home-{name}"
        home.mkdir()
        (home / "presets.toml").write_text(
            f'[presets.rev]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, str(self.script)])}\n'
        )
        clone = self.tmp / f"clone-{name}"
        git(self.tmp, "clone", "-q", str(self.bare), str(clone))
        git(clone, "fetch", "-q", "origin", "history:history")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
        env.update(GIT_ENV)
        env.update({"AGENTREVIEW_HOME": str(home), "CI": "true", "PYTHONPYCACHEPREFIX": str(self.tmp / "pycache")})
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return Site(clone, home, env)

    def notes_ref(self, site: Site, template: dict) -> None:
        """``notes`` attestations pushed to the bare remote, one per commit of the side branch."""
        commits = git(site.clone, "rev-list", "--reverse", "history").split()[1:]  # main's commit excluded
        base = git(site.clone, "rev-parse", "main")
        stream = []
        for n, commit in enumerate(commits[: self.notes]):
            att = copy_of(template, base, commit, f"review-note{n:06d}", f"2024-06-01T00:00:00.{n % 1000:03d}Z")
            line = canonical_json(att) + b"\n"
            stream.append(f"blob\nmark :{n + 1}\ndata {len(line)}\n".encode() + line + b"\n")
        stream.append(b"commit " + NOTES.encode() + b"\ncommitter b <b@example.com> 1700000000 +0000\ndata 5\nnotes\n")
        stream.extend(f"N :{n + 1} {commit}\n".encode() for n, commit in enumerate(commits[: self.notes]))
        git(site.clone, "fast-import", "--quiet", data=b"".join(stream))
        git(site.clone, "push", "-q", "origin", NOTES)
        git(site.clone, "update-ref", "-d", NOTES)


def agentreview(*args: str) -> list[str]:
    return [str(BIN / "agentreview"), *args]


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


def make_template(bench: Bench) -> tuple[Site, dict]:
    """The attestation one real agent-lane run records (in a scratch site): what every copy is made of."""
    site = bench.site("template")
    site.new_line()
    first = json.loads(Timed().run(agentreview("run", "--json", "--binding", "agent"), site.clone, site.env))
    template: dict = json.loads(Path(first["ledgerPath"]).read_text())["attestation"]
    return site, template


def fill(bench: Bench, size: int, template: dict) -> Site:
    """A site whose ledger holds ``size`` entries: one real run, and copies of the template."""
    site = bench.site(str(size))
    site.new_line()
    first = json.loads(Timed().run(agentreview("run", "--json", "--binding", "agent"), site.clone, site.env))
    entry = json.loads(Path(first["ledgerPath"]).read_text())
    host = HostInfo.from_json(entry["host"])
    site.repo = entry["attestation"]["target"]["repoRemote"]
    base = entry["attestation"]["target"]["baseSha"]
    tmpl = copy_of(template, base, "0" * 40, "review-template", "2025-01-01T00:00:00.000Z")
    tmpl["target"]["repoRemote"] = site.repo
    t0 = time.perf_counter()
    populate(site.home / "reviews", tmpl, host, max(0, size - 1))
    Timed().run(agentreview("ledger", "--reindex", "--limit", "1"), site.clone, site.env)
    print(f"  {size:,} entries written and indexed in {time.perf_counter() - t0:.1f} s", flush=True)
    return site


def one_round(site: Site) -> None:
    """Each step once at this site's size (a miss on a new commit)."""
    run, cwd, env = agentreview, site.clone, site.env
    site.new_line()  # agent lane, no prior on this line (every copy is a passing sibling on the same base)
    site.step("miss, agent lane, no prior").run(run("run", "--json", "--binding", "agent"), cwd, env)
    site.step("first `ledger` after a write").run(run("ledger"), cwd, env)
    site.commit()  # agent lane composed on the run just recorded on this line
    out = site.step("miss, agent lane, with a prior").run(run("run", "--json", "--binding", "agent"), cwd, env)
    if "composedFrom" not in json.loads(out)["attestation"]["lanes"][0]:
        raise SystemExit("the agent lane did not compose on its prior: the bench measures the wrong thing")
    site.step("hit").run(run("run", "--json", "--binding", "agent"), cwd, env)
    site.commit()
    site.step("miss, command lane").run(run("run", "--json", "--binding", "cmd"), cwd, env)
    site.step("`ledger`").run(run("ledger"), cwd, env)
    site.step("`ledger --repo`").run(run("ledger", "--repo", site.repo), cwd, env)
    site.step("MCP review_ledger(cwd), one process").run(
        [sys.executable, "-c", "import sys; from agentreview.mcp.queries import review_ledger; "
         "review_ledger(cwd=sys.argv[1], include_running=True, running=lambda repo, inside: [])", str(cwd)], cwd, env)
    site.step("git floor: `git status`").run(["git", "status", "--porcelain"], cwd, env)
    site.step("git floor: `git rev-list --first-parent -n 1000`").run(
        ["git", "rev-list", "--first-parent", "-n", "1000", "HEAD"], cwd, env)


def first_fetch(site: Site, notes: int) -> None:
    """The bare git fetch of the notes ref, then one ``fetch`` of every note, timed."""
    site.step("git floor: bare `git fetch` of the notes ref").run(
        ["git", "fetch", "-q", "origin", f"+{NOTES}:refs/notes/bench-floor"], site.clone, site.env)
    git(site.clone, "update-ref", "-d", "refs/notes/bench-floor")
    out = site.step(f"`fetch`, {notes:,} new notes (one call)").run(
        agentreview("fetch", "--remote", "origin", "--json"), site.clone, site.env)
    done = json.loads(out)
    if not done["complete"] or done["new"] != notes:
        raise SystemExit(f"one fetch did not import every note ({done['new']} new): the bench measures the wrong thing")


def imported_round(site: Site, notes: int) -> None:
    """With every note imported: an unchanged fetch, a miss and ``ledger``."""
    run, cwd, env = agentreview, site.clone, site.env
    site.step("`fetch`, nothing new").run(run("fetch", "--remote", "origin"), cwd, env)
    site.step("git floor: bare `git fetch`, nothing new").run(
        ["git", "fetch", "-q", "origin", f"+{NOTES}:{NOTES}"], cwd, env, ok=(0, 1))
    site.new_line()
    site.step(f"miss, agent lane, no prior, {notes:,} imported").run(
        run("run", "--json", "--binding", "agent"), cwd, env)
    site.step(f"`ledger`, {notes:,} imported").run(run("ledger"), cwd, env)


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
    bench = Bench(tmp, args.notes)
    try:
        bench.setup()
        scratch, template = make_template(bench)
        if args.notes:
            bench.notes_ref(scratch, template)
            # a host that ran fetch before reads its modules' bytecode; the first process to import a module
            # compiles it (one throwaway fetch, untimed), so the timed fetches measure the fetch, not that
            Timed().run(agentreview("fetch", "--remote", "origin"), scratch.clone, scratch.env)
        sites = {}
        for size in sizes:
            print(f"ledger of {size:,} entries", flush=True)
            sites[size] = fill(bench, size, template)
        # the sizes interleaved round by round: a change of machine load falls on all of them
        for n in range(args.repeat):
            print(f"round {n + 1} of {args.repeat}", flush=True)
            for size in sizes:
                one_round(sites[size])
        if args.notes:
            for size in sizes:
                print(f"fetching {args.notes:,} notes at {size:,} entries", flush=True)
                first_fetch(sites[size], args.notes)
            for _ in range(args.repeat):
                for size in sizes:
                    imported_round(sites[size], args.notes)
        print()
        print(table(sizes, {size: site.rows for size, site in sites.items()}))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
