"""One request of the editor's (`refactorLsp.refactor`, `.refactorEach`, `.applySnippet`), from its
arguments to the applied edit and its report.

A `RequestJob` owns what is this request's alone: the document's snapshot (text and version) taken
when the request came, its progress in the editor, its cancel reason and its task. Every kind goes
the same way: its targets (pipeline/request.py), one run through the runner with progress, the
targets settled (pipeline/outcome.py), the settled edits applied as ONE versioned workspace edit
(apply.py: one undo, each region rebased over the user's typing), and one report: a message, the
`refactorLsp/stats` notification, the history and the reply. What it needs of the server is the small
`JobHost` protocol below, so the server holds jobs, not their pieces.

Cancel (`refactorLsp.cancel`, the progress's Cancel button, closing the document, shutting down)
stops every refactor in flight and applies nothing. Once the edit is on its way to the editor a
cancel comes too late, and the reply says what the editor did with it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.uris import to_fs_path

from ..text import PositionEncoding, PositionMapper
from .offer import Pending, kept_in_preview, offered
from .progress import ProgressClient, ProgressReporter, progress_for, shown
from .wire import STATS_NOTIFICATION, BatchTargets, RefactorArguments, RefactorReply, RefactorStatus

if TYPE_CHECKING:
    from ..config.schema import Config
    from ..pipeline.engine import Engine
    from ..pipeline.outcome import Ended, Settled
    from ..pipeline.request import Request, RequestKind, Source
    from ..pipeline.review import Review
    from ..pipeline.runner import TargetOutcome
    from ..regions import ScopeCache
    from ..stats.history import History
    from .edit import PartsOutcome

log = logging.getLogger(__name__)

CANCELLED = "the refactor was cancelled"
# What the messages call a request, by its kind; what a cancel says when no other reason was given.
NAMED = {"refactor": "the refactor", "each": "the batch", "apply": "the apply"}
CANCELLED_KIND = {kind: f"{name} was cancelled" for kind, name in NAMED.items()}
UNCHANGED = {
    "refactor": "no changes: the model's answer equals the current text",
    "each": "no changes: the model's answer equals the current text",
    "apply": "no changes: the document already holds the snippet's code",
}
APPLY_LABEL = "Apply with prediction"
NO_PREVIEW = (
    'this editor cannot preview each change (it takes no change annotations): ask with review "changes" '
    "(a plugin's review), or without a review; nothing was sent"
)


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


@dataclass(frozen=True)
class Ran:
    """What a request's run came to: its targets settled, and the run's figures."""

    request: Request
    settled: Settled
    wall_ms: float
    concurrency: int


class RequestJob:
    """One request on one open document; `start()` runs it, `cancel()` stops it calmly. `kind` says
    what its targets are: a cursor's region (`refactor`), each definition of the selection or the file
    (`each`, with `each` saying which), or the parts of `snippet` (`apply`)."""

    def __init__(
        self,
        host: JobHost,
        args: RefactorArguments,
        text: str,
        version: int | None,
        language_id: str | None,
        scope_cache: ScopeCache | None = None,
        kind: RequestKind = "refactor",
        each: BatchTargets | None = None,
        snippet: str | None = None,
        merge_with_model: bool = False,
    ) -> None:
        self.host = host
        self.args = args
        self.uri = args.uri
        self.text = text  # the document as it was when the request came: the edit is computed against it
        self.version = version
        self.language_id = language_id
        self.scope_cache = scope_cache  # the document's: the code action just scanned this text
        self.kind = kind
        self.each = each
        self.snippet = snippet
        self.merge_with_model = merge_with_model  # a complete snippet is spliced as written unless this is set
        self.stop = threading.Event()  # a cancel, as a worker thread finding the targets sees it
        self.cancel_reason = ""
        # The edit is on its way to the editor or in the document (and its preview's subset being checked):
        # a user's cancel comes too late for it, and what became of the edit is what is reported.
        self.edit_out = False
        self.pending: Pending | None = None  # a review offered to the plugin, not answered yet
        self.settings_read = asyncio.Event()  # the editor answered workspace/configuration (or never will)
        self.task: asyncio.Task[RefactorReply] | None = None

    def start(self) -> asyncio.Task[RefactorReply]:
        self.task = asyncio.get_running_loop().create_task(self._run())
        # A task cancelled before it ever ran skips its own handler: say so here, once.
        self.task.add_done_callback(lambda t: self.cancelled() if t.cancelled() else None)
        return self.task

    def cancel(self, reason: str = CANCELLED, session_ends: bool = False) -> bool:
        """The user's cancel (the command, the progress's Cancel, closing the document, the server ending):
        what is running ends calmly, nothing applied, True. Once the edit is out (`edit_out`) it is too
        late, False: the user is told so (the edit's outcome follows), never that it was cancelled. A
        session that ends cancels the task itself; its reason is kept for what the job then says."""
        self.cancel_reason = reason
        if self.edit_out:
            log.info("a cancel came while the edit was on its way to the editor or in it: too late to stop it")
            if not session_ends:  # the session's end cancels the task: that says what became of the edit
                self.host.tell(
                    f"too late to cancel: {NAMED[self.kind]}'s edit is already with the editor; its outcome follows"
                )
            return False
        self.stop.set()
        if self.pending is not None:  # a review waiting for the plugin: dropped, nothing applied
            self.pending = None
            self.cancelled()
        elif self.task is not None:
            self.task.cancel()
        return True

    def cancel_message(self) -> str:
        reason = self.cancel_reason if self.cancel_reason not in ("", CANCELLED) else CANCELLED_KIND[self.kind]
        if self.edit_out:  # the session ended while the editor had the edit: what it did is not known here
            return f"{reason}; its edit had already gone to the editor, which may have applied it: check the document"
        return f"{reason}; nothing was applied" + ("" if self.kind == "refactor" else ", the document is as it was")

    def cancelled(self) -> str:
        message = self.cancel_message()
        self.host.tell(message)
        return message

    # -- the flow ----------------------------------------------------------------------------------
    async def _run(self) -> RefactorReply:
        """One request; a cancellation at any point ends in a calm "cancelled" outcome."""
        try:
            await self.host.refresh_settings(self.uri)
            self.settings_read.set()
            if self.cancel_reason:  # a cancel that came while we waited, in case it was swallowed
                raise asyncio.CancelledError
            return await self._request()
        except asyncio.CancelledError:
            return RefactorReply(RefactorStatus.CANCELLED, self.cancelled())

    def _mapper(self) -> PositionMapper:
        """Offsets into the snapshot and the editor's positions, each way (the document's lines reused)."""
        index = self.scope_cache.line_index(self.text) if self.scope_cache else None
        return PositionMapper(self.text, self.host.encoding, index)

    def _source(self, config: Config) -> Source:
        """The editor's request in the pipeline's terms: offsets into the snapshot, the file's path."""
        from ..pipeline.plan import RefactorRequest
        from ..pipeline.request import Source

        args = self.args
        start = end = 0
        if args.range is not None:
            mapper = self._mapper()
            start = mapper.offset(args.range.start.line, args.range.start.character)
            end = mapper.offset(args.range.end.line, args.range.end.character)
        start, end = min(start, end), max(start, end)
        request = RefactorRequest(
            path=to_fs_path(self.uri) or self.uri,
            text=self.text,
            start=start,
            end=end,
            instruction=args.instruction,
            action_id=args.action_id,
            backend=args.backend,
            prediction=args.prediction,
            diagnostics=args.diagnostics,
            language_id=self.language_id,
            edit_format=args.edit_format,
            snippet=self.snippet,
            merge_with_model=self.merge_with_model,
        )
        selection = (start, end) if args.range is not None and self.each != "file" else None
        return Source(self.uri, request, config, self.scope_cache, selection)

    async def _targets(self, source: Source) -> Request:
        """The request's targets (pipeline/request.py's KINDS). Those found line by line (definitions, a
        snippet's parts) are found in a worker thread, so a long file does not hold the editor up, and on
        a scope cache of their own: the document's is read by code actions on the event loop meanwhile.
        Raises NoTargets."""
        from ..pipeline.request import KINDS
        from ..regions import ScopeCache

        kind = KINDS[self.kind]
        if not kind.in_thread:
            return kind.find(self.host.engine, [source])
        alone = replace(source, cache=ScopeCache(), stop=self.stop.is_set)
        return await asyncio.to_thread(kind.find, self.host.engine, [alone])

    async def _request(self) -> RefactorReply:
        from ..pipeline.outcome import settle
        from ..pipeline.request import NoTargets
        from ..pipeline.review import review_of
        from ..pipeline.runner import Runner
        from .edit import previews

        host = self.host
        config = host.config_for(self.uri)
        if self.args.review == "preview" and not previews(host):  # asked for, and it would not be shown
            return self._failed(NO_PREVIEW)
        try:
            request = await self._targets(self._source(config))
        except NoTargets as exc:
            return self._failed(str(exc))
        run = Runner(host.engine, request.items, config.refactor.concurrency)
        progress = progress_for(
            self.host, self.uri, request, run, self.args.backend or config.default_backend, self.cancel, config
        )
        async with shown(self.host.spawn, progress):
            settled = settle(request, await run.run())
            ran = Ran(request, settled, run.wall_ms, run.concurrency)
            if settled.edited() and self.args.review == "changes":
                return self._offer(Pending(request, settled, review_of(settled), run.wall_ms, run.concurrency))
            return await self._finish(ran, config, progress)

    async def _finish(
        self, ran: Ran, config: Config, progress: ProgressReporter | None = None, reviewed: bool = False
    ) -> RefactorReply:
        """The settled targets applied as one edit (each change annotated; in the editor's preview, each
        with its checkbox, and what is kept checked), then recorded and reported. `reviewed`: the changes
        were kept in a plugin's review already."""
        from ..pipeline.outcome import end_request
        from ..pipeline.review import review_of
        from .edit import marked, previews

        settled = ran.settled
        applied: PartsOutcome | None = None
        outcomes = settled.outcomes
        if settled.edited():
            # The setting on an editor without a preview applies the edit as ever: none was reviewed.
            asked = config.refactor.preview or self.args.review == "preview"
            preview = not reviewed and asked and previews(self.host)
            if preview and progress is not None:
                progress.finishing()  # the editor may now wait for the user to confirm the preview
            review = review_of(settled)
            applied = await self._apply(ran.request, settled, review, preview)
            outcomes = marked(settled, applied)
            if preview and applied.outcome.applied:
                settled, outcomes, applied = await self._kept_in_preview(ran, review, applied, outcomes)
        note = applied.outcome.message if applied is not None else None
        ended = end_request(
            ran.request, settled, outcomes, ran.wall_ms, ran.concurrency, self.host.history, lambda _: self.uri, note
        )
        return self._report(ended, applied)

    async def _kept_in_preview(
        self, ran: Ran, review: Review, applied: PartsOutcome, outcomes: list[TargetOutcome]
    ) -> tuple[Settled, list[TargetOutcome], PartsOutcome]:
        """What the user ticked in the editor's preview, checked as a whole answer is: each target's stats
        say how many of its changes were kept; a kept subset that brings an error is undone at once, the
        message names why, and no target counts as applied."""
        from ..pipeline.review import kept_problem, kept_settled, needs_notes
        from .edit import ApplyOutcome, revert

        kept = kept_in_preview(review, ran.settled, applied)
        settled = kept_settled(ran.settled, review, kept)
        outcomes = [replace(o, stats=s.stats) for o, s in zip(outcomes, settled.outcomes, strict=True)]
        problem = await kept_problem(ran.settled, review, kept) if applied.dropped else None
        if problem is None:
            notes = needs_notes(review, kept)
            if notes:
                message = "; ".join(filter(None, [applied.outcome.message, *notes]))
                applied = replace(applied, outcome=replace(applied.outcome, message=message))
            return settled, outcomes, applied
        before, after = applied.sent_on, applied.left_as
        undone = before is not None and after is not None and await revert(self.host, self.uri, before, after)
        message = problem + (
            "; what the preview applied was undone, the document is as it was"
            if undone
            else "; the editor kept what the preview applied: undo it"
        )
        failed = ApplyOutcome(False, "rejected", message, types.MessageType.Error)
        outcomes = [o.ended("rejected", problem) if o.outcome == "applied" else o for o in outcomes]
        return settled, outcomes, replace(applied, outcome=failed)

    def _offer(self, pending: Pending) -> RefactorReply:
        """The changes offered to the plugin: nothing applied, the document held until it answers."""
        self.pending = pending
        mapper = self._mapper()

        def position(offset: int) -> dict[str, int]:
            line, character = mapper.position(offset)
            return {"line": line, "character": character}

        return offered(pending, position)

    def resume(self, review_id: str, keep: tuple[int, ...]) -> asyncio.Task[RefactorReply] | RefactorReply:
        """Apply what the plugin kept of the review it was offered (`refactorLsp.applyChanges`). An answer
        that is not one to this review (another review's id, a change it lacks) is refused at once and
        leaves it open; an answer ends the review here, before any await, so a second one finds none and
        the document stays held until this one's edit lands."""
        pending = self.pending
        if pending is None or pending.id != review_id:
            return self._failed("no such review is open on this file (the id names another); nothing was applied")
        unknown = sorted(set(keep) - set(pending.review.ids))
        if unknown:
            return self._failed(f"the review has no change {unknown[0]}; nothing was applied, the review is still open")
        self.pending = None
        self.task = asyncio.get_running_loop().create_task(self._resumed(pending, keep))
        self.task.add_done_callback(lambda t: self.cancelled() if t.cancelled() else None)
        return self.task

    async def _resumed(self, pending: Pending, keep: tuple[int, ...]) -> RefactorReply:
        from ..pipeline.review import kept_problem, kept_settled

        try:
            problem = await kept_problem(pending.settled, pending.review, keep)
            if problem is not None:
                return self._failed(f"{problem}; nothing was applied")
            settled = kept_settled(pending.settled, pending.review, keep)
            ran = Ran(pending.request, settled, pending.wall_ms, pending.concurrency)
            return await self._finish(ran, self.host.config_for(self.uri), reviewed=True)
        except asyncio.CancelledError:
            return RefactorReply(RefactorStatus.CANCELLED, self.cancelled())

    async def _apply(self, request: Request, settled: Settled, review: Review, preview: bool) -> PartsOutcome:
        """The settled edits as one workspace edit (a request applied whole: all of them or none,
        apply.apply_parts). Once it is on its way a cancel comes too late: what the editor did with it
        is what the user has, so that is what is reported."""
        from .edit import LABEL, EditPart, apply_parts

        parts = []
        for index in settled.edited():
            outcome = settled.outcomes[index]
            assert outcome.result is not None  # an "edit" outcome has its result
            label = LABEL if request.one else outcome.item.target.describe()
            changes = tuple(c.change for c in review.of_target(index))
            edits = [e for change in changes for e in change.edits]
            parts.append(EditPart(outcome.item.region, edits, label, changes))
        if request.kind == "apply":
            label = APPLY_LABEL
        else:
            label = LABEL if request.one else f"{LABEL}: {request.action}, each definition"
        self.edit_out = True  # for good: what became of it is what this job reports
        return await apply_parts(
            self.host, self.uri, self.version, self.text, parts, preview, self.scope_cache, label, request.whole
        )

    # -- reporting: one message, the stats notification, the reply ---------------------------------
    def _failed(self, message: str, record: dict[str, Any] | None = None) -> RefactorReply:
        log.warning("refactor of %s failed: %s", self.uri, message)
        self.host.tell(message, types.MessageType.Error)
        if record is not None:
            self.host.notify(STATS_NOTIFICATION, record)
        return RefactorReply(RefactorStatus.ERROR, message, record)

    def _report(self, ended: Ended, applied: PartsOutcome | None) -> RefactorReply:
        from ..stats.words import detail

        request, record = ended.request, ended.record(self.uri)
        for outcome in ended.outcomes:
            if outcome.stats is not None:
                log.debug("refactor stats for %s: %s", outcome.item.target.describe(), detail(outcome.stats))
        if ended.failure is not None and request.one:  # with where the model's answer was kept
            return self._failed(ended.refusal(), record)
        if ended.failure is not None and not request.whole:  # every target, for one reason, before any answer
            return self._failed(ended.failure)
        if not request.one:
            text = ended.message()
            status, kind = _status(ended, applied)
            self.host.tell(text, kind)
            self.host.notify(STATS_NOTIFICATION, record)
            return RefactorReply(status, text, record)
        one = ended.outcomes[0]
        if applied is None and one.outcome == "rejected":  # every change dropped in the review
            text = ended.message(f"{one.reason}; nothing was applied")
            self.host.tell(text)
            self.host.notify(STATS_NOTIFICATION, record)
            return RefactorReply(RefactorStatus.REJECTED, text, record)
        if applied is None:  # the answer equals the text
            self.host.tell(ended.message(UNCHANGED[request.kind]))
            self.host.notify(STATS_NOTIFICATION, record)
            return RefactorReply(RefactorStatus.UNCHANGED, stats=record)
        self.host.tell(ended.message(), applied.outcome.message_type)
        self.host.notify(STATS_NOTIFICATION, record)
        return RefactorReply(RefactorStatus(applied.outcome.status), applied.outcome.message, record)


def _status(ended: Ended, applied: PartsOutcome | None) -> tuple[RefactorStatus, types.MessageType]:
    """A request of several targets: the reply's status and the message's kind: every target applied
    (or unchanged), some, none."""
    totals = ended.totals
    succeeded = totals.count("applied", "unchanged")
    if succeeded == totals.targets:
        status = RefactorStatus.APPLIED if totals.count("applied") else RefactorStatus.UNCHANGED
        return status, types.MessageType.Info
    if totals.count("unconfirmed"):
        return RefactorStatus.UNCONFIRMED, types.MessageType.Info
    if totals.count("applied"):
        return RefactorStatus.PARTIAL, types.MessageType.Warning
    if totals.count("rejected") and totals.count("rejected", "unchanged") == totals.targets:
        return RefactorStatus.REJECTED, types.MessageType.Info  # dropped in a review, or the edit refused
    if applied is not None and applied.outcome.status == "rejected":
        return RefactorStatus.REJECTED, types.MessageType.Info
    if applied is not None and totals.count("stale") and not totals.count("refused", "error"):
        return RefactorStatus.STALE, types.MessageType.Warning
    return RefactorStatus.ERROR, types.MessageType.Error
