"""One `refactorLsp.refactor` request, from the editor's arguments to the applied edit and its report.

A `RefactorJob` owns what is this refactor's alone: the document's snapshot (text and version) taken
when the request came, its progress in the editor, its cancel reason and its task. It plans once
(engine.plan), runs with progress (engine.run), applies a versioned edit (apply), and reports once:
a message, the `refactorLsp/stats` notification and the history. What it needs of the server is the
small `JobHost` protocol below, so the server holds jobs, not their pieces.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.uris import to_fs_path

from ..text import PositionEncoding, PositionMapper
from .actions import TITLE_PREFIX
from .progress import CLIENT_REPLY_TIMEOUT_S, ProgressClient, ProgressReporter
from .wire import STATS_NOTIFICATION, RefactorArguments, RefactorReply, RefactorStatus, stats_payload

if TYPE_CHECKING:
    from ..config.schema import Config
    from ..pipeline.engine import Engine
    from ..pipeline.plan import Plan, RefactorRequest
    from ..scope import ScopeCache
    from ..stats.history import History
    from ..stats.measured import RefactorStats

log = logging.getLogger(__name__)

CANCELLED = "the refactor was cancelled"


class JobHost(ProgressClient, Protocol):
    """What a job needs of the server: settings, its engine and history, messages, the editor's
    edits (apply.Editor) and progress (ProgressClient)."""

    @property
    def encoding(self) -> PositionEncoding: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def history(self) -> History: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    def current_document(self, uri: str) -> tuple[str, int | None]: ...

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult: ...

    async def refresh_settings(self, uri: str) -> None: ...

    def config_for(self, uri: str) -> Config: ...

    def tell(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...


class RefactorJob:
    """One refactor of one open document; `start()` runs it, `cancel()` stops it calmly."""

    def __init__(
        self,
        host: JobHost,
        args: RefactorArguments,
        text: str,
        version: int | None,
        language_id: str | None,
        scope_cache: ScopeCache | None = None,
    ) -> None:
        self.host = host
        self.args = args
        self.uri = args.uri
        self.text = text  # the document as it was when the request came: the edit is computed against it
        self.version = version
        self.language_id = language_id
        self.scope_cache = scope_cache  # the document's: the code action just scanned this text
        self.cancel_reason = ""
        self.settings_read = asyncio.Event()  # the editor answered workspace/configuration (or never will)
        self.task: asyncio.Task[RefactorReply] | None = None

    def start(self) -> asyncio.Task[RefactorReply]:
        self.task = asyncio.get_running_loop().create_task(self._run())
        # A task cancelled before it ever ran skips its own handler: say so here, once.
        self.task.add_done_callback(lambda t: self.cancelled() if t.cancelled() else None)
        return self.task

    def cancel(self, reason: str = CANCELLED) -> None:
        self.cancel_reason = reason
        if self.task is not None:
            self.task.cancel()

    def cancel_message(self) -> str:
        return f"{self.cancel_reason or CANCELLED}; nothing was applied"

    def cancelled(self) -> str:
        message = self.cancel_message()
        self.host.tell(message)
        return message

    # -- the flow ----------------------------------------------------------------------------------
    async def _run(self) -> RefactorReply:
        """One refactor; a cancellation at any point ends in a calm "cancelled" outcome."""
        try:
            await self.host.refresh_settings(self.uri)
            self.settings_read.set()
            if self.cancel_reason:  # a cancel that came while we waited, in case it was swallowed
                raise asyncio.CancelledError
            return await self._refactor()
        except asyncio.CancelledError:
            return RefactorReply(RefactorStatus.CANCELLED, self.cancelled())

    def _request(self) -> RefactorRequest:
        """The editor's request in the pipeline's terms: offsets into the snapshot, the file's path."""
        from ..pipeline.plan import RefactorRequest

        args = self.args
        start = end = 0
        if args.range is not None:
            index = self.scope_cache.line_index(self.text) if self.scope_cache else None
            mapper = PositionMapper(self.text, self.host.encoding, index)
            start = mapper.offset(args.range.start.line, args.range.start.character)
            end = mapper.offset(args.range.end.line, args.range.end.character)
        return RefactorRequest(
            path=to_fs_path(self.uri) or self.uri,
            text=self.text,
            start=min(start, end),
            end=max(start, end),
            instruction=args.instruction,
            action_id=args.action_id,
            backend=args.backend,
            prediction=args.prediction,
            diagnostics=args.diagnostics,
            language_id=self.language_id,
            edit_format=args.edit_format,
        )

    async def _refactor(self) -> RefactorReply:
        from ..pipeline.plan import RefactorError

        host = self.host
        config = host.config_for(self.uri)
        try:
            plan = host.engine.plan(self._request(), config, self.scope_cache)
        except RefactorError as exc:
            return self._failed(str(exc), None)
        backend = plan.requested
        title, on = f"{TITLE_PREFIX}{plan.title}", f"{backend.name} ({backend.model})"
        progress = ProgressReporter(host, self.uri, title, on, on_cancel=self.cancel)
        async with self.progress_shown(progress):
            return await self._run_plan(plan, config, progress)

    async def _run_plan(self, plan: Plan, config: Config, progress: ProgressReporter) -> RefactorReply:
        from ..pipeline.plan import RefactorError
        from .apply import apply_result

        host = self.host
        try:
            result = await host.engine.run(plan, progress.report)
            if not result.edits:
                stats = result.stats.with_outcome(self.uri, applied=False)
                self._report(stats, "no changes: the model's answer equals the current text")
                return RefactorReply(RefactorStatus.UNCHANGED, stats=stats_payload(stats))
            if config.refactor.preview:
                progress.finishing()  # the editor may now wait for the user to confirm the preview
            outcome = await apply_result(
                host, self.uri, self.version, result, config.refactor.preview, self.scope_cache
            )
            stats = result.stats.with_outcome(self.uri, applied=outcome.applied)
            self._report(stats, outcome.message, outcome.message_type)
            return RefactorReply(RefactorStatus(outcome.status), outcome.message, stats_payload(stats))
        except RefactorError as exc:
            from ..files.state import keep_refused_answer

            message = str(exc)
            kept = keep_refused_answer(exc.output) if exc.output is not None else None
            if kept is not None:
                message += f" (the model's answer: {kept})"
            return self._failed(message, exc.stats)

    @contextlib.asynccontextmanager
    async def progress_shown(self, progress: ProgressReporter) -> AsyncIterator[None]:
        """The progress, shown once the work has run a while (progress.PROGRESS_SHOW_DELAY_S) and
        ended in order whatever happens. The editor creates the token while the backend streams: that
        round trip is not on the way to the first token (a report made before the token exists waits
        for it)."""
        begun = self.host.spawn(progress.begin(), "progress begin")
        try:
            yield
        except asyncio.CancelledError:
            begun.cancel()  # cancelled: answer now, without waiting for the editor's progress token
            raise
        finally:
            try:
                if not begun.done() and progress.asked:  # the token is being made: let it begin, then end
                    await asyncio.wait([begun], timeout=CLIENT_REPLY_TIMEOUT_S)
                else:
                    begun.cancel()  # done before the progress was due: none is shown
            finally:
                progress.end()

    # -- reporting: one message, the stats notification, the history ------------------------------
    def _failed(self, message: str, stats: RefactorStats | None) -> RefactorReply:
        log.warning("refactor of %s failed: %s", self.uri, message)
        self.host.tell(message, types.MessageType.Error)
        if stats is not None:
            stats = stats.with_outcome(self.uri, applied=False)
            self._publish(stats)
        return RefactorReply(RefactorStatus.ERROR, message, stats_payload(stats) if stats else None)

    def _report(
        self, stats: RefactorStats, outcome: str | None = None, kind: types.MessageType = types.MessageType.Info
    ) -> None:
        from ..stats.words import summary

        notes = "; ".join(stats.notes)
        text = summary(stats) + (f" — {outcome}" if outcome else "") + (f" ({notes})" if notes else "")
        self.host.tell(text, kind)
        self._publish(stats)

    def _publish(self, stats: RefactorStats) -> None:
        from ..stats.words import detail

        log.info("refactor stats: %s", detail(stats))
        self.host.notify(STATS_NOTIFICATION, stats_payload(stats))
        self.host.history.append(stats)  # never raises: a failure is logged
