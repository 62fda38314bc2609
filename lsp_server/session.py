"""The server's state and the refactor flow behind `refactorLsp.refactor`, as LSP sees it.

The editor's arguments become one planned refactor (engine.plan), run with progress
(engine.run), applied as a versioned edit (apply), reported once (a message, the stats
notification, the history). `server.py` wires the LSP handlers to this.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from . import __version__
from .actions import TITLE_PREFIX
from .config import Config
from .edits import PositionEncoding, PositionMapper
from .progress import CLIENT_REPLY_TIMEOUT_S, ProgressReporter
from .settings import SECTION, SettingsStore
from .wire import STATS_NOTIFICATION, RefactorArguments, RefactorReply, RefactorStatus, stats_payload

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from .apply import ApplyOutcome
    from .engine import Engine
    from .refactor import RefactorRequest, RefactorResult
    from .stats import RefactorStats

# The refactor pipeline (engine, backends, hygiene, apply, stats) is imported once `initialize`
# has been answered (server.on_initialized), not before: the editor waits for that answer.

log = logging.getLogger(__name__)


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

    def handle_message(self, message: Any) -> None:
        """pygls drops a request that comes after `shutdown` without a word, and the editor waits for
        ever; the LSP specification says to answer it with InvalidRequest."""
        method = getattr(message, "method", None)
        request_id = getattr(message, "id", None)
        if self._shutdown and method not in (None, types.EXIT) and request_id is not None:
            error = JsonRpcInvalidRequest(f"the server is shutting down: {method} is not served after `shutdown`")
            self._send_response(request_id, None, error.to_response_error())
            return
        super().handle_message(message)


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

    # -- documents: only what the editor has open ----------------------------------------------
    def open_document(self, uri: str) -> TextDocument | None:
        """The document as the editor has it open, or None. Never read from disk: pygls's
        `get_text_document` would read any URI whole, on the event loop (a FIFO blocks the server),
        and a refactor would then send a file the editor never opened to the backend."""
        return self.workspace.text_documents.get(unquote(uri))

    # -- what `apply` needs of the editor ------------------------------------------------------
    def current_document(self, uri: str) -> tuple[str, int | None]:
        document = self.open_document(uri)
        if document is None:  # closed meanwhile (closing cancels the refactor; this is the backstop)
            raise LookupError(f"{uri} is no longer open in the editor")
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
            # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows a cancel that arrives as
            # the answer does, and a refactor cancelled then would run on.
            async with asyncio.timeout(CLIENT_REPLY_TIMEOUT_S):
                answer = await self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(scope_uri=uri, section=SECTION)])
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
        document = self.open_document(uri)
        if document is None:
            message = (
                f"{uri} is not open in the editor: refactor-lsp rewrites only open documents; open it and try again"
            )
            self.tell(message, types.MessageType.Error)
            return RefactorReply(RefactorStatus.ERROR, message)
        text, version = document.source, document.version
        # Registered before any await, so a cancel that follows the request at once finds it.
        running = Running(uri, asyncio.get_running_loop().create_task(self._refactor(args, text, version)))
        self.running[uri] = running
        running.task.add_done_callback(
            lambda _t: self.running.pop(uri, None) if self.running.get(uri) is running else None
        )
        # A task cancelled before it ever ran skips its own handler: say so here, once.
        running.task.add_done_callback(lambda t: self._cancelled(running) if t.cancelled() else None)
        if args.wait:
            try:
                return await asyncio.shield(running.task)
            except asyncio.CancelledError:
                if not running.task.cancelled():
                    raise  # this request itself was cancelled; the refactor goes on
                return RefactorReply(RefactorStatus.CANCELLED, self._cancel_message(running))
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
                if running.cancel_reason:  # a cancel that came while we waited, in case it was swallowed
                    raise asyncio.CancelledError
            return await self._run_refactor(args, text, version)
        except asyncio.CancelledError:
            return RefactorReply(RefactorStatus.CANCELLED, self._cancelled(self.running.get(args.uri)))

    @staticmethod
    def _cancel_message(running: Running | None) -> str:
        reason = running.cancel_reason if running and running.cancel_reason else "the refactor was cancelled"
        return f"{reason}; nothing was applied"

    def _cancelled(self, running: Running | None) -> str:
        message = self._cancel_message(running)
        self.tell(message)
        return message

    def _request(self, args: RefactorArguments, text: str) -> RefactorRequest:
        """The editor's request in the pipeline's terms: offsets into the snapshot, the file's path."""
        from .refactor import RefactorRequest

        mapper = PositionMapper(text, self.encoding)
        start = end = 0
        if args.range is not None:
            start = mapper.offset(args.range.start.line, args.range.start.character)
            end = mapper.offset(args.range.end.line, args.range.end.character)
        document = self.open_document(args.uri)
        language_id = document.language_id if document is not None else None
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
            edit_format=args.edit_format,  # type: ignore[arg-type]
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
            message = str(exc)
            if exc.output is not None:
                kept = keep_refused_answer(exc.output)
                if kept is not None:
                    message += f" (the model's answer: {kept})"
            return self._failed(args.uri, message, exc.stats)
        except asyncio.CancelledError:
            begun.cancel()  # cancelled: answer now, without waiting for the editor's progress token
            raise
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
        from .history import append_history

        log.info("refactor stats: %s", stats.detail())
        self.protocol.notify(STATS_NOTIFICATION, stats_payload(stats))
        append_history(stats)  # never raises: a failure is logged

    def cancel(self, uri: str | None, reason: str = "the refactor was cancelled") -> int:
        count = 0
        for running in list(self.running.values()):
            if uri is None or running.uri == uri:
                running.cancel_reason = reason
                running.task.cancel()
                count += 1
        return count


def keep_refused_answer(answer: str) -> Path | None:
    """Write the answer a refusal held back to a file only the user can read, so they can judge it.

    One file, replaced each time, in the state folder (never next to the document), written as every
    file there is (history.write_state_file): a link planted there is replaced, never followed.
    """
    from .history import REFUSED_ANSWER, write_state_file

    try:
        return write_state_file(REFUSED_ANSWER, answer.encode("utf-8", errors="replace"))
    except OSError as exc:
        log.warning("cannot keep the refused answer: %s", exc)
        return None
