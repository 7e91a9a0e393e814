"""The CLI frame as a user meets it: version, help, usage errors as one line with exit 64, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview import __version__

AGENTREVIEW = Path(sys.executable).with_name("agentreview")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))
    clean = {k: v for k, v in os.environ.items() if k != "AGENTREVIEW_DEBUG"}
    clean["AGENTREVIEW_HOME"] = str(tmp_path / "home")
    return clean


def cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGENTREVIEW), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(env: dict[str, str], flag: str) -> None:
    proc = cli(env, flag)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"agentreview {__version__}\n", "")


def test_version_through_the_app_and_python_dash_m(env: dict[str, str]) -> None:
    # `--version` after another eager option goes through the Typer app, not the fast path.
    proc = cli(env, "--version", "--help")
    assert proc.returncode == 0 and proc.stdout == f"agentreview {__version__}\n"
    proc = subprocess.run([sys.executable, "-m", "agentreview", "--version"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"agentreview {__version__}\n"


def test_version_does_not_import_the_heavy_modules(env: dict[str, str]) -> None:
    code = (
        "import sys; from agentreview.cli.entry import main; main(['--version']);"
        "print(sorted(m for m in ('typer', 'pydantic', 'pluggy', 'yaml', 'rich', 'git') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines()[-1] == "[]"


def test_no_arguments_prints_help_and_exits_0(env: dict[str, str]) -> None:
    proc = cli(env)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: agentreview")
    for command in ("plugins", "schema"):
        assert f"  {command} " in proc.stdout
    assert proc.stderr == ""


def test_help_exits_0(env: dict[str, str]) -> None:
    proc = cli(env, "--help")
    assert proc.returncode == 0 and "Usage: agentreview" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["frobnicate"], "No such command 'frobnicate'"),
        (["--bogus"], "No such option"),
        (["plugins", "--bogus"], "No such option"),
        (["schema"], "Missing argument"),
        (["schema", "review", "extra"], "unexpected extra argument"),
        (["schema", "nope"], "review-pack"),  # the choices are named
    ],
)
def test_usage_errors_are_one_line_and_exit_64(env: dict[str, str], args: list[str], needle: str) -> None:
    proc = cli(env, *args)
    assert proc.returncode == 64
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("agentreview")
    assert needle in proc.stderr
    # the offending word is named (click's wording differs between releases; the name does not)
    assert args[-1] in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_option_of_a_known_command_points_at_its_help(env: dict[str, str]) -> None:
    proc = cli(env, "plugins", "--bogus")
    assert "see 'agentreview plugins --help'" in proc.stderr


def test_schema_prints_json_with_id_and_title(env: dict[str, str], tmp_path: Path) -> None:
    proc = cli(env, "schema", "attestation", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["$id"] == "urn:agentreview:v1:attestation"
    assert proc.stdout.endswith("}\n")


def test_a_plugin_module_that_does_not_exist_is_one_warning_without_a_traceback(
    env: dict[str, str], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    info = site / "fake_missing-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-missing\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agentreview]\nfake-missing = no_such_module_here\n")
    proc = cli({**env, "PYTHONPATH": str(site), "AGENTREVIEW_PLUGINS": "fake-missing"}, "plugins")
    assert proc.returncode == 0
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "ModuleNotFoundError" in proc.stderr


def test_a_command_run_loads_only_its_own_module(env: dict[str, str]) -> None:
    code = (
        "import sys, contextlib, io; from agentreview.cli.app import COMMAND_MODULES, run_app\n"
        "with contextlib.redirect_stdout(io.StringIO()): rc = run_app(['schema', 'review'])\n"
        "print(rc, sorted(m for m in COMMAND_MODULES if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "0 ['agentreview.cli.schema_cmd']", proc.stderr


def test_root_help_before_a_command_still_lists_every_command(env: dict[str, str]) -> None:
    proc = cli(env, "--help", "schema")
    assert proc.returncode == 0
    assert "  plugins " in proc.stdout and "  schema " in proc.stdout
    sub_help = cli(env, "schema", "--help")
    assert sub_help.returncode == 0 and sub_help.stdout.startswith("Usage: agentreview schema")
