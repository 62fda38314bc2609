"""Ctrl-C (or SIGTERM) during a bench: what was measured is kept, reported and written, said to be interrupted.

The command line makes one `Interrupt` and installs it on its event loop; each bench wraps its loop of
runs in `interrupt.keeps()`. SIGTERM (`timeout`, a CI job cancelled, `kill`) is taken as Ctrl-C is: an
hour of runs is not lost to a polite stop. The first Ctrl-C cancels the run in flight (it is lost: its time would be
a part of a run) and ends the loop there; the bench then summarises the runs it has, and its header
says how many of how many. A second Ctrl-C stops at once, as Ctrl-C does elsewhere. A cancellation from
anything else goes on as it came.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import ClassVar


class Interrupt:
    """Whether Ctrl-C ended the bench, and after how many runs (`note`)."""

    SIGNALS: ClassVar[dict[int, str]] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}

    def __init__(self) -> None:
        self.happened = False
        self.by = "Ctrl-C"  # what ended it, as the note and the message say
        self._task: asyncio.Task[object] | None = None

    def install(self) -> None:
        """Take Ctrl-C and SIGTERM on the running loop for the current task (the bench's); a no-op where
        the loop cannot (not the main thread, no signals)."""
        self._task = asyncio.current_task()
        for number in self.SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().add_signal_handler(number, self._fire, number)

    def remove(self) -> None:
        for number in self.SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().remove_signal_handler(number)

    def _fire(self, number: int) -> None:
        self.happened = True
        self.by = self.SIGNALS.get(number, "Ctrl-C")
        self.remove()  # a second one is Python's own: it stops at once
        if self._task is not None:
            self._task.cancel()

    @contextlib.asynccontextmanager
    async def keeps(self) -> AsyncIterator[None]:
        """Around a bench's loop of runs: Ctrl-C ends the loop, and what ran is kept."""
        try:
            yield
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self.happened or task is None:
                raise
            task.uncancel()


def interrupted_note(done: int, total: int, by: str = "Ctrl-C") -> str:
    """The header's line for a bench Ctrl-C (or `by`) ended."""
    return f"INTERRUPTED ({by}) after {done} of {total} runs: the figures are those of the runs measured"


def keeps(interrupt: Interrupt | None) -> contextlib.AbstractAsyncContextManager[None]:
    """`interrupt.keeps()`, or nothing where none was installed (tests, other callers)."""
    return interrupt.keeps() if interrupt is not None else contextlib.nullcontext()


def note_of(interrupt: Interrupt | None, done: int, total: int) -> str | None:
    """The header's line when Ctrl-C (or SIGTERM) ended the bench after `done` of `total` runs, else None."""
    return interrupted_note(done, total, interrupt.by) if interrupt is not None and interrupt.happened else None
