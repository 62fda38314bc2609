"""A request's progress in the editor: `$/progress` (with Cancel) and `refactorLsp/progress`; one
refactor's figures (`ProgressReporter`), or a request of several targets' (`BatchProgress`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from .wire import PROGRESS_NOTIFICATION, PROGRESS_TOKEN_PREFIX, BatchProgressPayload, ProgressPayload

if TYPE_CHECKING:
    from pygls.progress import Progress as WorkDoneProgress

    from ..config.schema import Config
    from ..pipeline.plan import Progress
    from ..pipeline.request import Request
    from ..pipeline.runner import Runner

log = logging.getLogger(__name__)

CLIENT_REPLY_TIMEOUT_S = 5.0  # how long the server waits for an editor's answer to its own requests
# A refactor shows its progress once it has run this long. Creating the token is a round trip to the
# editor, made while the request goes out and the backend starts: on a busy machine it delayed the
# answer by about 2 ms (benchmarks/recorded/2026-12-01-overhead.md). A refactor done sooner shows
# none, as a bar that flashes for a tenth of a second would tell nothing.
PROGRESS_SHOW_DELAY_S = 0.1


class ProgressClient(Protocol):
    """What progress needs of the server: whether the editor shows progress, pygls's `$/progress`
    helper, and a way to send the `refactorLsp/progress` notification to a plugin that reads it."""

    @property
    def supports_progress(self) -> bool: ...

    @property
    def wants_progress_fields(self) -> bool: ...

    @property
    def work_done_progress(self) -> WorkDoneProgress: ...

    def notify(self, method: str, params: Any) -> None: ...


class ProgressReporter:
    """A fresh progress token per refactor; reports throttled by the pipeline; always ended. Cancel in
    the editor's progress notification calls `on_cancel` with the reason."""

    def __init__(
        self, server: ProgressClient, uri: str, title: str, backend: str, on_cancel: Callable[[str], object]
    ) -> None:
        self.server = server
        self.uri = uri
        self.title = title
        self.backend = backend
        self.on_cancel = on_cancel
        self.token: str | None = None
        self.pending: Progress | None = None  # the last report made before the token existed
        self.ended = False
        self.asked = False  # the editor was asked for a token: `begin` then runs to its end

    async def begin(self) -> None:
        if not self.server.supports_progress:
            return
        await asyncio.sleep(PROGRESS_SHOW_DELAY_S)
        if self.ended:
            return
        self.asked = True
        token = f"{PROGRESS_TOKEN_PREFIX}{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), CLIENT_REPLY_TIMEOUT_S)
        except Exception as exc:
            log.warning("the editor did not create a progress token: %s", exc)
            return
        if self.ended:  # the refactor is over: no begin after the end, and pygls keeps no token for it
            self.server.work_done_progress.tokens.pop(token, None)
            return
        self.token = token
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title=self.title, message=f"on {self.backend}", cancellable=True, percentage=0),
        )
        if self.pending is not None:
            self.report(self.pending)
        future = self.server.work_done_progress.tokens.get(token)
        if future is not None:
            loop = asyncio.get_running_loop()

            def cancelled(f: Any) -> None:
                if f.cancelled():
                    loop.call_soon_threadsafe(self.on_cancel, "cancelled from the progress notification")

            future.add_done_callback(cancelled)

    def report(self, progress: Progress) -> None:
        if self.token is None:
            self.pending = progress
            return
        approx = "~" if progress.tokens_estimated else ""
        rate = f" · {approx}{progress.tokens_per_s:.0f} tok/s" if progress.tokens_per_s else ""
        message = f"{progress.generated_chars}/{progress.predicted_chars} chars{rate} on {self.backend}"
        percentage = int(progress.fraction * 100)
        self.server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )
        if not self.server.wants_progress_fields:
            return
        # The same figures as fields, for plugins (a statusline): never parsed out of the message.
        payload = ProgressPayload(
            token=self.token,
            uri=self.uri,
            percentage=percentage,
            generated_chars=progress.generated_chars,
            predicted_chars=progress.predicted_chars,
            elapsed_s=round(progress.elapsed_s, 3),
            tokens_per_s=progress.tokens_per_s,
            tokens_estimated=progress.tokens_estimated,
            message=message,
        )
        self.server.notify(PROGRESS_NOTIFICATION, payload.to_json())

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


class BatchProgress(ProgressReporter):
    """One progress for a request of several targets: `k of N done`, what is running, the running targets' speed
    together and the finished ones' acceptance; Cancel stops the batch. Reports are throttled."""

    def __init__(
        self,
        server: ProgressClient,
        uri: str,
        title: str,
        backend: str,
        on_cancel: Callable[[str], object],
        run: Runner,
    ) -> None:
        super().__init__(server, uri, title, backend, on_cancel)
        self.run = run
        self.shown_at = 0.0

    async def begin(self) -> None:
        await super().begin()
        self.show(force=True)

    def show(self, force: bool = False) -> None:
        from ..pipeline.engine import PROGRESS_INTERVAL_S  # as often as a single refactor's reports
        from ..pipeline.totals import batch_totals

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


def progress_for(
    host: ProgressClient,
    uri: str,
    request: Request,
    run: Runner,
    backend: str,
    on_cancel: Callable[[str], object],
    config: Config,
) -> ProgressReporter:
    """One refactor's progress (its characters and rate), or several targets' (`k of N done`), fed by
    the runner's reports; `backend`: the name asked for."""
    from ..config.schema import ConfigError
    from .actions import TITLE_PREFIX

    title = TITLE_PREFIX + request.title
    if not request.one:
        batch = BatchProgress(host, uri, title, backend, on_cancel, run)
        run.on_change = batch.show
        return batch
    plan = request.items[0].plan
    try:
        chosen = plan.requested if plan is not None else config.backend(backend)
        on = f"{chosen.name} ({chosen.model})"
    except ConfigError:
        on = backend  # the target's plan says what is wrong with it
    single = ProgressReporter(host, uri, title, on, on_cancel=on_cancel)
    run.on_change = lambda: single.report(run.live[0]) if 0 in run.live else None
    return single


@contextlib.asynccontextmanager
async def shown(
    spawn: Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]], progress: ProgressReporter
) -> AsyncIterator[None]:
    """The progress, shown once the work has run a while (PROGRESS_SHOW_DELAY_S) and ended in order
    whatever happens. The editor creates the token while the backend streams: that round trip is not
    on the way to the first token (a report made before the token exists waits for it)."""
    begun = spawn(progress.begin(), "progress begin")
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
