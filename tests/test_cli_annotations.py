"""The hot commands' parameters are read by typer from evaluated annotations: written as strings
(``from __future__ import annotations``), every start would compile each of them again."""

from __future__ import annotations

import pytest
import typer

from agentreview.cli.app import build_app


@pytest.mark.parametrize("command", ["run", "verify"])
def test_a_hot_command_has_no_annotation_left_as_a_string(command: str) -> None:
    app = build_app(only=command)
    callbacks = [info.callback for info in app.registered_commands if info.name == command]
    assert callbacks and callbacks[0] is not None
    strings = {name: hint for name, hint in callbacks[0].__annotations__.items() if isinstance(hint, str)}
    assert strings == {}
    assert isinstance(typer.main.get_command(app), typer.core.TyperGroup)
