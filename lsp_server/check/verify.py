"""The check before an edit: an answer must not bring an error the code did not have; and what the
repair of one that does is asked.

`verify_answer` reads the region's new text in the document: `check.syntax` first (Python's own
parser, the brackets of the languages the block scan reads), in a thread so that the event loop goes
on serving the editor, then your own checker for the language when your user file names one
(`check_command`). What it finds is a `Problem`: a line and what is wrong, all a repair needs, so any
other check whose finding a repair may mend makes one too, with its own `kind`.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import PurePath

from ..config.schema import RefactorSettings
from ..text import clip, split_lines
from .command import run_checker
from .syntax import syntax_check

CONTEXT_LINES = 2  # lines quoted on each side of the problem's line in the repair's prompt
# One repair (issue 31): a repaired answer still broken is refused, never sent back again. A
# `refactor.repairs` above it counts as it; 0 refuses at once.
MAX_REPAIRS = 1


@dataclass(frozen=True)
class Problem:
    """What is wrong with an answer: for the message, the stats and the repair's prompt."""

    line: int  # 1-based, in the document as the answer would leave it; 0: not known
    message: str  # what is wrong, in the checker's words: "'(' was never closed"
    kind: str = "syntax error"  # what sort of problem, in words

    def describe(self) -> str:
        """`'(' was never closed at line 12` (the line once: `unterminated string literal (detected at line 12)`)."""
        if not self.line or re.search(rf"\bline {self.line}\b", self.message):
            return self.message
        return f"{self.message} at line {self.line}"


@dataclass(frozen=True)
class Verification:
    """What read the answer ("python", "brackets", "blocks", with your checker's name after them;
    "not checked"; "off") and the problem it found, if any."""

    checked: str
    problem: Problem | None = None
    notes: tuple[str, ...] = ()  # your checker could not run, or fails on the code as it was too


async def verify_answer(
    text: str, start: int, end: int, new: str, language: str, settings: RefactorSettings
) -> Verification:
    """Does `new` in place of text[start:end] bring an error? `language`: a languageId."""
    if settings.verify == "off":
        return Verification("off")
    found = await asyncio.to_thread(syntax_check, text, start, end, new, language)
    checked = found.checked or "not checked"
    if found.problem is not None:
        return Verification(checked, Problem(found.problem.line, found.problem.message))
    argv = settings.checkers.get(language) or settings.checkers.get(language.lower())
    if not argv:
        return Verification(checked)
    return await _with_command(argv, text, text[:start] + new + text[end:], checked)


async def _with_command(argv: list[str], old: str, new: str, checked: str) -> Verification:
    """Your checker on the new document; when it fails, on the old one too: only a failure the answer
    brings counts."""
    name = clip(PurePath(argv[0]).name, 40)
    after = await run_checker(argv, new)
    if after.broken:
        return Verification(checked, notes=(f"your checker {name} said nothing: {after.output}",))
    checked = name if checked == "not checked" else f"{checked}, {name}"
    if not after.failed:
        return Verification(checked)
    before = await run_checker(argv, old)
    if before.failed or before.broken:
        return Verification(checked, notes=(f"your checker {name} fails on the code as it was too: {after.output}",))
    return Verification(checked, Problem(after.line, after.output, f"problem {name} reports"))


# The problem of a merged answer that kept a lazy marker of the snippet (formats/merged.py).
LAZY_MARKER = "lazy marker"


def merge_repair_note(problem: Problem) -> str:
    """What a merge asked again adds to its instruction: the marker the last answer copied."""
    return (
        f"Your last answer copied a lazy marker of the snippet instead of the code it stands for ({problem.message}). "
        "Merge again, and in place of every marker write the region's own lines that it stands for, unchanged."
    )


def repair_instruction(problem: Problem, instruction: str, answer: str, first_line: int) -> str:
    """The instruction of a repair, whose region (between the markers, and the prediction) is `answer`,
    the region's text as the answer left it, starting at the document's line `first_line` (1-based)."""
    lines = split_lines(answer)
    at = problem.line - first_line  # 0-based in the answer
    where, quoted = "", ""
    if 0 <= at < len(lines):
        where = f" at line {at + 1} of the region"
        shown = range(max(at - CONTEXT_LINES, 0), min(at + CONTEXT_LINES + 1, len(lines)))
        quoted = "".join(
            f"{'>' if i == at else ' '} {i + 1:>4} | {clip(lines[i].rstrip(chr(13) + chr(10)), 300)}\n" for i in shown
        )
    return (
        f"The region between the markers is your answer to this instruction: {instruction.strip()}\n"
        f"It has a {problem.kind} that the code did not have before{where}: {problem.message}\n"
        f"{quoted}Write the region again with that fixed, and change nothing else."
    )


def refused_message(problem: Problem, repaired: Problem | None, repairs: int) -> str:
    """Why nothing was applied: `problem` in the last answer; `repaired`, the first answer's, when a
    repair was asked (`repairs`: how many were allowed)."""
    if repaired is None:
        advice = "run it again" + (", or let refactor.repairs ask the model to fix it" if repairs == 0 else "")
        return (
            f"the model's answer has a {problem.kind} that the code did not have: {problem.describe()}; "
            f"nothing was applied — {advice}"
        )
    return (
        f"the model's answer had a {repaired.kind} that the code did not have ({repaired.describe()}), and "
        f"asked to fix it, it still has one: {problem.describe()}; nothing was applied — run it again, or ask "
        "for a smaller change"
    )
