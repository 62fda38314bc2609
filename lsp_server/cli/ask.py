"""`refactor --review`, `apply --review`: each change of the answers asked about on a terminal, as
`git add -p` asks about each hunk, before anything is written or shown.

The question goes to the terminal (stdin when it is one, else /dev/tty: `apply - --review` reads the
snippet from stdin), the change's lines as a diff on stderr; stdout stays the diff or `--json`'s. With
no terminal at all, `--review` is refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO

from ..text import Screen, split_lines
from .io import error, interruptible

if TYPE_CHECKING:
    from ..pipeline.outcome import Settled
    from ..pipeline.review import Review, ReviewChange

NO_TERMINAL = (
    "--review asks about each change on a terminal, and there is none here: run it in one, or leave "
    "--review out (--json lists every change with its label)"
)
HELP = """y - keep this change
n - drop this change
a - keep this change and every later one of this file
d - drop this change and every later one of this file
q - quit: drop this change and every later one
? - print this help"""
CHOICES = "y,n,a,d,q,?"


class NoTerminal(ValueError):
    """--review without a terminal to ask on."""


class TerminalLost(Exception):
    """The terminal could not be read or written in the middle of the review (it hung up)."""


@dataclass
class Reviewer:
    """The terminal the questions go to and the answers come from."""

    read: TextIO
    write: TextIO | Screen
    opened: list[TextIO] = field(default_factory=list)  # what this reviewer opened, and closes

    @staticmethod
    def open() -> Reviewer:
        """The terminal: stdin and stderr when stdin is one, else /dev/tty. Raises NoTerminal."""
        if sys.stdin.isatty():
            return Reviewer(sys.stdin, sys.stderr)
        try:
            tty = open("/dev/tty", "r+", encoding="utf-8")  # noqa: SIM115  (kept open for the review; close() ends it)
        except OSError:
            raise NoTerminal(NO_TERMINAL) from None
        return Reviewer(tty, Screen(tty), [tty])  # stderr is a Screen already (io.on_screen)

    def close(self) -> None:
        for handle in self.opened:
            with contextlib.suppress(OSError):
                handle.close()

    def ask(self, review: Review, settled: Settled) -> list[int]:
        """The ids of the changes kept, asked one by one, in order. Ctrl-C at a question raises
        KeyboardInterrupt at once. Raises TerminalLost: answers given before a terminal went away are
        no decision about the rest, so nothing is kept."""
        try:
            with interruptible():
                return self._asked(review, settled)
        except OSError as exc:
            raise TerminalLost(
                f"the terminal went away during the review ({exc.strerror or exc}); nothing was written"
            ) from None

    def _asked(self, review: Review, settled: Settled) -> list[int]:
        kept: list[int] = []
        decided: dict[str, bool] = {}  # a file's later changes, decided by `a` or `d`
        quit_all = False
        total = len(review.changes)
        for change in review.changes:
            document = settled.outcomes[change.target].item.document
            if quit_all:
                continue
            if document in decided:
                if decided[document]:
                    kept.append(change.id)
                continue
            self._show(change, settled, total)
            answer = self._answer()
            if answer in ("y", "a"):
                kept.append(change.id)
            if answer in ("a", "d"):
                decided[document] = answer == "a"
            quit_all = answer == "q"
        return kept

    def _show(self, change: ReviewChange, settled: Settled, total: int) -> None:
        outcome = settled.outcomes[change.target]
        result = outcome.result
        assert result is not None  # a change is of an edited target
        item, body = change.change, _diff(result.text, change)
        needs = f" (needs change {', '.join(map(str, change.needs))})" if change.needs else ""
        print(
            f"\n{outcome.item.document}: change {change.id} of {total}, {outcome.item.target.describe()}\n"
            f"  {item.label}{needs}\n{body}",
            file=self.write,
            flush=True,
        )

    def _answer(self) -> str:
        while True:
            print(f"Keep this change [{CHOICES}]? ", end="", file=self.write, flush=True)
            try:
                line = self.read.readline()
            except UnicodeDecodeError:  # a byte the terminal's encoding does not hold: no choice, asked again
                line = "?"
            if not line:  # the input ended: nothing more is kept
                print("", file=self.write)
                return "q"
            answer = line.strip().lower()[:1]
            if answer in ("y", "n", "a", "d", "q"):
                return answer
            print(HELP, file=self.write, flush=True)


def _diff(text: str, change: ReviewChange) -> str:
    """The change's lines as they were (`-`) and as they would be (`+`), split where the editor splits
    them (text.split_lines: \\n, \\r\\n, a lone \\r; not a form feed or U+2028, which stay in their line)."""
    from ..formats.changes import change_lines

    old, new = change_lines(text, change.change)
    return "\n".join([*_marked("-", old), *_marked("+", new)])


def _marked(sign: str, text: str) -> list[str]:
    return [f"{sign} {line.rstrip(EOL)}" for line in split_lines(text)]


EOL = "\r\n"  # the characters that end a line (text.split_lines keeps them)


async def reviewed(settled: Settled, reviewer: Reviewer | None) -> tuple[Settled, list[dict[str, Any]]]:
    """The settled targets with only the changes kept on the terminal (`--review`: a kept subset that
    brings an error keeps nothing, and says why); and every change with whether it was kept (None:
    not reviewed), as `--json` lists them."""
    from ..pipeline.review import kept_problem, kept_settled, needs_notes, review_of

    review = review_of(settled)
    if reviewer is None or not review.changes:
        return settled, _listed(settled, review, None)
    try:
        kept = reviewer.ask(review, settled)
        problem = await kept_problem(settled, review, kept)
        if problem is not None:
            problem += "; nothing was written"
    except TerminalLost as exc:
        kept, problem = [], str(exc)
    except KeyboardInterrupt:  # Ctrl-C at a question (ask.py): before anything is written, as any Ctrl-C here
        raise asyncio.CancelledError from None
    if problem is not None:
        held = [o.ended("rejected", problem) if i in settled.edited() else o for i, o in enumerate(settled.outcomes)]
        return replace(settled, outcomes=held, failure=problem), _listed(settled, review, kept)
    for note in needs_notes(review, kept):
        error(note)
    return kept_settled(settled, review, kept), _listed(settled, review, kept)


def _listed(settled: Settled, review: Review, kept: list[int] | None) -> list[dict[str, Any]]:
    return [
        c.to_dict(settled.outcomes[c.target]) | {"kept": None if kept is None else c.id in kept} for c in review.changes
    ]
