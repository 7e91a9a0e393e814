"""Warm-up: import and exercise the heavy parts once, before the server forks any child.

Every command the server runs is a fork of this warmed process, so whatever is imported and
built here (typer's command tree, pydantic models and their validators, the plugin registry)
is ready in the child for free. Warm-up must leave exactly one thread: a fork copies only the
calling thread, and a lock another thread held would stay locked forever in the child.
"""

from __future__ import annotations

import contextlib
import importlib
import threading

WARM_MANIFEST = b"---\nkind: review\nid: warm\ntarget: { kind: git-range, base: main }\nchecks:\n" \
    b"  - id: t\n    kind: command\n    run: 'true'\n---\n"
WARM_MODULES = (
    "agentreview.cli.app",
    "agentreview.manifest.parse",
    "agentreview.store.ledger",
    "agentreview.store.index",
    "agentreview.engine.run",
    "agentreview.engine.execute",
    "agentreview.verify.gate",
    "agentreview.signing.signers",
    "agentreview.store.export",
    "agentreview.report.progress",
    "agentreview.model.manifest",
    "agentreview.model.attestation",
    "rich.console",
    "rich.live",
)


def warm() -> list[str]:
    """Import and exercise the heavy parts once, so every child starts with them ready; problems, if any."""
    problems: list[str] = []
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a broken module is the child's error to report, not the server's
            problems.append(f"import {name}: {type(exc).__name__}: {exc}")
    steps = {
        "app": _warm_app,
        "plugins": _warm_plugins,
        "manifest": lambda: importlib.import_module("agentreview.manifest.parse").parse_review(WARM_MANIFEST),
        "attestation": _warm_attestation,
    }
    for label, step in steps.items():
        try:
            step()
        except Exception as exc:
            problems.append(f"warm {label}: {type(exc).__name__}: {exc}")
    if threading.active_count() != 1:
        problems.append(f"warm-up left {threading.active_count() - 1} thread(s) running; forking may copy a lock")
    return problems


def _warm_app() -> None:
    import typer

    from agentreview.cli.app import build_app

    typer.main.get_command(build_app())


def _warm_plugins() -> None:
    from agentreview.plugins.registry import load_registry

    load_registry(only=None, blocked=())


def _warm_attestation() -> None:
    from agentreview.model.attestation import Attestation, AttestationShapeError

    with contextlib.suppress(AttestationShapeError):
        Attestation.read({"kind": "attestation"})
