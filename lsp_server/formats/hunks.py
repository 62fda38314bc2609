"""Hunks: the `hunks` edit format, where the model answers only what changes, as SEARCH/REPLACE blocks.

    <<<<<<< SEARCH
    (lines copied from the region)
    =======
    (the lines that replace them)
    >>>>>>> REPLACE

The answer is parsed strictly (`parse_hunks`), then every block is located in the region and the
region's new text is built (`apply_hunks`); `hunks_write.hunks_for` writes the answer that turns one
text into another (the loopback test backend and the benchmark speak the format with it). Any doubt
refuses the whole answer with a `HunksError` naming the block: a partial or guessed edit is never
applied. The format has a second, leaner form, unified-diff hunks (`refactor.hunks_form = "diff"`,
`hunks_diff.py`), read into the same `Hunk` records and applied by the same `apply_hunks`;
`hunks_diff.parse_answer` reads an answer in whichever form it came.

Decisions, and why:
- Blocks hold lines, not line breaks. SEARCH lines are compared by content, so a model writing `\\n`
  matches a `\\r\\n` region; every line a REPLACE adds ends the region's way; lines a block copies
  unchanged (its context) keep their own endings. The region's last line break, or its absence,
  stays as it was, the rule the `region` format follows too (`hygiene.match_newlines`): a block can
  never glue the region's last line to the code after it. An empty region (an empty document) has
  no last break to keep; each line written into it ends with one.
- Every block is located in the original region, the text the model saw, never in the text an
  earlier block produced; blocks that change the same lines are refused (a block repeated word
  for word is applied once, with a note), and blocks may come in any order. Each SEARCH must
  match exactly once. Only when it matches nowhere is indentation let off: a SEARCH indented by a
  constant amount more or less than the code (whitespace at line ends and on blank lines ignored
  too) matches, and its REPLACE is shifted by the same amount, with a note. Differences that are
  not one constant shift are refused: nothing says how to indent the REPLACE then. A block whose
  SEARCH equals its REPLACE changes nothing and is skipped, with a note. Locating stays near-linear
  in the region's size and its work is capped (`hunks_match`): an answer past the cap is refused.
- Markers stand alone on their lines, from the first column, trailing whitespace allowed.
  `<<<<<<< SEARCH` and `>>>>>>> REPLACE` may have 5 to 9 marker characters (models miscount; the
  keyword keeps them apart from code), the divider must be exactly `=======`: with no keyword, its
  exact length is what tells it from a heading underline in a docstring. A block with several
  divider lines (its SEARCH copies a heading's underline) is applied at the one reading whose SEARCH
  matches the code once (of several, the longest), with a note; past MAX_DIVIDERS it is refused
  unread, so reading stays linear. `auto` asks for such a region in the region format (`choice`).
- Outside the blocks only blank lines, markdown fence lines (around the answer or around each
  block) and a file name right above a fence (the line some models put there) are allowed. Any
  other text means the model did not follow the format, and the answer is refused.
- An answer without any block means "the model changed nothing": a result with `changed` false
  and a note saying so, which the caller reports as it reports an unchanged region. It is not an
  error, and not a silent success either.
- Notes say what was let off or skipped, a block at a time; more than `hunks_words.LISTED` of one kind (an answer of
  100,000 empty hunks) are counted in one note, so the notes stay short whatever the answer holds.
- A `<think>` block and `finish_reason` are the caller's (hygiene's) business, before parsing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from ..config.schema import HunksForm
from ..text import clip, split_lines
from .hunks_match import MATCH_BUDGET, NO_SHIFT, Finder, Lines, MatchBudgetExceeded, Shift, describe, reindent
from .hunks_words import TERMS, BlockNotes, Terms

SEARCH_MARKER = "<<<<<<< SEARCH"
DIVIDER = "======="
REPLACE_MARKER = ">>>>>>> REPLACE"
DIFF_HUNK = "@@"  # what starts a hunk of the diff form (hunks_diff.py)
# What the user can switch to when the model cannot write usable blocks.
FALLBACK_SETTING = 'refactor.edit_format = "region"'

HUNKS_SYSTEM_PROMPT = (
    "You are a code refactoring engine inside an editor. You change one region of a file as the "
    "instruction says, and you answer with only the changes, as SEARCH/REPLACE blocks:\n"
    f"{SEARCH_MARKER}\n"
    "(lines copied from the region)\n"
    f"{DIVIDER}\n"
    "(the lines that replace them)\n"
    f"{REPLACE_MARKER}\n"
    "Each SEARCH copies whole, consecutive lines of the region exactly as they are, character for "
    "character, with their indentation and comments. Each SEARCH must occur only once in the region: "
    "include enough unchanged lines around the change to make it unique, and no more. Use one block "
    "per change, in the order the changes appear in the region; blocks must not overlap. An empty "
    "REPLACE deletes the lines. Only the region can be changed, and never its markers. Answer with "
    "the blocks only: no explanations, no file names, no markdown fences, no text between or around "
    "the blocks. If the region is empty, answer with one block whose SEARCH is empty. If nothing "
    "needs to change, answer with nothing at all."
)
# The user message's closing line (the `region` format's is in prompt.build_prompt).
HUNKS_ANSWER_INSTRUCTION = (
    "Answer only with SEARCH/REPLACE blocks that copy lines of the region exactly; no explanations, no markdown."
)

# The lines both forms of an answer are read by (hunks_diff.py reads the diff form with them).
SEARCH_LINE = re.compile(r"<{5,9}[ \t]*SEARCH[ \t]*")
DIVIDER_LINE = re.compile(r"={7}[ \t]*")
REPLACE_LINE = re.compile(r">{5,9}[ \t]*REPLACE[ \t]*")
# A line of code that reads as one of those: `auto` asks for such a region in the region format.
_MARKER_IN_CODE = re.compile(r"^(?:<{5,9}[ \t]*SEARCH|={7}|>{5,9}[ \t]*REPLACE)[ \t]*\r?$", re.M)
FENCE_LINE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[ \t]*[^`\s]*[ \t]*")
# "src/app.py" alone on a line above a fence: a file name, not an explanation.
FILE_NAME_LINE = re.compile(r"[ \t]*[\w\-/\\]*\w\.\w+[ \t]*:?[ \t]*|[ \t]*[\w.\-]*/[\w.\-/]+[ \t]*:?[ \t]*")
_SHOWN_CHARS = 40  # of a SEARCH's first line, or of stray text, in a message
# A SEARCH matching twice is refused; its places are counted up to this, for the message only.
_COUNTED = 100
# Divider lines one block may hold, each a reading of where its SEARCH ends: a SEARCH copying a few
# headings' underlines has a few; thousands are a model looping, and would cost a copy of the block each.
MAX_DIVIDERS = 5


class HunksError(ValueError):
    """The answer must not be applied; the message says why and what to do. `block` is 1-based;
    `problem`: what is wrong, without the advice (for a message that gives advice of its own)."""

    def __init__(self, message: str, block: int | None = None, problem: str | None = None) -> None:
        super().__init__(message)
        self.block = block
        self.problem = problem or message


@dataclass(frozen=True)
class Hunk:
    """One SEARCH/REPLACE block (a diff hunk is read into one too: `hunks_diff`)."""

    search: Lines
    replace: Lines
    number: int = 0  # its place in the answer, from 1; 0: its place in the list given to apply_hunks
    # A block with several divider lines: (search, replace) read at each divider after the first.
    readings: tuple[tuple[Lines, Lines], ...] = ()


@dataclass(frozen=True)
class HunksResult:
    text: str  # the region's new text
    notes: list[str] = field(default_factory=list)  # what was let off or skipped, for the log
    changed: bool = True  # False: no block changed anything (see `notes` for why)
    blocks: int = 0  # how many blocks the answer had


def marker_line(code: str) -> str | None:
    """The first line of `code` that a SEARCH/REPLACE answer would read as a marker, if any."""
    found = _MARKER_IN_CODE.search(code)
    return found.group().strip() if found else None


def refusal(problem: str, block: int | None = None) -> HunksError:
    """The error that refuses a whole answer: what is wrong, that nothing was applied, what to do."""
    return HunksError(f"{problem}; nothing was applied — run it again, or use {FALLBACK_SETTING}", block, problem)


def shown(line: str) -> str:
    """A line as quoted in a message: stripped, and cut when long."""
    return clip(line.strip(), _SHOWN_CHARS)


def line_content(line: str) -> str:
    return line.rstrip("\r\n")


# ---------------------------------------------------------------------------------------- parsing

# Reads the hunk whose first line is lines[i], numbered n: the hunk and the index of the line after it.
ReadHunk = Callable[[list[str], int, int], tuple[Hunk, int]]
# How many lines at lines[i] may stand outside the hunks (n: hunks read so far); raises the refusal if none.
ReadOutside = Callable[[list[str], int, int], int]


def read_hunks(answer: str, opens: Callable[[str], object], read: ReadHunk, outside: ReadOutside) -> list[Hunk]:
    """The hunks of an answer in one form, in order, in one pass over its lines: `opens` tells a line that
    starts a hunk, `read` reads one, `outside` passes or refuses what stands between them."""
    lines = [line_content(line) for line in split_lines(answer)]
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines):
        if opens(lines[i]):
            hunk, i = read(lines, i, len(hunks) + 1)
            hunks.append(hunk)
        else:
            i += outside(lines, i, len(hunks))
    return hunks


def allowed_outside(lines: list[str], i: int) -> bool:
    """lines[i] may stand outside the hunks in either form: blank, a fence, a file name above a fence."""
    line = lines[i]
    if not line.strip() or FENCE_LINE.fullmatch(line):
        return True
    return bool(FILE_NAME_LINE.fullmatch(line)) and i + 1 < len(lines) and bool(FENCE_LINE.fullmatch(lines[i + 1]))


def stray_text(
    lines: list[str], i: int, read: int, opens: Callable[[str], object], form: str, lacking: str = ""
) -> HunksError:
    """The refusal of text outside the hunks: an answer without any (`form`: "SEARCH/REPLACE blocks";
    `lacking`: what it lacks, "no @@ line; "), or text between or around them."""
    line = lines[i]
    if not read and not any(opens(rest) for rest in lines[i:]):
        return refusal(f'the model answered without {form} ({lacking}it wrote "{shown(line)}")')
    return refusal(f'the model\'s answer has text outside the {form} ("{shown(line)}")')


def parse_hunks(answer: str) -> list[Hunk]:
    """The blocks of a model's answer, in order. Raises HunksError when the answer breaks the format.

    A blank answer (or one of fences only) gives no blocks: the model made no change.
    """
    return read_hunks(answer, SEARCH_LINE.fullmatch, _parse_block, _outside_blocks)


def _outside_blocks(lines: list[str], i: int, read: int) -> int:
    line = lines[i]
    if allowed_outside(lines, i):
        return 1
    if DIVIDER_LINE.fullmatch(line) or REPLACE_LINE.fullmatch(line):
        raise refusal(f"the model's answer has a `{line.strip()}` line outside any SEARCH/REPLACE block")
    if line.startswith(DIFF_HUNK) and (read or any(SEARCH_LINE.fullmatch(rest) for rest in lines[i:])):
        raise refusal(f"the model's answer mixes SEARCH/REPLACE blocks and diff hunks (a `{shown(line)}` line)")
    raise stray_text(lines, i, read, SEARCH_LINE.fullmatch, "SEARCH/REPLACE blocks")


def _parse_block(lines: list[str], head: int, number: int) -> tuple[Hunk, int]:
    """The block whose SEARCH marker is lines[head], and the index of the line after it."""
    dividers: list[int] = []
    end = head + 1
    while end < len(lines) and not REPLACE_LINE.fullmatch(lines[end]):
        if SEARCH_LINE.fullmatch(lines[end]):
            raise refusal(f"the model's edit block {number} is not closed (no {REPLACE_MARKER} line)", number)
        if DIVIDER_LINE.fullmatch(lines[end]):
            if len(dividers) == MAX_DIVIDERS:
                raise refusal(
                    f"the model's edit block {number} has more than {MAX_DIVIDERS} {DIVIDER} lines, so it is unclear "
                    'where its SEARCH ends (code with such lines can be edited with refactor.hunks_form = "diff")',
                    number,
                )
            dividers.append(end)
        end += 1
    if end == len(lines):
        # The stream said "stop" (an answer cut at the token cap is refused before parsing), so the
        # model itself ended mid-block: what came of the block may be half a change.
        problem = (
            f"the model's answer ends inside edit block {number} (no {REPLACE_MARKER} line): the model "
            "stopped before finishing it"
        )
        raise HunksError(f"{problem}; nothing was applied — run it again", number, problem)
    if not dividers:
        raise refusal(f"the model's edit block {number} has no {DIVIDER} line between SEARCH and REPLACE", number)
    (search, replace), *readings = [(tuple(lines[head + 1 : k]), tuple(lines[k + 1 : end])) for k in dividers]
    return Hunk(search, replace, number, tuple(readings)), end + 1


# ---------------------------------------------------------------------------------------- applying


@dataclass(frozen=True)
class TextLines:
    """A text as lines: contents, and each line's break ("" for an unterminated last line)."""

    bom: str
    lines: list[str]
    ends: list[str]

    @staticmethod
    def of(text: str) -> TextLines:
        # A byte order mark belongs to the file, not to the first line the model copies.
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        raw = split_lines(text[len(bom) :])
        lines = [line_content(line) for line in raw]
        return TextLines(bom, lines, [line[len(content) :] for line, content in zip(raw, lines, strict=True)])

    def newline(self) -> str | None:
        """The most common line break; the first seen among equals."""
        counts = Counter(end for end in self.ends if end)
        return max(counts, key=counts.__getitem__) if counts else None


@dataclass(frozen=True)
class _Match:
    start: int  # region lines [start, end) are replaced
    end: int
    lines: list[tuple[str, str | None]]  # (content, line break); None: a new line, which ends the region's way
    number: int


def _which(search: Lines, terms: Terms) -> str:
    """How a message points at a block: its SEARCH's first line that shows something."""
    first = next((line for line in search if line.strip()), None)
    return terms.first.format(shown(first)) if first is not None else terms.blank


def _locate(hunk: Hunk, number: int, finder: Finder, notes: BlockNotes, terms: Terms) -> tuple[int, Shift]:
    """Where the block's SEARCH is in the region (its start line), and the indentation shift."""
    for exact in (True, False):
        if exact:
            hits = [(i, NO_SHIFT) for i in finder.exact_hits(hunk.search, _COUNTED)]
        else:
            hits = finder.shifted_hits(hunk.search, _COUNTED)
        if len(hits) == 1:
            if not exact:
                notes.add("shifted", number, _shift_note(number, hits[0][1], terms))
            return hits[0]
        if hits:
            places = f"{len(hits)} places" if len(hits) < _COUNTED else f"{_COUNTED} places or more"
            raise refusal(
                f"the model's {terms.block} {number} matches the code in {places} ({_which(hunk.search, terms)}), "
                "so it is unclear which to change",
                number,
            )
    raise refusal(f"the model's {terms.block} {number} does not match the code ({_which(hunk.search, terms)})", number)


def _read_at_the_match(hunk: Hunk, number: int, finder: Finder, notes: BlockNotes, terms: Terms) -> Hunk:
    """A block with several divider lines, read at the one whose SEARCH matches the code once (exactly,
    else with a shift); of several, the one whose SEARCH copies the most lines. None matching: its
    first reading, which `_locate` refuses in the words of a block that does not match."""
    readings = [(hunk.search, hunk.replace), *hunk.readings]
    for exact in (True, False):
        find = finder.exact_hits if exact else finder.shifted_hits
        fits = [(search, replace) for search, replace in readings if search and len(find(search, 2)) == 1]
        if fits:
            search, replace = max(fits, key=lambda fit: len(fit[0]))
            notes.add(
                "divider",
                number,
                f"{terms.note} {number} has several {DIVIDER} lines: read at the one whose SEARCH matches",
            )
            return Hunk(search, replace, hunk.number)
    return Hunk(hunk.search, hunk.replace, hunk.number)


def _over_budget(number: int, terms: Terms) -> HunksError:
    return refusal(
        f"the model's {terms.block}s repeat lines that occur so often in the code that locating them was "
        f"stopped at {terms.note} {number} (over {MATCH_BUDGET:,} line comparisons)",
        number,
    )


def _shift_note(number: int, shift: Shift, terms: Terms) -> str:
    sign, indent = shift
    if not indent:
        return f"{terms.note} {number} matched only once whitespace at line ends and on blank lines was ignored"
    more = "more" if sign == "+" else "less"
    return (
        f"{terms.note} {number} matched only with different indentation: the code is indented {describe(indent)} "
        f"{more} {terms.shifted}"
    )


def _replacement(
    text: TextLines, start: int, search: Lines, replace: Lines, shift: Shift
) -> list[tuple[str, str | None]]:
    """The REPLACE as region lines: lines it copies unchanged from its SEARCH's edges are the code's own
    (content and line break, whatever the model did to their whitespace); the others are new."""
    prefix = 0
    while prefix < min(len(search), len(replace)) and search[prefix] == replace[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(search), len(replace)) - prefix and search[-1 - suffix] == replace[-1 - suffix]:
        suffix += 1
    out: list[tuple[str, str | None]] = []
    for x, line in enumerate(replace):
        if x < prefix:
            at: int | None = start + x
        elif x >= len(replace) - suffix:
            at = start + len(search) - (len(replace) - x)
        else:
            at = None
        out.append((text.lines[at], text.ends[at]) if at is not None else (reindent(line, shift), None))
    return out


def apply_hunks(
    region: str, hunks: list[Hunk], *, newline: str | None = None, form: HunksForm = "search-replace"
) -> HunksResult:
    """The region with the blocks applied. Raises HunksError, applying nothing, when any block fails.

    `newline` ends the lines the blocks add; by default the region's most common line break, else \\n.
    `form` is the answer's (hunks_diff.parse_answer), for the words of messages and notes.
    """
    terms = TERMS[form]
    text = TextLines.of(region)
    if not hunks:
        return HunksResult(region, [terms.none], changed=False, blocks=0)
    notes = BlockNotes(terms)
    finder = Finder(text.lines)
    matches: list[_Match] = []
    for place, hunk in enumerate(hunks, start=1):
        number = hunk.number or place
        if hunk.readings:
            try:
                hunk = _read_at_the_match(hunk, number, finder, notes, terms)
            except MatchBudgetExceeded:
                raise _over_budget(number, terms) from None
        if hunk.search == hunk.replace:
            notes.add("same", number, f"{terms.note} {number} changes nothing ({terms.same})")
            continue
        if not text.lines:
            if hunk.search:
                raise refusal(
                    f"the model's {terms.block} {number} does not match the code (the region is empty, and "
                    f"{_which(hunk.search, terms)})",
                    number,
                )
            matches.append(_Match(0, 0, [(line, None) for line in hunk.replace], number))
            continue
        if not hunk.search:
            raise refusal(f"the model's {terms.block} {number} {terms.only_added}", number)
        try:
            start, shift = _locate(hunk, number, finder, notes, terms)
        except MatchBudgetExceeded:
            raise _over_budget(number, terms) from None
        search, replace = hunk.search, hunk.replace
        matches.append(_Match(start, start + len(search), _replacement(text, start, search, replace, shift), number))
    matches.sort(key=lambda m: (m.start, m.end, m.number))
    distinct: list[_Match] = []
    for match in matches:
        if distinct and (distinct[-1].start, distinct[-1].end, distinct[-1].lines) == (
            match.start,
            match.end,
            match.lines,
        ):
            # A model that repeats a block means the same change once, not two conflicting ones.
            repeated = f"{terms.note} {match.number} repeats {terms.note} {distinct[-1].number}: applied once"
            notes.add("repeat", match.number, repeated)
            continue
        distinct.append(match)
    for before, after in pairwise(distinct):
        if after.start < before.end or after.start == before.start:
            first, second = sorted((before.number, after.number))
            raise refusal(f"the model's {terms.block}s {first} and {second} change the same lines of the code", second)
    new = _join(text, distinct, newline) if distinct else region
    return HunksResult(new, notes.summary(), changed=new != region, blocks=len(hunks))


def _join(text: TextLines, matches: list[_Match], newline: str | None) -> str:
    """The region's lines with the matches spliced in, each line ending as the module docstring says."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    for match in matches:
        out.extend(zip(text.lines[pos : match.start], text.ends[pos : match.start], strict=True))
        out.extend(match.lines)
        pos = match.end
    out.extend(zip(text.lines[pos:], text.ends[pos:], strict=True))
    if not out:
        return text.bom
    nl = newline or text.newline() or "\n"
    last = len(out) - 1
    # The region's last line break, or its absence, stays; an empty region's lines all end with one.
    final = (text.ends[-1] and (out[last][1] or text.ends[-1])) if text.lines else nl
    return text.bom + "".join(content + (end or nl) for content, end in out[:last]) + out[last][0] + final
