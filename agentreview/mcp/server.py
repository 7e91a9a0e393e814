"""The MCP server on the SDK's ``MCPServer``: blocking work runs in worker threads, so a long ``review_run``
never holds up ``review_status`` or ``review_cancel``; every failure is a one-line error result, never a crash."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import warnings
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import NoBackChannelError
from mcp_types import CallToolResult, LoggingLevel, NotificationParams, TextContent, ToolAnnotations

from agentreview import __version__
from agentreview.mcp import args, queries, runs, schemas, wire
from agentreview.mcp import descriptions as d
from agentreview.mcp.confine import ClientRoots, NoRootsChannel, Roots
from agentreview.model.digests import json_text
from agentreview.model.errors import AgentreviewError
from agentreview.model.record import record
from agentreview.report.neutral import printable

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
Text = str | None


def _encodable(value: Any) -> Any:
    """``value`` with each lone surrogate (a finding may hold one) written as the text ``\\udxxx``: the SDK
    serializes structured content strictly and would fail on it."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(key)): _encodable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(item) for item in value]
    return value


def reply(data: dict[str, Any], *, error: bool = False) -> CallToolResult:
    """The tool's answer: the JSON as text (what a model reads; a lone surrogate as its JSON escape)
    and as structured content."""
    text = json_text(data)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=_encodable(data), is_error=error
    )


def checked(check: Callable[..., T], *a: Any, **kw: Any) -> T:
    """``check(...)``, with a failure turned into the tool's error result."""
    try:
        return check(*a, **kw)
    except AgentreviewError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:  # never a crash of the server: the agent reads what went wrong
        raise ToolError(f"internal error: {type(exc).__name__}: {exc}") from exc


async def checked_async(fn: Callable[..., Any], *a: Any) -> Any:
    """``await fn(...)``, with a failure turned into the tool's error result (as :func:`checked`)."""
    try:
        return await fn(*a)
    except AgentreviewError as exc:
        raise ToolError(str(exc)) from exc


async def in_thread(fn: Callable[..., T], *a: Any, **kw: Any) -> T:
    """Run ``fn`` in a worker thread; a failure becomes the tool's error result, one line."""
    return await anyio.to_thread.run_sync(functools.partial(checked, fn, *a, **kw))


def warm() -> None:
    """Import what the tools use once, at start, so no call pays for it."""
    import agentreview.host.git
    import agentreview.model.attestation
    import agentreview.runs.detach
    import agentreview.runs.registry
    import agentreview.store.export
    import agentreview.store.ledger

    with contextlib.suppress(ImportError):  # the pull-request service, when this build has it
        import agentreview.pr.service  # noqa: F401


@record
class ServeOptions:
    """``agentreview mcp``'s command line: where a client without roots may work, and the run limits."""

    start: Path = field(default_factory=Path.cwd)
    roots: tuple[Path, ...] = ()
    max_runs: int = runs.DEFAULT_MAX_RUNS
    cancel_any: bool = False


def _roots_reader(options: ServeOptions) -> tuple[ClientRoots, Callable[[Context], Any]]:
    """The server's roots (:mod:`agentreview.mcp.confine`), and how a call reads the ones it is confined to."""
    confinement = ClientRoots(Roots.of_server(options.start, options.roots))

    async def roots_of(ctx: Context) -> Roots:
        """The roots this call is confined to: the client's when it has the roots capability."""
        session = ctx.session
        caps = session.client_capabilities
        has_roots = caps is not None and caps.roots is not None

        async def ask() -> Iterable[str]:
            with warnings.catch_warnings():  # roots are deprecated from protocol 2026-07-28, still served
                warnings.simplefilter("ignore")
                try:
                    listed = await session.list_roots()
                except NoBackChannelError as exc:  # protocol 2026-07-28: no server-initiated requests
                    raise NoRootsChannel(str(exc)) from exc
            return [str(root.uri) for root in listed.roots]

        return await confinement.current(has_roots, ask)

    return confinement, roots_of


def tool(tools: list[Tool], text: d.ToolText) -> Callable[[F], F]:
    """Declare ``fn`` as a tool: its words and hints from ``text``, its input schema the SDK's made strict
    (:func:`schemas.strict_input`), its output schema :data:`schemas.OUTPUT`'s."""

    hints = ToolAnnotations(
        title=text.title,
        read_only_hint=text.read_only,
        destructive_hint=text.destructive,
        idempotent_hint=text.idempotent,
        open_world_hint=text.open_world,
    )

    def register(fn: F) -> F:
        made = Tool.from_function(
            fn, structured_output=False, title=text.title, description=text.description, annotations=hints
        )
        made.parameters = schemas.strict_input(made.parameters)
        if made.name not in schemas.OUTPUT:
            raise ValueError(f"tool {made.name!r} has no output schema in agentreview.mcp.schemas.OUTPUT")
        made.fn_metadata.output_schema = schemas.OUTPUT[made.name]
        tools.append(made)
        return fn

    return register


def build(options: ServeOptions | None = None) -> MCPServer:
    options = options or ServeOptions()
    tools: list[Tool] = []
    book = runs.RunBook(options.max_runs, options.cancel_any)
    confinement, roots_of = _roots_reader(options)

    @tool(tools, d.REVIEW_RUN)
    async def review_run(
        cwd: Annotated[str, d.CWD_RUN],
        ctx: Context,
        manifestPath: Annotated[Text, d.MANIFEST] = None,
        binding: Annotated[Text, d.BINDING_RUN] = None,
        base: Annotated[Text, d.BASE] = None,
        head: Annotated[Text, d.HEAD] = None,
        nocache: Annotated[bool, d.NOCACHE] = False,
        compose: Annotated[bool, d.COMPOSE] = True,
        wait: Annotated[bool, d.WAIT] = True,
        requesterSessionId: Annotated[Text, d.REQUESTER] = None,
        pr: Annotated[dict[str, Any] | None, d.PR] = None,
        supersede: Annotated[bool, d.SUPERSEDE] = False,
        detach: Annotated[bool, d.DETACH] = False,
    ) -> CallToolResult:
        roots = await checked_async(roots_of, ctx)
        where = checked(args.required_directory, cwd)
        checked(roots.directory, where)
        checked(roots.manifest, manifestPath, where)
        await in_thread(roots.repository, where)
        request = runs.RunRequest(
            cwd=where,
            manifest_path=manifestPath,
            binding=binding,
            base=base,
            head=head,
            nocache=nocache,
            compose=compose and not nocache,
            requester=requesterSessionId,
            pr=checked(args.pr_ref, pr),
            supersede=supersede,
        )
        if not wait:
            return reply({"runId": await in_thread(book.start, request), "status": "running"})
        with anyio.CancelScope(shield=True):  # a cancel that arrives now is taken below, with the runId known
            run_id = await in_thread(book.start, request)

        async def log(level: str, data: dict[str, Any]) -> None:
            await ctx.request_context.session.send_log_message(
                level=cast("LoggingLevel", level), data=data, logger="agentreview", related_request_id=ctx.request_id
            )

        steps = runs.Steps(run_id, ctx.report_progress, log)
        runs.WAITING[run_id] = detach
        answered = False
        try:
            await steps.started()  # the runId, before anything can cut the call off
            final = await runs.wait(run_id, steps, anyio.sleep, lambda: anyio.to_thread.run_sync(runs.poll, run_id))
            answered = True
        finally:
            runs.WAITING.pop(run_id, None)
            # the request was cancelled or its client went away (a write to it failed): the review goes
            # with it, unless detached
            if not answered and not detach:
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await anyio.to_thread.run_sync(runs.abandon, run_id)
        return reply(final, error=final.get("status") == "failed")

    @tool(tools, d.REVIEW_STATUS)
    async def review_status(runId: Annotated[str, d.RUN_ID]) -> CallToolResult:
        return reply(await in_thread(runs.view, runId))

    @tool(tools, d.REVIEW_CANCEL)
    async def review_cancel(runId: Annotated[str, d.RUN_ID]) -> CallToolResult:
        return reply(await in_thread(book.cancel, runId))

    @tool(tools, d.REVIEW_LEDGER)
    async def review_ledger(
        cwd: Annotated[Text, d.CWD_LEDGER] = None,
        repoRemote: Annotated[Text, d.REPO_REMOTE] = None,
        range: Annotated[Text, d.RANGE] = None,
        binding: Annotated[Text, d.BINDING_FILTER] = None,
        requesterSessionId: Annotated[Text, d.REQUESTER_FILTER] = None,
        subtree: Annotated[bool, d.SUBTREE] = False,
        includeRunning: Annotated[bool, d.INCLUDE_RUNNING] = False,
        limit: Annotated[int, d.LIMIT] = 50,
        ctx: Context | None = None,
    ) -> CallToolResult:
        roots = await checked_async(roots_of, ctx) if ctx is not None else None
        rows = await in_thread(
            queries.review_ledger,
            cwd=cwd,
            repo_remote=repoRemote,
            range_=range,
            binding=binding,
            requester=requesterSessionId,
            subtree=subtree,
            include_running=includeRunning,
            limit=limit,
            running=runs.running_rows,
            roots=roots,
        )
        return reply(rows)

    @tool(tools, d.REVIEW_EXPORT)
    async def review_export(
        runId: Annotated[Text, d.EXPORT_RUN_ID] = None,
        repoRemote: Annotated[Text, d.REPO_REMOTE] = None,
        rangeSha: Annotated[Text, d.RANGE_SHA] = None,
        binding: Annotated[Text, d.BINDING_EXPORT] = None,
        outPath: Annotated[Text, d.OUT_PATH] = None,
        cwd: Annotated[Text, d.CWD_EXPORT] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        roots = await checked_async(roots_of, ctx) if ctx is not None else None
        written = await in_thread(
            queries.review_export,
            run_id=runId,
            repo_remote=repoRemote,
            range_sha=rangeSha,
            binding=binding,
            out_path=outPath,
            cwd=cwd,
            roots=roots,
        )
        return reply(written)

    @tool(tools, d.REVIEW_PRESETS)
    async def review_presets(probe: Annotated[bool, d.PROBE] = False) -> CallToolResult:
        from agentreview.reviewers.catalog import preset_rows

        rows = await in_thread(preset_rows, probe)
        return reply({"total": len(rows), "presets": rows})

    register_pr(tools, roots_of)
    server = MCPServer(
        name="agentreview", version=__version__, instructions=d.INSTRUCTIONS, log_level="WARNING", tools=tools
    )

    async def roots_changed(_ctx: Any, _params: Any) -> None:
        confinement.changed()

    server._lowlevel_server.add_notification_handler(
        "notifications/roots/list_changed", NotificationParams, roots_changed
    )
    return server


def register_pr(tools: list[Tool], roots_of: Callable[[Context], Any]) -> None:
    """``review_pr``, when this build has ``agentreview.pr``; ``link_pr``'s ``{ok: false, error}`` answer to a
    bad argument or a GitHub failure goes back as an error result carrying that JSON."""
    try:
        from agentreview.pr.service import link_pr
    except ImportError:  # pragma: no cover - a build without the pull-request service
        return

    @tool(tools, d.REVIEW_PR)
    async def review_pr(
        runId: Annotated[Text, d.PR_RUN_ID] = None,
        rangeSha: Annotated[Text, d.PR_RANGE_SHA] = None,
        range: Annotated[Text, d.PR_RANGE] = None,
        cwd: Annotated[Text, d.PR_CWD] = None,
        prUrl: Annotated[Text, d.PR_URL] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        where = checked(args.directory, cwd)
        if ctx is not None:
            checked((await checked_async(roots_of, ctx)).directory, where)
        if runId:  # a cached run's id stands for the attestation it was answered with
            runId = await anyio.to_thread.run_sync(queries.served_run_id_or_same, runId)
        linked = await in_thread(link_pr, run_id=runId, range_sha=rangeSha, range=range, cwd=where, pr_url=prUrl)
        return reply(linked, error=not linked.get("ok"))


def serve(options: ServeOptions | None = None) -> None:
    """Serve on stdin/stdout until the client closes them or SIGTERM/SIGHUP; either way waiting reviews are
    cancelled. On a signal the process exits: stdin's reader thread cannot be interrupted by a cancel."""
    warm()
    server = build(options)
    listed = anyio.run(server.list_tools)
    wire.serve_stdio(lambda: anyio.run(_serve_until_stopped, server), {tool.name: tool.input_schema for tool in listed})


async def _serve_until_stopped(server: MCPServer) -> None:
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                async for signum in signals:
                    with contextlib.suppress(Exception):
                        await anyio.to_thread.run_sync(runs.abandon_waiting)
                    os._exit(128 + signum)

        tg.start_soon(stop_on_signal)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()
