"""A refactor's progress in the editor: `$/progress` (with Cancel) and `refactorLsp/progress`."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .wire import PROGRESS_NOTIFICATION, PROGRESS_TOKEN_PREFIX, ProgressPayload

if TYPE_CHECKING:
    from .refactor import Progress
    from .session import RefactorServer, Running

log = logging.getLogger(__name__)

CLIENT_REPLY_TIMEOUT_S = 5.0  # how long the server waits for an editor's answer to its own requests


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
        approx = "~" if progress.tokens_estimated else ""
        rate = f" · {approx}{progress.tokens_per_s:.0f} tok/s" if progress.tokens_per_s else ""
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
            tokens_estimated=progress.tokens_estimated,
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
