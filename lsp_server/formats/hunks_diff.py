"""The diff form of the `hunks` edit format (`refactor.hunks_form = "diff"`): the changes as the hunks of
a unified diff without line numbers, the form models know from git (and from OpenAI's apply_patch):

    @@
     an unchanged line of the region (a space, then the line)
    -a line of the region, removed
    +a line added

It says what SEARCH/REPLACE blocks say (`hunks.py`) in fewer tokens: one `@@` line a hunk instead of
three marker lines a block, and each unchanged line written once instead of in both SEARCH and
REPLACE. A hunk is read as a block, its SEARCH being its context and '-' lines in order, its REPLACE
its context and '+' lines in order, and applied by `hunks.apply_hunks`: located, checked and refused
by the same rules (one exact match, indentation let off only by one constant shift, no overlaps, the
region's last line break kept, the match budget). `hunks_write.diff_for` writes the form.

Decisions, and why:
- A hunk starts at a line beginning `@@`; the rest of that line (`@@ -12,3 +12,4 @@`, `@@ def area(shape):`)
  is ignored: hunks are located by their lines, as blocks are, never by line numbers (models
  miscount them) nor by a heading.
- In a hunk, a line's first character says what it is (a space: context; '-': removed; '+': added)
  and the line follows it exactly, so any line of code, `@@` or `-x` included, is safe in a hunk. A
  completely empty line between a hunk's lines is a blank context line (models drop its space).
  Empty lines at a hunk's start or end are not part of it: they mostly separate hunks, and an
  unchanged line at a hunk's edge only helps to locate it, so leaving it out changes neither where
  the hunk applies nor what it writes; a hunk that then matches twice is refused, never guessed.
- A hunk ends at the next `@@` line, a header pair, a markdown fence line or the answer's end. Any
  other line in a hunk (text, or a line indented without the space) refuses the whole answer: it is
  unclear whether the model meant it as code.
- Outside the hunks, what the SEARCH/REPLACE form allows (blank lines, fence lines, a file name above a
  fence), a `--- a/path` and `+++ b/path` header pair naming one file right above a `@@` line, and
  `\\ No newline at end of file` are allowed, the latter inside hunks too; it is ignored: the region's
  last line break stays as it was, whatever the model says of it (`hunks`' rule). Any other text
  refuses the whole answer with a `HunksError`.
- A hunk without '-' or '+' lines changes nothing and is skipped, with a note; an answer without hunks
  means "the model changed nothing", as one without blocks does.
- Unlike a block, a hunk has no closing line: a model that ends its answer mid-hunk by itself gives a
  shorter hunk, which the format cannot tell. An answer the stream did not end with "stop" (cut at the
  token cap, filtered) is refused before parsing (`hygiene`).
- An answer is read in the form the prompt asked for, unless its first marker line is the other
  form's (a SEARCH marker, or a line starting `@@`): models slip into the form they know, so it is read
  in that form, with a note (`parse_answer`). An answer that mixes the forms is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config.schema import HunksForm
from ..text import split_lines
from .hunks import (
    DIFF_HUNK,
    DIVIDER_LINE,
    FENCE_LINE,
    REPLACE_LINE,
    SEARCH_LINE,
    Hunk,
    allowed_outside,
    line_content,
    parse_hunks,
    read_hunks,
    refusal,
    shown,
    stray_text,
)

DIFF_SYSTEM_PROMPT = (
    "You are a code refactoring engine inside an editor. You change one region of a file as the "
    "instruction says, and you answer with only the changes, as the hunks of a unified diff without "
    "line numbers:\n"
    f"{DIFF_HUNK}\n"
    " (an unchanged line of the region)\n"
    "-(a line of the region to remove)\n"
    "+(a line to add in its place)\n"
    f"Each hunk starts with a line {DIFF_HUNK} alone; no line numbers are needed. Every other line of a hunk "
    "starts with one character: a space for a line kept, a minus for a line removed, a plus for a line "
    "added. After it comes the line itself: each kept or removed line copies a whole line of the region "
    "exactly as it is, character for character, with its indentation and comments. Together, in order, "
    "a hunk's kept and removed lines are consecutive lines of the region that must occur only once in "
    "it: include enough unchanged lines around the change to make them unique, and no more. Use one "
    "hunk per separate change, in the order the changes appear in the region; hunks must not overlap. "
    "Only the region can be changed, and never its markers. Answer with the hunks only: no "
    "explanations, no file names or --- and +++ lines, no markdown fences, no text between or around "
    "the hunks. If the region is empty, answer with one hunk of added lines only. If nothing needs to "
    "change, answer with nothing at all."
)
# The user message's closing line (the SEARCH/REPLACE form's is hunks.HUNKS_ANSWER_INSTRUCTION).
DIFF_ANSWER_INSTRUCTION = (
    f"Answer only with diff hunks, each starting with {DIFF_HUNK}, whose kept and removed lines copy lines of "
    "the region exactly; no explanations, no markdown."
)
NO_NEWLINE = "\\ No newline at end of file"
FORM_NAMES: dict[HunksForm, str] = {"search-replace": "SEARCH/REPLACE blocks", "diff": "diff hunks"}

_HEADER_OLD = re.compile(r"--- (?P<path>\S.*)")
_HEADER_NEW = re.compile(r"\+\+\+ (?P<path>\S.*)")
_MIXED = "the model's answer mixes diff hunks and SEARCH/REPLACE blocks"


@dataclass(frozen=True)
class HunksAnswer:
    """An answer read: its form (the one asked for, or the one the model slipped into) and its hunks."""

    form: HunksForm
    hunks: list[Hunk]
    notes: list[str] = field(default_factory=list)


def answer_form(answer: str) -> HunksForm | None:
    """The form of the answer's first marker line: a SEARCH marker, or a line starting `@@`; None: neither."""
    for line in split_lines(answer):
        if SEARCH_LINE.fullmatch(line_content(line)):
            return "search-replace"
        if line.startswith(DIFF_HUNK):
            return "diff"
    return None


def parse_answer(answer: str, asked: HunksForm = "search-replace") -> HunksAnswer:
    """The hunks of a model's answer, read in the form asked for or, when its first marker line is the
    other form's, in that one (with a note). Raises HunksError when the answer breaks its form."""
    form = answer_form(answer) or asked
    hunks = parse_hunks(answer) if form == "search-replace" else parse_diff(answer)
    slipped = f"the model answered in {FORM_NAMES[form]}, not the {FORM_NAMES[asked]} asked for: read as it answered"
    notes = [] if form == asked else [slipped]
    return HunksAnswer(form, hunks, notes)


def parse_diff(answer: str) -> list[Hunk]:
    """The hunks of an answer in the diff form, in order, as blocks. Raises HunksError when the answer
    breaks the form. A blank answer (or one of fences only) gives no hunks: the model made no change."""
    return read_hunks(answer, _opens, _parse_hunk, _outside_hunks)


def _opens(line: str) -> bool:
    return line.startswith(DIFF_HUNK)


def _outside_hunks(lines: list[str], i: int, read: int) -> int:
    if allowed_outside(lines, i) or _no_newline(lines[i]):
        return 1
    if _header_at(lines, i):
        return 2
    if _is_block_marker(lines[i]):
        raise refusal(_MIXED)
    raise stray_text(lines, i, read, _opens, "diff hunks", f"no {DIFF_HUNK} line; ")


def _parse_hunk(lines: list[str], head: int, number: int) -> tuple[Hunk, int]:
    """The hunk whose `@@` line is lines[head], as a block, and the index of the line after it."""
    body: list[tuple[str, str]] = []  # (kind, line): " ", "-", "+"; "" for a completely empty line
    i = head + 1
    while i < len(lines):
        line = lines[i]
        fence = line[:1] in ("`", "~") and FENCE_LINE.fullmatch(line)
        if line.startswith(DIFF_HUNK) or _header_at(lines, i) or fence:
            break
        i += 1
        if not line:
            body.append(("", ""))
        elif line[0] in " -+":
            body.append((line[0], line[1:]))
        elif _no_newline(line):
            continue
        elif _is_block_marker(line):
            raise refusal(_MIXED, number)
        else:
            indent = "tab" if line.startswith("\t") else "blank"
            after = f", after a {indent}" if line[0].isspace() else ""
            raise refusal(
                f"the model's hunk {number} has a line that starts with neither a space, '-' nor '+' "
                f'("{shown(line)}"{after})',
                number,
            )
    # Empty lines at the edges are separators, not part of the hunk (the module docstring).
    first = next((k for k, (kind, _) in enumerate(body) if kind), len(body))
    last = max((k + 1 for k, (kind, _) in enumerate(body) if kind), default=first)
    kept = body[first:last]
    search = tuple(text for kind, text in kept if kind != "+")
    replace = tuple(text for kind, text in kept if kind != "-")
    return Hunk(search, replace, number), i


def _no_newline(line: str) -> bool:
    return line.rstrip() == NO_NEWLINE


def _is_block_marker(line: str) -> bool:
    return any(marker.fullmatch(line) for marker in (SEARCH_LINE, DIVIDER_LINE, REPLACE_LINE))


def _header_at(lines: list[str], i: int) -> bool:
    """lines[i:i + 2] are a `--- a/path`, `+++ b/path` pair naming one file, right above a `@@` line."""
    if i + 2 >= len(lines) or not lines[i + 2].startswith(DIFF_HUNK):
        return False
    old, new = _HEADER_OLD.fullmatch(lines[i]), _HEADER_NEW.fullmatch(lines[i + 1])
    if old is None or new is None:
        return False
    paths = {_path(old["path"]), _path(new["path"])} - {"/dev/null"}
    return len(paths) == 1


def _path(named: str) -> str:
    """A header's path less git's `a/`, `b/` and a timestamp after a tab."""
    path = named.split("\t", 1)[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path
