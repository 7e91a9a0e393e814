"""``agentreview demo``: the whole cycle on a throw-away repository, one visible step at a time.

Each step is the real command, run with a private ``AGENTREVIEW_HOME`` so the user's ledger and key stay untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.errors import AgentreviewError

DEMO_FILES = Path(__file__).resolve().parent.parent / "demo"

RISKY_CHANGE = '''

def evaluate(expression: str) -> float:
    """Evaluate a user-supplied arithmetic expression."""
    return eval(expression)
'''

SAFE_CHANGE = """

def multiply(a: float, b: float) -> float:
    return a * b
"""

SAFE_TEST = """

class MultiplyTest(unittest.TestCase):
    def test_multiply(self):
        from calc import multiply

        self.assertEqual(multiply(2, 3), 6)
"""

NEXT_STEP = (
    "\nNext, in your own repository: agentreview init\n"
    "  (writes a REVIEW.md with checks for that repository, a rubric, allowed_signers and the pre-push hook)"
)


class Demo:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.repo = workdir / "demo-repo"
        self.home = workdir / "home"
        self.env = {
            **os.environ,
            "AGENTREVIEW_HOME": str(self.home),
            "GIT_AUTHOR_NAME": "Demo Author",
            "GIT_AUTHOR_EMAIL": "author@demo.invalid",
            "GIT_COMMITTER_NAME": "Demo Author",
            "GIT_COMMITTER_EMAIL": "author@demo.invalid",
            "NO_COLOR": "1",
        }
        self.env.pop("AGENTREVIEW_SESSION_ID", None)
        self.step_no = 0

    def step(self, title: str) -> None:
        self.step_no += 1
        typer.secho(f"\n== {self.step_no}. {title}", bold=True)

    def git(self, *args: str) -> str:
        """git through the host's hardened runner, like every git agentreview starts."""
        from agentreview.host.gitrun import GitError, run_git

        try:
            return run_git(args, self.repo, env=self.env, timeout=60).stdout.decode("utf-8", "replace")
        except GitError as exc:
            raise AgentreviewError(f"demo: git {' '.join(args)} failed: {exc}") from exc

    def agentreview(self, *args: str, expect: set[int] | None = None) -> int:
        shown = " ".join(args)
        typer.secho(f"$ agentreview {shown}", fg=typer.colors.CYAN)
        from agentreview.runs.detach import agentreview_argv

        sys.stdout.flush()  # the narration above comes first, even when stdout is a pipe
        proc = subprocess.run(
            [*agentreview_argv(), *args],  # -P: the demo repository's files are never imported
            cwd=self.repo,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,  # progress joins the narration on the one stream, in order
            timeout=300,
        )
        if expect is not None and proc.returncode not in expect:
            raise AgentreviewError(f"demo: 'agentreview {shown}' exited {proc.returncode}, expected {sorted(expect)}")
        return proc.returncode

    def build(self, with_agent: bool) -> None:
        self.step("a repository with a REVIEW.md on main")
        shutil.copytree(DEMO_FILES / "files", self.repo)
        manifest = (self.repo / "REVIEW.md").read_text()
        if not with_agent:
            manifest = manifest.replace(
                "  - id: correctness\n    kind: agent\n    preset: demo-reviewer\n"
                "    rubric: ./rubrics/correctness.md\n    blockOn: high\n    timeoutMs: 60000\n",
                "",
            ).replace("changelog, correctness]", "changelog]")
            typer.echo("(agentreview-agent is not installed: the demo runs command lanes only)")
        (self.repo / "REVIEW.md").write_text(manifest)
        self.home.mkdir(parents=True, exist_ok=True)
        reviewer = DEMO_FILES / "reviewer.py"
        (self.home / "presets.toml").write_text(
            "# Host-local presets: never read from the reviewed repository.\n"
            "[presets.demo-reviewer]\n"
            'provider = "exec"\n'
            f"command = {json.dumps([sys.executable, str(reviewer)])}\n"
        )
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "author@demo.invalid")
        self.git("config", "user.name", "Demo Author")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "calc: add()")
        typer.echo((self.repo / "REVIEW.md").read_text().split("\n---\n", 1)[0] + "\n---")

    def commit(self, message: str, edits: dict[str, str]) -> None:
        for rel, text in edits.items():
            path = self.repo / rel
            path.write_text(path.read_text() + text)
        self.git("commit", "-q", "-am", message)
        typer.echo(f"committed: {message}")

    def run(self, with_agent: bool) -> None:
        self.build(with_agent)

        self.step("trust this host's review key: its allowed_signers line is committed on main")
        self.agentreview("key", expect={0})
        from agentreview.runs.detach import agentreview_argv

        key = subprocess.run(
            [*agentreview_argv(), "key", "--json"],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        signers = self.repo / ".agentproto" / "allowed_signers"
        signers.parent.mkdir(exist_ok=True)
        signers.write_text(json.loads(key.stdout)["allowedSignersLine"] + "\n")
        self.git("add", ".agentproto/allowed_signers")
        self.git("commit", "-q", "-m", "trust the review host key")

        self.step("a change on a feature branch")
        self.git("switch", "-q", "-c", "feature")
        self.commit("calc: multiply()", {"calc/__init__.py": SAFE_CHANGE, "tests/test_calc.py": SAFE_TEST})

        self.step("review main..feature: lanes run in parallel, the verdict is signed, recorded and exported")
        self.agentreview("run", "--export", expect={0})

        self.step("the CI gate: verify the export under main's policy (REVIEW.md, allowed_signers), re-running nothing")
        self.agentreview("verify", "--require-signed", "--policy-from", "main", expect={0})

        self.step("commit the export; verify still finds it (HEAD only adds the export)")
        self.git("add", ".reviews")
        self.git("commit", "-q", "-m", "review: attest main..feature")
        self.agentreview("verify", "--require-signed", "--policy-from", "main", expect={0})

        self.step("a forged export (a lane's record edited by hand) is refused")
        exports = sorted((self.repo / ".reviews").glob("*.json"))
        forged = self.workdir / "forged.json"
        data = json.loads(exports[-1].read_text())
        data["lanes"][0]["durationMs"] = 1
        data["lanes"][0]["findings"] = []
        forged.write_text(json.dumps(data, indent=2) + "\n")
        gate = ("--require-signed", "--policy-from", "main")
        self.agentreview("verify", str(forged), *gate, "--head", "HEAD^", expect={6})

        self.step("an unchanged range is answered from the ledger cache")
        self.agentreview("run", "--head", "HEAD^", expect={0})

        if with_agent:
            self.step("a risky change: the reviewer blocks it")
            self.commit("calc: evaluate()", {"calc/__init__.py": RISKY_CHANGE})
            self.agentreview("run", expect={1})

        self.step("the ledger of this host")
        self.agentreview("ledger", "--limit", "10")


def register(app: typer.Typer) -> None:
    @app.command(
        "demo",
        epilog=epilog(["agentreview demo", "agentreview demo --dir /tmp/ar-demo --keep"], [0]),
    )
    def demo(
        directory: Annotated[
            Path | None, typer.Option("--dir", help="Where to build the demo.", show_default="a temporary folder")
        ] = None,
        keep: Annotated[bool, typer.Option("--keep", help="Keep the demo folder afterwards.")] = False,
    ) -> int:
        """Build a throw-away repository and walk through run, sign, export and verify."""
        from agentreview.plugins.registry import load_registry

        registry = load_registry(cache=False)  # the caller's home stays untouched, even by a cache
        if "command" not in registry.lane_executors:
            raise AgentreviewError("the demo needs the agentreview-command plugin (pip install agentreview-command)")
        with_agent = "agent" in registry.lane_executors and "exec" in registry.providers
        workdir = Path(directory).resolve() if directory else Path(tempfile.mkdtemp(prefix="agentreview-demo-"))
        workdir.mkdir(parents=True, exist_ok=True)
        if (workdir / "demo-repo").exists():
            raise AgentreviewError(f"{workdir / 'demo-repo'} already exists — choose another --dir")
        kept = keep or directory is not None
        if kept:
            typer.echo(f"demo folder: {workdir} (kept afterwards)")
        else:
            typer.echo(f"demo folder: {workdir} (deleted at the end; add --keep to look around afterwards)")
        try:
            Demo(workdir).run(with_agent)
            typer.secho("\nThe whole cycle ran: review → sign → record → export → verify.", bold=True)
        finally:
            if kept:
                typer.echo(f"demo files kept in {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
                typer.echo(f"demo folder {workdir} deleted (agentreview demo --keep keeps it)")
        typer.echo(NEXT_STEP)
        return 0
