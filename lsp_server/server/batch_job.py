"""One `refactorLsp.refactorEach` request: the same instruction for each definition of a selection or
a file, run at once (pipeline/batch.py), applied as ONE workspace edit, reported once.

A `BatchJob` is a `RefactorJob` (job.py) whose refactor is a batch: the same snapshot, settings,
cancel and registration on its document, so a batch and a single refactor never run on one
document together, and `refactorLsp.cancel`, the progress's Cancel button, closing the document
and shutting down stop it the same way. Cancel stops every refactor in flight and applies nothing:
the document stays as it was. Once the edit has been sent to the editor a cancel comes too late,
and the reply says what the editor did with it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from lsprotocol import types

from .actions import TITLE_PREFIX
from .job import CANCELLED, JobHost, RefactorJob
from .progress import ProgressClient, ProgressReporter
from .wire import (
    PROGRESS_NOTIFICATION,
    STATS_NOTIFICATION,
    BatchProgressPayload,
    BatchTargets,
    RefactorArguments,
    RefactorReply,
    RefactorStatus,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..pipeline.batch import BatchRun, TargetOutcome
    from ..pipeline.batch_stats import BatchTotals
    from ..scope import ScopeCache
    from .apply import PartsOutcome

log = logging.getLogger(__name__)

BATCH_CANCELLED = "the batch was cancelled"
TYPED_INSIDE = "you typed inside it while the batch ran; left as it is"
LISTED_FAILURES = 3  # failures named in the message; `refactorLsp/stats` lists every one


class BatchJob(RefactorJob):
    """A batch on one open document; `start()` runs it, `cancel()` stops all of it calmly."""

    def __init__(
        self,
        host: JobHost,
        args: RefactorArguments,
        targets: BatchTargets,
        text: str,
        version: int | None,
        language_id: str | None,
        scope_cache: ScopeCache | None = None,
    ) -> None:
        super().__init__(host, args, text, version, language_id, scope_cache)
        self.targets = targets

    def cancel_message(self) -> str:
        reason = BATCH_CANCELLED if self.cancel_reason in ("", CANCELLED) else self.cancel_reason
        return f"{reason}; nothing was applied, the document is as it was"

    async def _refactor(self) -> RefactorReply:
        from ..pipeline.batch import MAX_TARGETS, BatchRun, batch_items, shared_failure
        from ..pipeline.plan import action_title
        from ..scope.file_language import language_of
        from ..scope.targets import definitions_touched, top_level_definitions

        host = self.host
        config = host.config_for(self.uri)
        request = self._request()
        language = language_of(self.uri, self.language_id)
        # A file's definitions are found line by line: in a thread, so a long file does not hold the editor up.
        text, cache = self.text, self.scope_cache
        if self.targets == "selection":
            where = "the selection"
            targets = await asyncio.to_thread(definitions_touched, text, request.start, request.end, language, cache)
        else:
            where = "the file"
            targets = await asyncio.to_thread(top_level_definitions, text, language, cache)
        if not targets:
            return self._failed(f"no definition found in {where} ({language}); select lines to rewrite them", None)
        if len(targets) > MAX_TARGETS:
            too_many = f"{len(targets)} definitions is more than one batch takes ({MAX_TARGETS}); select less"
            return self._failed(too_many, None)
        label = action_title(self.args.action_id or "instruction", self.args.instruction or "", config)
        backend = self.args.backend or config.default_backend
        items = batch_items(self.uri, targets, request, config, self.scope_cache)
        run = BatchRun(host.engine, items, config.refactor.concurrency)
        title = f"{TITLE_PREFIX}{label}, each of {len(targets)} definitions in {where}"
        progress = BatchProgress(host, self.uri, title, backend, self.cancel, run)
        run.on_change = progress.show
        async with self.progress_shown(progress):
            outcomes = await run.run()
            failure = shared_failure(outcomes)
            if failure is not None:  # the same reason for each: said once, as for one refactor
                return self._failed(failure, None)
            edited = [i for i, o in enumerate(outcomes) if o.outcome == "edit"]
            applied: PartsOutcome | None = None
            if edited:
                from .apply import LEFT_OUT

                if config.refactor.preview:
                    progress.finishing()  # the editor may now wait for the user to confirm the preview
                applied = await self._apply(outcomes, edited, config.refactor.preview, f"{label}, each definition")
                for number, index in enumerate(edited):
                    outcome = outcomes[index]
                    if number in applied.stale:
                        outcomes[index] = outcome.settled("stale", TYPED_INSIDE)
                    elif number in applied.left_out:
                        outcomes[index] = outcome.settled("rejected", LEFT_OUT)
                    else:
                        reason = None if applied.outcome.applied else applied.outcome.message
                        outcomes[index] = outcome.settled(applied.outcome.status, reason)
            return self._report_batch([o.recorded(self.uri) for o in outcomes], run, applied)

    async def _apply(self, outcomes: list[TargetOutcome], edited: list[int], preview: bool, label: str) -> PartsOutcome:
        """The edited targets as one workspace edit. Once it is on its way a cancel comes too late:
        what the editor did with it is what the user has, so that is what is reported."""
        from .apply import LABEL, EditPart, apply_parts

        parts = []
        for index in edited:
            outcome = outcomes[index]
            assert outcome.result is not None  # an "edit" outcome has its result
            parts.append(EditPart(outcome.item.region, outcome.result.edits, outcome.item.target.describe()))
        sending = asyncio.ensure_future(
            apply_parts(
                self.host, self.uri, self.version, self.text, parts, preview, self.scope_cache, f"{LABEL}: {label}"
            )
        )
        try:
            return await asyncio.shield(sending)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            log.info("a cancel came while the batch's edit was on its way to the editor: too late to stop it")
            return await sending

    # -- reporting: one message, one stats notification, the history --------------------------
    def _report_batch(
        self, outcomes: list[TargetOutcome], run: BatchRun, applied: PartsOutcome | None
    ) -> RefactorReply:
        from ..pipeline.batch_stats import batch_record, batch_summary, batch_totals
        from ..stats.words import detail

        totals = batch_totals(outcomes, run.wall_ms, run.concurrency)
        text = batch_summary(totals)
        status, kind = _status(totals, applied)
        if applied is not None and applied.outcome.message:
            # Once for the whole edit: a rebase over your typing, a dismissed preview, an editor that never answered.
            text += f" — {applied.outcome.message}"
        # Each target that failed for a reason of its own.
        failed = [o for o in outcomes if o.outcome in ("refused", "error") or o.reason == TYPED_INSIDE]
        if failed:
            listed = "; ".join(f"{o.item.target.describe()}: {o.reason}" for o in failed[:LISTED_FAILURES])
            more = len(failed) - LISTED_FAILURES
            text += f" — not applied: {listed}" + (
                f"; and {more} more (refactorLsp/stats lists them)" if more > 0 else ""
            )
        self.host.tell(text, kind)
        record = batch_record(self.uri, outcomes, totals, text)
        self.host.notify(STATS_NOTIFICATION, record)
        for outcome in outcomes:
            if outcome.stats is not None:
                log.debug("batch target %s: %s", outcome.item.target.describe(), detail(outcome.stats))
                self.host.history.append(outcome.stats)  # never raises: a failure is logged
        return RefactorReply(status, text, record)


def _status(totals: BatchTotals, applied: PartsOutcome | None) -> tuple[RefactorStatus, types.MessageType]:
    """The reply's status and the message's kind: every target applied (or unchanged), some, none."""
    succeeded = totals.count("applied", "unchanged")
    if succeeded == totals.targets:
        status = RefactorStatus.APPLIED if totals.count("applied") else RefactorStatus.UNCHANGED
        return status, types.MessageType.Info
    if totals.count("unconfirmed"):
        return RefactorStatus.UNCONFIRMED, types.MessageType.Info
    if totals.count("applied"):
        return RefactorStatus.PARTIAL, types.MessageType.Warning
    if applied is not None and applied.outcome.status == "rejected":
        return RefactorStatus.REJECTED, types.MessageType.Info
    if applied is not None and totals.count("stale") and not totals.count("refused", "error"):
        return RefactorStatus.STALE, types.MessageType.Warning
    return RefactorStatus.ERROR, types.MessageType.Error


class BatchProgress(ProgressReporter):
    """One progress for the whole batch: `k of N done`, what is running, the running targets' speed
    together and the finished ones' acceptance; Cancel stops the batch. Reports are throttled."""

    def __init__(
        self,
        server: ProgressClient,
        uri: str,
        title: str,
        backend: str,
        on_cancel: Callable[[str], None],
        run: BatchRun,
    ) -> None:
        super().__init__(server, uri, title, backend, on_cancel)
        self.run = run
        self.shown_at = 0.0

    async def begin(self) -> None:
        await super().begin()
        self.show(force=True)

    def show(self, force: bool = False) -> None:
        from ..pipeline.batch_stats import batch_totals
        from ..pipeline.engine import PROGRESS_INTERVAL_S  # as often as a single refactor's reports

        if self.token is None or self.ended:
            return
        now = time.perf_counter()
        if not force and now - self.shown_at < PROGRESS_INTERVAL_S:
            return
        self.shown_at = now
        run = self.run
        rate, estimated = run.live_rate()
        names = run.running_names()
        parts = [f"{run.done} of {run.total} done"]
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            parts.append("running " + ", ".join(names[:3]) + more)
        if rate:
            parts.append(f"{'~' if estimated else ''}{rate:.0f} tok/s together")
        finished = batch_totals(list(run.outcomes.values()), 0.0, run.concurrency)
        if finished.acceptance_rate is not None:
            parts.append(f"{finished.acceptance_rate:.0%} accepted")
        message = " · ".join(parts) + f" on {self.backend}"
        percentage = int(run.fraction() * 100)
        self.server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )
        if not self.server.wants_progress_fields:
            return
        generated, predicted = run.chars()
        payload = BatchProgressPayload(
            token=self.token,
            uri=self.uri,
            percentage=percentage,
            generated_chars=generated,
            predicted_chars=predicted,
            elapsed_s=round(run.elapsed_s(), 3),
            tokens_per_s=rate,
            tokens_estimated=estimated,
            message=message,
            done=run.done,
            total=run.total,
            running=tuple(names),
        )
        self.server.notify(PROGRESS_NOTIFICATION, payload.to_json())
