"""How a bench was started, which every bench kind reports the same way: the command that ran it,
its task folder, the user's note, where its progress goes, and the Ctrl-C that may end it early."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .interrupt import Interrupt, note_of


@dataclass(frozen=True)
class Invocation:
    tasks_dir: Path
    command: str  # as the user typed it, for the report's header
    note: str = ""
    progress_stream: TextIO | None = None  # None: stderr
    interrupt: Interrupt | None = None

    @property
    def stopped(self) -> bool:
        """Ctrl-C ended the bench before its last run."""
        return self.interrupt is not None and self.interrupt.happened

    def interrupted(self, done: int, planned: int) -> str | None:
        """The report's note on an interrupted bench (by what, how many runs of how many); None when it ran whole."""
        return note_of(self.interrupt, done, planned)
