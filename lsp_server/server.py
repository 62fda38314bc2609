"""The language server: wiring between LSP and the refactor pipeline.

Handlers stay thin; the work lives in actions, settings, refactor, apply and stats.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from . import __version__
from .actions import KIND, TITLE_PREFIX, kind_requested, list_actions
from .config import Config
from .edits import PositionEncoding, PositionMapper
from .settings import SECTION, SettingsStore
from .wire import (
    CANCEL_COMMAND,
    PROGRESS_NOTIFICATION,
    PROGRESS_TOKEN_PREFIX,
    REFACTOR_COMMAND,
    SHOW_STATS_COMMAND,
    STATS_NOTIFICATION,
    ProgressPayload,
    RefactorArguments,
    RefactorReply,
    RefactorStatus,
    stats_payload,
)

if TYPE_CHECKING:
    from .apply import ApplyOutcome
    from .engine import Engine
    from .refactor import Progress, RefactorRequest, RefactorResult
    from .stats import RefactorStats

# The refactor pipeline (engine, backends, hygiene, apply, stats) is imported once `initialize`
# has been answered (on_initialized), not before: the editor waits for that answer.

log = logging.getLogger(__name__)

CLIENT_REPLY_TIMEOUT_S = 5.0


@dataclass
class Running:
    uri: str
    task: asyncio.Task[Any]
    cancel_reason: str = ""
    settings_read: asyncio.Event = field(default_factory=asyncio.Event)


class _Unreadable:
    """A message that could not be read and has been answered already; pygls skips it (no version)."""

    jsonrpc = "unreadable"


class RefactorProtocol(LanguageServerProtocol):
    """pygls 2.1 logs a request whose params do not fit the LSP types (a position on line -1) and
    never answers it, so the editor waits forever: answer it with the error instead."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            log.warning("cannot read the %s request %r: %s", data.get("method"), data.get("id"), error)
            self._send_response(data["id"], None, error.to_response_error())
            return _Unreadable()


def _converter() -> Any:
    from pygls.protocol import default_converter

    from .wire import register

    converter = default_converter()
    register(converter)
    return converter


class RefactorServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("refactor-lsp", __version__, protocol_cls=RefactorProtocol, converter_factory=_converter)
        self.settings = SettingsStore()
        self.running: dict[str, Running] = {}
        self.background: set[asyncio.Task[Any]] = set()
        self.verbose = 0
        self.shutdown_requested = False
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        """The server's one engine (its clients, prediction memory and probes), made on first use."""
        if self._engine is None:
            from .engine import Engine

            self._engine = Engine()
        return self._engine

    # -- what `apply` needs of the editor ------------------------------------------------------
    def current_document(self, uri: str) -> tuple[str, int | None]:
        document = self.workspace.get_text_document(uri)
        return document.source, document.version

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return await self.workspace_apply_edit_async(params)

    # -- client facts --------------------------------------------------------------------
    @property
    def encoding(self) -> PositionEncoding:
        value = getattr(self.workspace.position_encoding, "value", self.workspace.position_encoding)
        return value if value in ("utf-8", "utf-32") else "utf-16"  # type: ignore[return-value]

    def _caps(self, *path: str) -> Any:
        node: Any = self.client_capabilities
        for name in path:
            node = getattr(node, name, None) if node is not None else None
        return node

    @property
    def supports_progress(self) -> bool:
        return bool(self._caps("window", "work_done_progress"))

    @property
    def resolves_actions(self) -> bool:
        support = self._caps("text_document", "code_action", "resolve_support")
        return support is not None and bool({"command", "edit"} & set(support.properties or []))

    # -- messages ------------------------------------------------------------------------
    def tell(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"refactor-lsp: {message}"))

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        """A background task kept referenced, whose failure is logged rather than lost."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    # -- settings ------------------------------------------------------------------------
    async def refresh_settings(self, uri: str) -> None:
        """Ask the editor for its settings for this document's folder (cached until they change)."""
        folder = self.settings.folder_for(uri)
        if self.settings.has_editor_settings(folder) or not self._caps("workspace", "configuration"):
            return
        try:
            answer = await asyncio.wait_for(
                self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(scope_uri=uri, section=SECTION)])
                ),
                CLIENT_REPLY_TIMEOUT_S,
            )
        except Exception as exc:  # the editor does not answer: go on with what we have
            log.warning("workspace/configuration failed: %s", exc)
            return
        self.settings.set_editor_settings(folder, answer[0] if answer else None)

    def config_for(self, uri: str) -> Config:
        """The document's settings; each problem in them is shown once."""
        loaded = self.settings.load(self.settings.folder_for(uri))
        for problem in self.settings.new_problems(loaded):
            log.warning(problem)
            self.tell(problem + " — the rest of the settings still apply", types.MessageType.Warning)
        return loaded.config

    # -- refactor ------------------------------------------------------------------------
    async def refactor(self, args: RefactorArguments) -> RefactorReply:
        uri = args.uri
        if uri in self.running:
            message = (
                "a refactor is already running on this file; wait for it, or cancel it "
                "(Cancel in the progress notification, or the refactorLsp.cancel command)"
            )
            self.tell(message, types.MessageType.Warning)
            return RefactorReply(RefactorStatus.BUSY, message)
        try:
            document = self.workspace.get_text_document(uri)
            text, version = document.source, document.version
        except Exception:
            text, version = None, None
        if text is None or (version is None and not _exists(uri)):
            message = f"{uri} is not open in the editor; open it and try again"
            self.tell(message, types.MessageType.Error)
            return RefactorReply(RefactorStatus.ERROR, message)
        # Registered before any await, so a cancel that follows the request at once finds it.
        running = Running(uri, asyncio.get_running_loop().create_task(self._refactor(args, text, version)))
        self.running[uri] = running
        running.task.add_done_callback(
            lambda _t: self.running.pop(uri, None) if self.running.get(uri) is running else None
        )
        if args.wait:
            return await asyncio.shield(running.task)
        self.background.add(running.task)
        running.task.add_done_callback(self.background.discard)
        # Reply once the settings request has been answered: Emacs 28's jsonrpc (eglot 1.9) leaves a
        # request that arrives in the same read as the executeCommand reply unhandled.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(running.settings_read.wait(), CLIENT_REPLY_TIMEOUT_S)
        return RefactorReply(RefactorStatus.STARTED)

    async def _refactor(self, args: RefactorArguments, text: str, version: int | None) -> RefactorReply:
        """One refactor; a cancellation at any point ends in a calm "cancelled" outcome."""
        try:
            await self.refresh_settings(args.uri)
            running = self.running.get(args.uri)
            if running is not None:
                running.settings_read.set()
            return await self._run_refactor(args, text, version)
        except asyncio.CancelledError:
            running = self.running.get(args.uri)
            reason = running.cancel_reason if running and running.cancel_reason else "the refactor was cancelled"
            message = f"{reason}; nothing was applied"
            self.tell(message)
            return RefactorReply(RefactorStatus.CANCELLED, message)

    def _request(self, args: RefactorArguments, text: str) -> RefactorRequest:
        """The editor's request in the pipeline's terms: offsets into the snapshot, the file's path."""
        from .refactor import RefactorRequest

        mapper = PositionMapper(text, self.encoding)
        start = end = 0
        if args.range is not None:
            start = mapper.offset(args.range.start.line, args.range.start.character)
            end = mapper.offset(args.range.end.line, args.range.end.character)
        try:
            language_id = self.workspace.get_text_document(args.uri).language_id
        except Exception:
            language_id = None
        return RefactorRequest(
            path=to_fs_path(args.uri) or args.uri,
            text=text,
            start=min(start, end),
            end=max(start, end),
            instruction=args.instruction,
            action_id=args.action_id,
            backend=args.backend,
            prediction=args.prediction,
            diagnostics=args.diagnostics,
            language_id=language_id,
        )

    async def _run_refactor(self, args: RefactorArguments, text: str, version: int | None) -> RefactorReply:
        from .apply import apply_result
        from .refactor import RefactorError

        config = self.config_for(args.uri)
        try:
            plan = self.engine.plan(self._request(args, text), config)
        except RefactorError as exc:
            return self._failed(args.uri, str(exc), None)
        backend = plan.requested
        progress = ProgressReporter(self, args.uri, f"{TITLE_PREFIX}{plan.title}", f"{backend.name} ({backend.model})")
        # The editor creates the progress token while the backend starts: that round trip is not on the
        # way to the first token (a report made before the token exists waits for it).
        begun = self.spawn(progress.begin(self.running.get(args.uri)), "progress begin")
        try:
            result: RefactorResult = await self.engine.run(plan, progress.report)
            stats = result.stats
            stats.uri = args.uri
            if not result.edits:
                stats.applied = False
                self._report(stats, "no changes: the model's answer equals the current text")
                return RefactorReply(RefactorStatus.UNCHANGED, stats=stats_payload(stats))
            if config.refactor.preview:
                progress.finishing()  # the editor may now wait for the user to confirm the preview
            outcome: ApplyOutcome = await apply_result(self, args.uri, version, result, config.refactor.preview)
            stats.applied = outcome.applied
            self._report(stats, outcome.message, outcome.message_type)
            return RefactorReply(RefactorStatus(outcome.status), outcome.message, stats_payload(stats))
        except RefactorError as exc:
            return self._failed(args.uri, str(exc), exc.stats)
        finally:
            try:
                if not begun.done():  # a quick failure: let the token begin, so that it ends in order
                    await asyncio.wait([begun], timeout=CLIENT_REPLY_TIMEOUT_S)
            finally:
                progress.end()

    def _failed(self, uri: str, message: str, stats: RefactorStats | None) -> RefactorReply:
        log.warning("refactor of %s failed: %s", uri, message)
        self.tell(message, types.MessageType.Error)
        if stats is not None:
            stats.uri, stats.applied = uri, False
            self._publish(stats)
        return RefactorReply(RefactorStatus.ERROR, message, stats_payload(stats) if stats else None)

    def _report(
        self, stats: RefactorStats, outcome: str | None = None, kind: types.MessageType = types.MessageType.Info
    ) -> None:
        summary = stats.summary()
        notes = "; ".join(stats.notes)
        text = summary + (f" — {outcome}" if outcome else "") + (f" ({notes})" if notes else "")
        self.tell(text, kind)
        self._publish(stats)

    def _publish(self, stats: RefactorStats) -> None:
        from .stats import append_history

        log.info("refactor stats: %s", stats.detail())
        self.protocol.notify(STATS_NOTIFICATION, stats_payload(stats))
        try:
            append_history(stats)
        except OSError as exc:
            log.warning("cannot write the refactor history: %s", exc)

    def cancel(self, uri: str | None, reason: str = "the refactor was cancelled") -> int:
        count = 0
        for running in list(self.running.values()):
            if uri is None or running.uri == uri:
                running.cancel_reason = reason
                running.task.cancel()
                count += 1
        return count


def _exists(uri: str) -> bool:
    path = to_fs_path(uri)
    return bool(path and os.path.exists(path))


class ProgressReporter:
    """A fresh progress token per refactor; reports throttled by the pipeline; always ended."""

    def __init__(self, server: RefactorServer, uri: str, title: str, backend: str) -> None:
        self.server = server
        self.uri = uri
        self.title = title
        self.backend = backend
        self.token: str | None = None
        self.pending: Progress | None = None  # the last report made before the token existed
        self.ended = False

    async def begin(self, running: Running | None) -> None:
        if not self.server.supports_progress:
            return
        token = f"{PROGRESS_TOKEN_PREFIX}{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), CLIENT_REPLY_TIMEOUT_S)
        except Exception as exc:
            log.warning("the editor did not create a progress token: %s", exc)
            return
        if self.ended:
            return  # the refactor is over: no begin after the end
        self.token = token
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title=self.title, message=f"on {self.backend}", cancellable=True, percentage=0),
        )
        if self.pending is not None:
            self.report(self.pending)
        future = self.server.work_done_progress.tokens.get(token)
        if future is not None and running is not None:
            loop = asyncio.get_running_loop()

            def on_cancel(f: Any) -> None:
                if f.cancelled():
                    running.cancel_reason = "cancelled from the progress notification"
                    loop.call_soon_threadsafe(running.task.cancel)

            future.add_done_callback(on_cancel)

    def report(self, progress: Progress) -> None:
        if self.token is None:
            self.pending = progress
            return
        rate = f" · {progress.tokens_per_s:.0f} tok/s" if progress.tokens_per_s else ""
        message = f"{progress.generated_chars}/{progress.predicted_chars} chars{rate} on {self.backend}"
        percentage = int(progress.fraction * 100)
        self.server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )
        # The same figures as fields, for plugins (a statusline): never parsed out of the message.
        payload = ProgressPayload(
            token=self.token,
            uri=self.uri,
            percentage=percentage,
            generated_chars=progress.generated_chars,
            predicted_chars=progress.predicted_chars,
            elapsed_s=round(progress.elapsed_s, 3),
            tokens_per_s=progress.tokens_per_s,
            message=message,
        )
        self.server.protocol.notify(PROGRESS_NOTIFICATION, payload.to_json())

    def finishing(self) -> None:
        if self.token is not None:
            self.server.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message="applying the edit", percentage=100)
            )

    def end(self) -> None:
        self.ended = True
        if self.token is None:
            return
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message="done"))
        future = self.server.work_done_progress.tokens.pop(self.token, None)
        if future is not None and not future.done():
            future.set_result(None)
        self.token = None


server = RefactorServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: RefactorServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    ls.settings.init_options = options
    if isinstance(options, Mapping):
        ls.settings.workspace_trusted_by_editor = (
            options.get("workspaceTrusted", options.get("workspace_trusted")) is True
        )
        ls.settings.configuration_trusted = (
            options.get("configurationTrusted", options.get("configuration_trusted")) is True
        )
    folders = [to_fs_path(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [to_fs_path(params.root_uri)]
    ls.settings.workspace_folders = [Path(f) for f in folders if f]


@server.feature(types.INITIALIZED)
def on_initialized(ls: RefactorServer, params: types.InitializedParams) -> None:
    from . import apply, engine, stats  # noqa: F401  # the pipeline, now that the editor has its answer
    from .startup import settle

    settle()
    package_log = logging.getLogger("lsp_server")
    if not ls.verbose:
        package_log.setLevel(ls.settings.load(None).config.log_level.upper())


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_change_configuration(ls: RefactorServer, params: types.DidChangeConfigurationParams) -> None:
    ls.settings.invalidate()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def on_watched_files(ls: RefactorServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.settings.invalidate()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_save(ls: RefactorServer, params: types.DidSaveTextDocumentParams) -> None:
    if params.text_document.uri.endswith(("/.refactor-lsp.toml", "/config.toml")):
        ls.settings.invalidate()


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: RefactorServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.cancel(params.text_document.uri, "the document was closed during the refactor")


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[KIND], resolve_provider=True),
)
def on_code_action(ls: RefactorServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    if not kind_requested(params.context.only):
        return None
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    config = ls.config_for(uri)
    mapper = PositionMapper(document.source, ls.encoding)
    start = mapper.offset(params.range.start.line, params.range.start.character)
    end = mapper.offset(params.range.end.line, params.range.end.character)
    lsp_range = {
        "start": {"line": params.range.start.line, "character": params.range.start.character},
        "end": {"line": params.range.end.line, "character": params.range.end.character},
    }
    diagnostics = [f"line {d.range.start.line + 1}: {d.message}" for d in params.context.diagnostics or []]
    offered = list_actions(
        config,
        uri=uri,
        text=document.source,
        start=min(start, end),
        end=max(start, end),
        lsp_range=lsp_range,
        diagnostics=diagnostics,
    )
    resolves = ls.resolves_actions
    actions = []
    for action in offered:
        code_action = types.CodeAction(title=action.title, kind=KIND, data=action.data)
        if not resolves:
            # Clients that do not resolve (eglot, ALE) get the command now; it replies at once
            # because some of them give up on a long executeCommand.
            code_action.command = _command(action.title, {**action.data, "wait": False})
        actions.append(code_action)
    return actions


def _command(title: str, data: Mapping[str, Any]) -> types.Command:
    return types.Command(title=title, command=REFACTOR_COMMAND, arguments=[dict(data)])


@server.feature(types.CODE_ACTION_RESOLVE)
def on_code_action_resolve(ls: RefactorServer, action: types.CodeAction) -> types.CodeAction:
    if isinstance(action.data, Mapping) and action.command is None:
        action.command = _command(action.title, action.data)
    return action


@server.command(REFACTOR_COMMAND)
async def refactor_command(ls: RefactorServer, arguments: RefactorArguments) -> dict[str, Any]:
    return (await ls.refactor(arguments)).to_json()


@server.command(CANCEL_COMMAND)
async def cancel_command(ls: RefactorServer, *arguments: Any) -> dict[str, Any]:
    # A coroutine on purpose: handlers' tasks start in arrival order, so a refactor requested just
    # before this has registered itself by the time this runs.
    target = arguments[0] if arguments else None
    uri = target.get("uri") if isinstance(target, Mapping) else target if isinstance(target, str) else None
    count = ls.cancel(uri)
    if count == 0:
        ls.tell("no refactor is running" + (" on this file" if uri else ""))
    return {"cancelled": count}


@server.command(SHOW_STATS_COMMAND)
def show_stats_command(ls: RefactorServer, *arguments: Any) -> dict[str, Any]:
    from .stats import read_history, summarize_history

    records = read_history()
    summaries = summarize_history(records)
    if not summaries:
        ls.tell("no refactors recorded yet")
    else:
        ls.tell(" | ".join(s.line() for s in summaries))
    return {
        "count": len(records),
        "backends": [
            {
                "backend": s.backend,
                "speedup": s.speedup,
                "modes": [m.__dict__ for m in s.modes],
            }
            for s in summaries
        ],
    }


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: RefactorServer, params: None) -> None:
    ls.shutdown_requested = True
    ls.cancel(None, "the server is shutting down")
    tasks = [r.task for r in ls.running.values()] + list(ls.background)
    for task in tasks:
        task.cancel()
    if tasks:
        with contextlib.suppress(Exception):
            await asyncio.wait(tasks, timeout=1.0)
    await ls.engine.close()


@server.feature(types.EXIT)
def on_exit(ls: RefactorServer, params: None) -> None:
    """End now, as the LSP spec says: 0 after `shutdown`, else 1. Streams still running end with the
    process (their connections close), so no billed tokens keep coming; nothing waits for them."""
    for running in ls.running.values():
        running.task.cancel()
    for handler in logging.getLogger("lsp_server").handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(0 if ls.shutdown_requested else 1)


_LOG_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
    logging.DEBUG: types.MessageType.Log,
}


class ClientLogHandler(logging.Handler):
    """Python logging → window/logMessage. Nothing is ever printed to stdout (it is the protocol)."""

    def __init__(self, ls: RefactorServer) -> None:
        super().__init__()
        self.ls = ls

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = _LOG_LEVELS.get(record.levelno, types.MessageType.Log)
            self.ls.window_log_message(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:
            pass


def serve(log_file: str | None = None, verbose: int = 0) -> None:
    package_log = logging.getLogger("lsp_server")
    package_log.setLevel(logging.DEBUG if verbose >= 2 else logging.INFO)
    package_log.propagate = False
    server.verbose = verbose
    handler = ClientLogHandler(server)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    package_log.addHandler(handler)
    if log_file:
        from .logs import file_handler

        package_log.addHandler(file_handler(log_file))
    server.start_io()
