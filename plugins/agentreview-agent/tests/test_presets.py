"""Host-local presets (agentreview/host/presets.py) and ``agentreview presets [--json]``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview.api import PresetOption, ProviderStatus, ReviewerBase
from agentreview.host.presets import load_presets
from agentreview.model.errors import AgentreviewError
from agentreview.plugins.registry import load_registry


def shipped(*names: str) -> dict:
    """The registered providers (as the core sees them: the agent plugin's lazy stand-ins), by name."""
    providers = load_registry().objects("providers")
    return {name: providers[name] for name in names} if names else providers


def test_builtins_for_every_provider_and_user_presets(tmp_path: Path) -> None:
    (tmp_path / "presets.toml").write_text(
        '[presets.team-bot]\nprovider = "exec"\ncommand = ["team-review", "--strict"]\nretries = 2\n'
        'env = ["TEAM_TOKEN", "_x1"]\n'
        '[presets.claude]\nprovider = "claude"\nmodel = "sonnet"\n'
    )
    presets = load_presets(tmp_path, shipped("codex", "claude", "exec"))
    assert presets["codex"].builtin and presets["codex"].provider == "codex"
    assert presets["claude"].model == "sonnet" and not presets["claude"].builtin  # a user preset may refine a builtin
    bot = presets["team-bot"]
    assert (bot.provider, dict(bot.options)) == (
        "exec",
        {"command": ["team-review", "--strict"], "retries": 2, "env": ["TEAM_TOKEN", "_x1"]},
    )


def test_missing_file_is_builtins_only(tmp_path: Path) -> None:
    assert set(load_presets(tmp_path, shipped("claude"))) == {"claude"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[presets.x\n", "cannot read presets"),
        ("[other]\n", "unknown top-level key 'other'"),
        ("[presets.x]\nmodel = 'm'\n", "[presets.x]: provider is required"),
        ("[presets.x]\nprovider = 'exec'\ncommand = 'run me'\n", "[presets.x]: command must be a non-empty array"),
        ("[presets.x]\nprovider = 'exec'\ncommand = []\n", "[presets.x]: command must be a non-empty array"),
        ("[presets.x]\nprovider = 'claude'\nmodel = 3\n", "[presets.x]: model must be a non-empty string"),
        ("[presets.x]\nprovider = 'claude'\nretries = 9\n", "[presets.x]: retries must be an integer from 0 to 5"),
        ('[presets."a b"]\nprovider = "claude"\n', "[presets.a b]: a preset name is"),
        ("[presets.x]\nprovider = 'claude'\nenv = 'MY_KEY'\n", "[presets.x]: env: 'MY_KEY' is not a variable name"),
        ("[presets.x]\nprovider = 'claude'\nenv = ['OK', 'AWS_*']\n", "[presets.x]: env: 'AWS_*' is not a variable"),
        ("[presets.x]\nprovider = 'exec'\nenv = ['A=B']\n", "[presets.x]: env: 'A=B' is not a variable name"),
        ("[presets.x]\nprovider = 'exec'\nenv = [3]\n", "[presets.x]: env: 3 is not a variable name"),
    ],
)
def test_bad_entries_name_the_file_and_table(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "presets.toml"
    path.write_text(text)
    with pytest.raises(AgentreviewError) as info:
        load_presets(tmp_path, shipped())
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


class _Linter(ReviewerBase):
    """A third-party provider declaring an option of its own."""

    name = "linter"
    preset_options = {**ReviewerBase.preset_options, "level": PresetOption("integer", minimum=1, maximum=3)}  # noqa: RUF012

    def status(self) -> ProviderStatus:
        return ProviderStatus(installed=True, usable=True)

    def review(self, request):  # pragma: no cover - never run here
        raise NotImplementedError


class _Bare:
    """A provider with no validate_options: its presets' options are its own business."""

    name = "bare"

    def status(self) -> ProviderStatus:  # pragma: no cover
        return ProviderStatus(installed=True, usable=True)

    def review(self, request):  # pragma: no cover
        raise NotImplementedError


class _Broken(_Bare):
    name = "broken"

    def validate_options(self, options):
        raise KeyError("level")


def test_a_provider_declares_and_checks_its_own_options(tmp_path: Path) -> None:
    path = tmp_path / "presets.toml"
    path.write_text("[presets.strict]\nprovider = 'linter'\nlevel = 3\nretries = 2\n")
    assert load_presets(tmp_path, {"linter": _Linter()})["strict"].options == {"level": 3, "retries": 2}
    path.write_text("[presets.strict]\nprovider = 'linter'\nlevel = 7\n")
    with pytest.raises(AgentreviewError) as info:
        load_presets(tmp_path, {"linter": _Linter()})
    assert str(info.value) == f"{path}: [presets.strict]: level must be an integer from 1 to 3"
    # the core holds no provider's option names: what `exec` would refuse, a provider without a check accepts
    path.write_text("[presets.b]\nprovider = 'bare'\ncommand = 3\nbinary = ''\nretries = 'x'\n")
    assert load_presets(tmp_path, {"bare": _Bare()})["b"].options == {"command": 3, "binary": "", "retries": "x"}
    # and a preset of a provider no plugin registers is left to its lane (which reports the provider missing)
    path.write_text("[presets.b]\nprovider = 'nobody'\ncommand = 3\n")
    assert load_presets(tmp_path, {})["b"].provider == "nobody"


def test_a_provider_whose_check_fails_refuses_the_preset_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "presets.toml"
    path.write_text("[presets.b]\nprovider = 'broken'\nlevel = 1\n")
    with pytest.raises(AgentreviewError) as info:
        load_presets(tmp_path, {"broken": _Broken()})
    assert str(info.value) == (
        f"{path}: [presets.b]: provider 'broken' could not check these options: KeyError: 'level'"
    )


def test_presets_are_never_read_from_the_reviewed_repo(repo, lane, tmp_path: Path, monkeypatch) -> None:
    # A presets.toml committed to the repository (and run from inside it) has no effect.
    (repo.root / "presets.toml").write_text('[presets.evil]\nprovider = "exec"\ncommand = ["sh", "-c", "true"]\n')
    monkeypatch.chdir(repo.root)
    assert "evil" not in load_presets(tmp_path / "arhome", shipped("claude"))


def _cli(*args: str, env_home: Path, path_extra: str = "") -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "AGENTREVIEW_HOME": str(env_home)}
    if path_extra:
        env["PATH"] = path_extra
    return subprocess.run(
        [sys.executable, "-m", "agentreview", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_presets_command_lists_builtins_even_without_their_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "presets.toml").write_text('[presets.team-bot]\nprovider = "exec"\ncommand = ["true"]\n')
    proc = _cli("presets", "--json", env_home=home, path_extra="/usr/bin:/bin")
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert {"claude", "codex", "opencode", "kimi", "exec", "team-bot"} <= set(rows)
    assert rows["claude"]["source"] == "builtin" and rows["claude"]["installed"] is False
    assert "claude CLI not found" in rows["claude"]["detail"]
    assert rows["team-bot"] == {
        "name": "team-bot", "provider": "exec", "model": None, "source": "user", "installed": True,
        "usable": True, "version": None, "detail": rows["exec"]["detail"],
    }  # fmt: skip
    text = _cli("presets", env_home=home, path_extra="/usr/bin:/bin")
    assert text.returncode == 0 and "claude  (builtin) provider=claude: not installed" in text.stdout


def test_presets_command_reports_a_usable_fake_cli(tmp_path: Path, fake_cli) -> None:
    import os

    cli = fake_cli("claude")
    rows = {
        r["name"]: r
        for r in json.loads(_cli("presets", "--json", env_home=tmp_path, path_extra=os.environ["PATH"]).stdout)
    }
    assert rows["claude"]["usable"] is True and rows["claude"]["version"] == "2.1.197 (Claude Code)"
    assert rows["claude"]["detail"] == str(cli.bin_dir / "claude")


def test_presets_command_bad_file_is_one_line_exit_3(tmp_path: Path) -> None:
    (tmp_path / "presets.toml").write_text("[presets.x]\n")
    proc = _cli("presets", env_home=tmp_path)
    assert proc.returncode == 3
    assert proc.stderr.strip().count("\n") == 0 and "[presets.x]: provider is required" in proc.stderr
