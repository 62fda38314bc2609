"""One `refactorLsp.applySnippet` request: code from a chat or an agent merged into the definitions
it names (pipeline/apply.py), applied as ONE versioned workspace edit, reported once.

An `ApplyJob` is a `BatchJob` (batch_job.py) whose targets come from the snippet: the same snapshot,
settings, cancel, registration on its document and one edit for all its parts. What differs is that
a snippet is one change: every part is applied, or none (a part that failed, or that you typed
inside meanwhile, leaves the others out too). One part reports as a refactor does (its progress,
message and stats); several as a batch does.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from .actions import TITLE_PREFIX
from .batch_job import BatchJob, BatchProgress
from .job import JobHost
from .progress import ProgressReporter
from .wire import RefactorArguments, RefactorReply, RefactorStatus, stats_payload

if TYPE_CHECKING:
    from ..pipeline.batch import BatchRun, TargetOutcome
    from ..scope import ScopeCache

APPLY_LABEL = "Apply with prediction"


class ApplyJob(BatchJob):
    """A snippet merged into one open document; `start()` runs it, `cancel()` stops all of it calmly."""

    def __init__(
        self,
        host: JobHost,
        args: RefactorArguments,
        snippet: str,
        text: str,
        version: int | None,
        language_id: str | None,
        scope_cache: ScopeCache | None = None,
        merge_with_model: bool = False,
    ) -> None:
        super().__init__(host, args, "selection", text, version, language_id, scope_cache)
        self.snippet = snippet
        self.merge_with_model = merge_with_model  # a complete snippet is spliced as written unless this is set

    def cancel_message(self) -> str:
        return f"{self.cancel_reason or 'the apply was cancelled'}; nothing was applied, the document is as it was"

    async def _refactor(self) -> RefactorReply:
        from ..pipeline.apply import NotPlaced, apply_items, settle
        from ..pipeline.batch import BatchRun
        from ..pipeline.plan import RefactorError

        host = self.host
        config = host.config_for(self.uri)
        request = self._request()
        selection = (request.start, request.end) if self.args.range is not None else None
        stop = threading.Event()
        try:
            # The snippet's definitions are looked for line by line: in a thread, so the editor is not held up;
            # a cancel stops that thread too, at its next step.
            items = await asyncio.to_thread(
                apply_items,
                self.uri,
                request,
                self.snippet,
                selection,
                config,
                self.scope_cache,
                stop.is_set,
                self.merge_with_model,
            )
        except (NotPlaced, RefactorError) as exc:
            return self._failed(str(exc), None)
        except asyncio.CancelledError:
            stop.set()
            raise
        run = BatchRun(host.engine, items, config.refactor.concurrency)
        where = "; ".join(item.target.describe() for item in items[:3]) + (" ..." if len(items) > 3 else "")
        title = f"{TITLE_PREFIX}apply the snippet to {where}"
        on = self.args.backend or config.default_backend
        progress: ProgressReporter
        if len(items) == 1:
            progress = ProgressReporter(host, self.uri, title, on, on_cancel=self.cancel)
            single = progress
            run.on_change = lambda: single.report(run.live[0]) if 0 in run.live else None
        else:
            batch = BatchProgress(host, self.uri, title, on, self.cancel, run)
            run.on_change = batch.show
            progress = batch
        async with self.progress_shown(progress):
            settled = settle(await run.run())
            if not settled.ready:
                return self._refused(settled.outcomes, settled.reason or "", run)
            edited = [i for i, o in enumerate(settled.outcomes) if o.outcome == "edit"]
            if not edited:
                return self._unchanged(settled.outcomes, run)
            if config.refactor.preview:
                progress.finishing()  # the editor may now wait for the user to confirm the preview
            applied = await self._apply(settled.outcomes, edited, config.refactor.preview, APPLY_LABEL, whole=True)
            outcomes = list(settled.outcomes)
            for index in edited:
                outcome = outcomes[index]
                reason = None if applied.outcome.applied else applied.outcome.message
                outcomes[index] = outcome.settled(applied.outcome.status, reason)
            if len(outcomes) > 1:
                return self._report_batch([o.recorded(self.uri) for o in outcomes], run, applied)
            stats = outcomes[0].recorded(self.uri).stats
            assert stats is not None  # an edit came from an answer
            self._report(stats, applied.outcome.message, applied.outcome.message_type)
            return RefactorReply(RefactorStatus(applied.outcome.status), applied.outcome.message, stats_payload(stats))

    def _unchanged(self, outcomes: list[TargetOutcome], run: BatchRun) -> RefactorReply:
        message = "no changes: the document already holds the snippet's code"
        if len(outcomes) > 1:
            reply = self._report_batch([o.recorded(self.uri) for o in outcomes], run, None)
            return RefactorReply(RefactorStatus.UNCHANGED, reply.message, reply.stats)
        stats = outcomes[0].recorded(self.uri).stats
        assert stats is not None
        self._report(stats, message)
        return RefactorReply(RefactorStatus.UNCHANGED, message, stats_payload(stats))

    def _refused(self, outcomes: list[TargetOutcome], reason: str, run: BatchRun) -> RefactorReply:
        """Nothing applied: the reason (and where the model's answer is kept), the stats of what came."""
        from ..files.state import keep_refused_answer

        answered = next((o for o in outcomes if o.answer is not None), None)
        kept = keep_refused_answer(answered.answer) if answered is not None and answered.answer else None
        message = reason + (f" (the model's answer: {kept})" if kept else "")
        if len(outcomes) > 1:  # the batch's message names each part that failed, and why
            return self._report_batch([o.recorded(self.uri) for o in outcomes], run, None)
        return self._failed(message, outcomes[0].stats)
