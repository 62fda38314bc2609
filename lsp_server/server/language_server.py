"""The language server object: what the editor told (capabilities, settings, open documents), its
messages, its background tasks and the refactors running, one `RequestJob` each (job.py). The LSP
handlers that drive it are in `handlers.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .. import __version__
from ..config.schema import Config, ConfigError
from ..regions import ScopeCache
from ..text import PositionEncoding, inert
from .job import CANCELLED, NAMED, RequestJob
from .progress import CLIENT_REPLY_TIMEOUT_S
from .settings import SECTION, SettingsStore
from .wire import (
    ApplyChangesArguments,
    BatchTargets,
    RawAnswer,
    RefactorArguments,
    RefactorReply,
    RefactorStatus,
    edit_answer,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Generator
    from concurrent.futures import Future

    from pygls.workspace import TextDocument

    from ..backend.memory import BackendMemory
    from ..pipeline.engine import Engine
    from ..pipeline.request import RequestKind
    from ..stats.history import History

# The refactor pipeline (engine, backends, hygiene, apply, stats) is imported once `initialize`
# has been answered (handlers.on_initialized), not before: the editor waits for that answer.

log = logging.getLogger(__name__)


class _Unreadable:
    """A message that could not be read and has been answered already; pygls skips it (no version)."""

    jsonrpc = "unreadable"


class RefactorProtocol(LanguageServerProtocol):
    """pygls 2.1.1 with what it gets wrong put right (docs/development.md, "Workarounds for pygls"):
    a request it cannot read is answered, a request after `shutdown` too, and its bookkeeping of
    futures forgets each one once it is done, so a day of typing does not grow the server."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls logs a request whose params do not fit the LSP types (a position on line -1) and
        never answers it, so the editor waits forever: answer it with the error instead."""
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            log.warning("cannot read the %s request %r: %s", data.get("method"), data.get("id"), error)
            self._send_response(data["id"], None, error.to_response_error())
            return _Unreadable()

    def _send_response(self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None) -> None:
        """pygls puts a failed handler's traceback in its error reply, which editors log (Neovim's lsp.log
        at ERROR): it goes only at debug level (-vv); the reply keeps its one-line message."""
        data = error.data if error is not None else None
        if error is not None and isinstance(data, dict) and "traceback" in data and not self._server_verbose():
            error = types.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)

    def _server_verbose(self) -> bool:
        return getattr(self._server, "verbose", 0) >= 2

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

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Callable[..., Any],
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls keeps the future of every handler that is a coroutine, a generator (each built-in
        notification: didOpen, didChange, ...) or runs in a thread in `_request_futures`, and only a
        request's reply removes it: every notification left one behind for ever (about 2 KB; with the
        exception and the whole text when the document was never opened). Forgotten once done."""

        def forget(future: Future[Any]) -> None:
            if self._request_futures.get(msg_id) is future:
                self._request_futures.pop(msg_id, None)
            callback(future)

        super()._execute_handler(msg_id, handler, forget, args, kwargs)

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: Any = None,
    ) -> Future[Any]:
        """pygls keeps a request to the editor until the editor answers: one the server gave up on (a
        timeout, a cancelled refactor) and the editor never answers stayed for ever. Forgotten when
        the server stops waiting; a late answer is then logged by pygls as one to an unknown id."""
        request_id = msg_id if msg_id is not None else str(uuid.uuid4())
        future = super().send_request(method, params, callback, request_id)

        def forget(done: Future[Any]) -> None:
            if done.cancelled() and self._request_futures.get(request_id) is done:
                self._request_futures.pop(request_id, None)
                self._result_types.pop(request_id, None)

        future.add_done_callback(forget)
        return future

    def get_result_type(self, method: str) -> type[Any] | None:  # type: ignore[override]  # pygls caches its own
        """An editor's answer to `workspace/applyEdit` comes as the JSON it sent (RefactorServer.apply_edit
        reads it): pygls's own reading took `"applied": "false"` for true, and left an answer it could not
        read (`null`, `{}`) unanswered, so the refactor waited for its timeout."""
        if method == types.WORKSPACE_APPLY_EDIT:
            return RawAnswer
        return super().get_result_type(method)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        """A change to a document that is not open (never opened, or its `didOpen` was over the
        message bound and skipped) has no text to change: pygls raised for each, and showed the
        editor "Error in server" on every keystroke. Dropped, with a line at debug level."""
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.debug("a change to %s, which is not open, is ignored", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def notify(self, method: str, params: Any | None = None) -> None:
        """Every notification leaves here: its text (messages, logs, progress titles, stats) is made
        inert first (text.neutralise_links), so what a repository, a backend or a model wrote is never
        a link in any editor. Names that identify something (`uri`, `token`) go out as they came."""
        if params is not None:
            plain = inert(self._converter.unstructure(params))
            params = plain if isinstance(params, dict | list) else self._converter.structure(plain, type(params))
        super().notify(method, params)


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
        self.jobs: dict[str, RequestJob] = {}  # the refactor running on each document
        # Each open document's lines and definitions, kept per version: a cursor move does not scan again.
        self.scope_caches: dict[str, ScopeCache] = {}
        self.background: set[asyncio.Task[Any]] = set()
        self.verbose = 0
        self.shutdown_requested = False
        # `initializationOptions.progressFields`: the editor's plugin reads `refactorLsp/progress`. Other
        # editors get `$/progress` alone: a notification no handler reads still costs both sides a parse.
        self.wants_progress_fields = False
        self._engine: Engine | None = None
        self._history: History | None = None
        self._backend_memory: BackendMemory | None = None

    @property
    def history(self) -> History:
        """The refactor history this server records to and `showStats` reads."""
        if self._history is None:
            from ..stats.history import History

            self._history = History()
        return self._history

    @property
    def engine(self) -> Engine:
        """The server's one engine (its clients, prediction memory and probes), made on first use. `auto`
        (edit format, prediction) learns from the history, read here once, and may try the other format
        near its threshold: the server records every refactor, so what it tries is learnt."""
        if self._engine is None:
            from ..pipeline.engine import Engine

            records = self.history.read()
            self._engine = Engine.from_history(records, try_formats=True, backend_memory=self.backend_memory)
        return self._engine

    @property
    def backend_memory(self) -> BackendMemory:
        """Each backend's context window and characters per token (a state file), the engine's too."""
        if self._backend_memory is None:
            from ..backend.memory import BackendMemory

            self._backend_memory = BackendMemory()
        return self._backend_memory

    def learn_windows(self) -> None:
        """Ask the default backend (and its fallbacks) for its context window now, in the background:
        by the first refactor it is known, and the refactor does not wait for it."""
        config = self.settings.load(None).config
        try:
            first = config.backend()
        except ConfigError:
            return  # said when a refactor asks for it
        for backend in [first, *(config.backends[name] for name in first.fallback if name in config.backends)]:
            self.backend_memory.start_probe(backend)

    def bookkeeping(self) -> str:
        """What the session keeps, counted (logged at debug level at shutdown): each figure stays
        small however long the session runs (tests/lsp/test_long_session.py)."""
        protocol = self.protocol
        return (
            f"{len(protocol._request_futures)} request futures, {len(protocol._result_types)} result types, "
            f"{len(self.work_done_progress.tokens)} progress tokens, {len(self.workspace.text_documents)} open "
            f"documents, {len(self.scope_caches)} scope caches, {len(self.jobs)} refactors, "
            f"{len(self.background)} background tasks"
        )

    def notify(self, method: str, params: Any) -> None:
        self.protocol.notify(method, params)

    # -- documents: only what the editor has open ----------------------------------------------
    def open_document(self, uri: str) -> TextDocument | None:
        """The document as the editor has it open, or None. Never read from disk: pygls's
        `get_text_document` would read any URI whole, on the event loop (a FIFO blocks the server),
        and a refactor would then send a file the editor never opened to the backend."""
        return self.workspace.text_documents.get(unquote(uri))

    def scope_cache(self, uri: str) -> ScopeCache:
        """The open document's scope cache (dropped when the editor closes the document)."""
        cache = self.scope_caches.get(uri)
        if cache is None:
            cache = self.scope_caches[uri] = ScopeCache()
        return cache

    # -- what `apply` needs of the editor ------------------------------------------------------
    def current_document(self, uri: str) -> tuple[str, int | None]:
        document = self.open_document(uri)
        if document is None:  # closed meanwhile (closing cancels the refactor; this is the backstop)
            raise LookupError(f"{uri} is no longer open in the editor")
        return document.source, document.version

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        """The editor's answer to the edit. An editor that answers with a JSON-RPC error rather than
        `applied: false`, or with what says neither true nor false (`null`, no `applied`, `"yes"`:
        wire.edit_answer), refused it all the same: read as that refusal, so the user gets its one message
        (edit.apply_parts) rather than a failed request, or nothing at all from a request that does not wait."""
        try:
            answer = await self.protocol.send_request_async(types.WORKSPACE_APPLY_EDIT, params)
        except JsonRpcException as error:
            log.info("the editor answered workspace/applyEdit with an error: %s", error)
            return types.ApplyWorkspaceEditResult(
                applied=False, failure_reason=f"it answered with an error: {error.message or error.code}"
            )
        return edit_answer(answer)  # the JSON as it came (RefactorProtocol.get_result_type)

    # -- client facts --------------------------------------------------------------------
    @property
    def encoding(self) -> PositionEncoding:
        value = getattr(self.workspace.position_encoding, "value", self.workspace.position_encoding)
        return "utf-8" if value == "utf-8" else "utf-32" if value == "utf-32" else "utf-16"

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

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """A background task kept referenced, whose failure is logged rather than lost."""
        return self.keep(asyncio.get_running_loop().create_task(coro, name=name), name)

    def keep(self, task: asyncio.Task[Any], name: str, *, told: bool = False) -> asyncio.Task[Any]:
        """`task` kept referenced until it is done, its failure logged rather than lost; `told`: shown to
        the user as well, for work the user asked for and no reply will report (`wait: false`)."""
        self.background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.background.discard(t)
            error = None if t.cancelled() else t.exception()
            if error is None:
                return
            log.error("%s failed", name, exc_info=error)
            if told:
                reason = str(error) or type(error).__name__
                self.tell(f"{name} failed: {reason} (the server's log has the details)", types.MessageType.Error)

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

    # -- refactors -----------------------------------------------------------------------
    async def refactor(
        self,
        args: RefactorArguments,
        each: BatchTargets | None = None,
        snippet: str | None = None,
        merge_with_model: bool = False,
    ) -> RefactorReply:
        """Start the request the editor asked for: one region, with `each` each definition of the
        selection or the file, with `snippet` a merge of it, by the model even when the snippet is complete
        with `merge_with_model` (job.py, one job for every kind)."""
        uri = args.uri
        if self._holding(uri) is not None:
            message = (
                "a review is open on this file; keep or drop its changes, or cancel it (refactorLsp.cancel)"
                if self.jobs[uri].pending is not None
                else "a refactor is already running on this file; wait for it, or cancel it "
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
        snapshot = (document.source, document.version, document.language_id, self.scope_cache(uri))
        kind: RequestKind = "apply" if snippet is not None else "each" if each is not None else "refactor"
        job = RequestJob(
            self, args, *snapshot, kind=kind, each=each, snippet=snippet, merge_with_model=merge_with_model
        )
        # Registered before any await, so a cancel that follows the request at once finds it.
        task = job.start()
        self.jobs[uri] = job
        return await self._answer(job, task, args.wait)

    async def apply_changes(self, args: ApplyChangesArguments) -> RefactorReply:
        """What a plugin kept of the review its request was offered, applied (job.py, `resume`)."""
        job = self._holding(args.uri)
        if job is None or job.pending is None:
            message = "no review is open on this file (it was applied, cancelled or dropped); run the refactor again"
            self.tell(message, types.MessageType.Warning)
            return RefactorReply(RefactorStatus.ERROR, message)
        resumed = job.resume(args.review, args.keep)
        if isinstance(resumed, RefactorReply):  # refused, the review left open
            return resumed
        return await self._answer(job, resumed, wait=True)

    async def _answer(self, job: RequestJob, task: asyncio.Task[RefactorReply], wait: bool) -> RefactorReply:
        """The job's reply when `wait`, else at once (its outcome told through messages); the document
        freed once the job is done, unless it holds a review open for the plugin."""
        task.add_done_callback(lambda _t: self._release(job.uri, job))
        if wait:
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # this request itself was cancelled; the refactor goes on
                return RefactorReply(RefactorStatus.CANCELLED, job.cancel_message())
        # No reply reports this job: a failure is logged and told, never lost with the task.
        self.keep(task, f"{NAMED[job.kind]} of {job.uri}", told=True)
        # Reply once the settings request has been answered: Emacs 28's jsonrpc (eglot 1.9) leaves a
        # request that arrives in the same read as the executeCommand reply unhandled.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.settings_read.wait(), CLIENT_REPLY_TIMEOUT_S)
        return RefactorReply(RefactorStatus.STARTED)

    def _holding(self, uri: str) -> RequestJob | None:
        """The job that holds the document: a review left open too long is dropped first (and says so),
        whatever comes next, a refactor or a late answer to it."""
        held = self.jobs.get(uri)
        if held is not None and held.pending is not None and held.pending.expired():
            held.cancel("the review was left open too long; it was dropped")
            self._release(uri, held)
        return self.jobs.get(uri)

    def _release(self, uri: str, job: RequestJob) -> None:
        """Free the document of a job that is done and holds no review open."""
        done = job.task is None or job.task.done()
        if self.jobs.get(uri) is job and done and job.pending is None:
            self.jobs.pop(uri, None)

    def cancel(self, uri: str | None, reason: str = CANCELLED, session_ends: bool = False) -> tuple[int, int]:
        """Cancel the refactor of `uri` (None: every one); how many were stopped, and how many came too
        late (their edit already with the editor: they run to their end, job.cancel)."""
        jobs = [job for job in self.jobs.values() if uri is None or job.uri == uri]
        stopped = [job.cancel(reason, session_ends) for job in jobs]
        for job in jobs:  # a review held open ends here; a running job once its task does
            self._release(job.uri, job)
        return sum(stopped), len(jobs) - sum(stopped)
