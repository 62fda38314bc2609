"""The bench's progress on stderr: a bar on a terminal, one line per run elsewhere (logs, CI)."""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

from ..pipeline.plan import Progress
from ..text import Screen, on_terminal
from .runs import MODE_LABELS, Mode, Run

# The pair table's words for the region modes; the edit-format table's for the rest.
_LABELS: dict[Mode, str] = {**MODE_LABELS, "prediction": "with prediction", "baseline": "without"}


class ProgressDisplay:
    """A progress bar on a terminal; plain lines otherwise (logs, CI)."""

    def __init__(self, total: int, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done_count = 0
        self.started = time.monotonic()
        self.current = ""
        self.last_draw = 0.0

    def _bar(self, extra: str = "") -> None:
        width = 24
        filled = int(width * self.done_count / max(self.total, 1))
        elapsed = time.monotonic() - self.started
        eta = ""
        if self.done_count:
            eta = f" · ~{elapsed / self.done_count * (self.total - self.done_count):.0f} s left"
        text = f"[{'█' * filled}{'░' * (width - filled)}] {self.done_count}/{self.total}{extra}{eta} · {self.current}"
        columns = self._columns()
        self._frame("\r")
        self.stream.write(on_terminal(text)[:columns].ljust(columns))  # spelt out first, then cut to fit
        self.stream.flush()

    def _frame(self, controls: str) -> None:
        """Our own `\\r`: a Screen (cli/io.on_screen) shows any other control written to it as text."""
        if isinstance(self.stream, Screen):
            self.stream.frame(controls)
        else:
            self.stream.write(controls)

    def _clear(self) -> None:
        self._frame("\r")
        self.stream.write(" " * self._columns())
        self._frame("\r")

    @staticmethod
    def _columns() -> int:
        """One less than the terminal's width, so the line never wraps and `\r` can redraw it."""
        return max(shutil.get_terminal_size((100, 20)).columns - 1, 20)

    def begin(self, task: str, mode: Mode, repetition: int, at_once: int = 1) -> None:
        """A run starts, or a batch of `at_once` runs together (each then reports `done`)."""
        label = _LABELS[mode]
        batch = f", {at_once} at once" if at_once > 1 else ""
        self.current = f"{task} ({label}, #{repetition + 1}{batch})"
        if self.tty:
            self._bar()

    def on_chars(self, progress: Progress) -> None:
        now = time.monotonic()
        if self.tty and now - self.last_draw > 0.2:
            self.last_draw = now
            self._bar(f" · {progress.generated_chars}/{progress.predicted_chars} chars")

    def done(self, run: Run) -> None:
        """A run ended: the bar moves on a terminal, a line elsewhere; a failed run's reason is said whole,
        on a line of its own, on a terminal too (the bar's line is cut to the terminal's width)."""
        self.done_count += 1
        failed = run.outcome in ("refused", "error")
        if self.tty:
            if failed:
                self._clear()
                self.stream.write(f"bench: {self.current}: {run.outcome}: {run.message}\n")
            self._bar()
            return
        latency = f"{run.latency_ms / 1000:.2f} s" if run.latency_ms is not None else "no timing"
        tokens = run.stats.completion_tokens if run.stats is not None else None
        detail = f"{latency}, {tokens} tok" if tokens is not None else latency
        if failed:
            detail += f" — {run.outcome}: {run.message}"
        self.stream.write(f"bench: {self.done_count}/{self.total} {self.current}: {detail}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self._clear()
            self.stream.flush()
