"""``agentreview presets`` honours a preset's ``binary =``, and ``--probe`` runs each preset's real admission
without a paid model call: the CLI started as a lane would, against a local server refusing every request.

The fake CLIs replay recorded output (what a real CLI cannot be made to print on demand: a drifted init
field, an unsafe mode); the last test probes the real pinned CLIs when they are installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import reviewer_clis


def _presets(home: Path, *args: str, path: str) -> dict[str, dict]:
    env = {**os.environ, "AGENTREVIEW_HOME": str(home), "PATH": path}
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "presets", "--json", *args],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return {row["name"]: row for row in json.loads(proc.stdout)}


def test_a_presets_binary_is_the_cli_it_reports(tmp_path: Path, fake_cli) -> None:
    cli = fake_cli("claude")
    moved = tmp_path / "elsewhere" / "claude"
    moved.parent.mkdir()
    (cli.bin_dir / "claude").rename(moved)  # no longer on PATH: only the preset's binary finds it
    (cli.bin_dir / "control.json").rename(moved.parent / "control.json")
    home = tmp_path / "arhome"
    home.mkdir()
    (home / "presets.toml").write_text(f'[presets.pinned]\nprovider = "claude"\nbinary = "{moved}"\n')
    rows = _presets(home, path=os.environ["PATH"])
    assert rows["claude"]["installed"] is False and "claude CLI not found" in rows["claude"]["detail"]
    assert rows["pinned"]["usable"] is True and rows["pinned"]["detail"] == str(moved)
    assert rows["pinned"]["version"] == "2.1.197 (Claude Code)"


@pytest.mark.parametrize(
    ("scenario", "probe"),
    [
        ("success", "usable"),
        ("drift_container", "would fall back: capability_missing: init has an unknown non-empty list 'connectors'"),
        ("unsafe_mode", "would stop: unsafe permissionMode 'bypassPermissions'"),
    ],
)
def test_probe_audits_claudes_init_without_a_model_call(tmp_path: Path, fake_cli, scenario, probe) -> None:
    cli = fake_cli("claude")
    cli.play(scenario=scenario)
    rows = _presets(tmp_path, "--probe", path=os.environ["PATH"])
    assert rows["claude"]["probe"] == probe
    (call,) = cli.calls()
    # started as a lane would, but at the local refusing server and with no credential of the user's linked in
    assert call["env"]["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert call["env"]["ANTHROPIC_API_KEY"] == "agentreview-probe-no-credential"
    assert call["config_listing"] == {}
    assert "--strict-mcp-config" in call["argv"] and "--tools" in call["argv"]


def test_probe_reports_what_is_missing_and_what_is_not_probed(tmp_path: Path, fake_cli) -> None:
    fake_cli("codex")
    fake_cli("opencode")
    rows = _presets(tmp_path, "--probe", path=os.environ["PATH"])
    assert rows["claude"]["probe"].startswith("missing: claude CLI not found")
    assert rows["kimi"]["probe"].startswith("missing: kimi CLI not found")
    assert rows["codex"]["probe"] == "usable"
    assert rows["opencode"]["probe"] == "usable"
    assert rows["exec"]["probe"] == "usable"


def test_probe_of_opencode_reads_back_its_generated_agent(tmp_path: Path, fake_cli) -> None:
    cli = fake_cli("opencode")
    cli.play(scenario="drift")  # a release whose agent config no longer turns bash off
    rows = _presets(tmp_path, "--probe", path=os.environ["PATH"])
    assert rows["opencode"]["probe"] == "would fall back: capability_missing: the generated agent still has tools: bash"
    assert cli.calls() == []  # no run, so no model call: the preflight is OpenCode's admission


@pytest.mark.slow
def test_probe_of_the_real_pinned_clis(tmp_path: Path) -> None:
    binaries = {name: reviewer_clis.binary(name) for name in ("claude", "codex", "opencode", "kimi")}
    present = {name: path for name, path in binaries.items() if path}
    if not present:
        pytest.skip(reviewer_clis.missing("claude, codex, opencode and kimi"))
    home = tmp_path / "arhome"
    home.mkdir()
    tables = "".join(f'[presets.real-{n}]\nprovider = "{n}"\nbinary = "{p}"\n' for n, p in present.items())
    (home / "presets.toml").write_text(tables)
    rows = _presets(home, "--probe", path=os.environ["PATH"])
    for name in present:
        assert rows[f"real-{name}"]["probe"] == "usable", rows[f"real-{name}"]
