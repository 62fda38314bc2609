"""Syntax a rewrite breaks: the first syntax error that a region's new text brings into the document,
one its old text did not have, or None. Errors the document had already (the user is in the middle
of an edit) do not count: a valid rewrite of a broken file is no worse than the file.

- Python: the standard library's parser, through `python.parse_python` (the package's one locked
  parse), on as little text as decides. It is the running Python's grammar: a text it fails on for a
  construct of a newer Python (`python_newer`) is read with that construct written the older way,
  and when that parses the check says what it could not read (`not checked (Python 3.11's grammar)`)
  rather than refuse. Python reports only its first error, so:
  1. the region on its own (dedented): when its old text parses alone and the new text starts at
     the same indentation, the new text must parse alone too. This is every definition the scope
     picks, in any file, broken or not, and costs a parse of the region only.
  2. otherwise (a selection that is no whole statement, an indentation changed) the top-level
     statements around the region, before and after: when the old ones parse, the new ones must.
  3. when neither parsed before, the errors are compared by where they stop the parser: the new
     error counts when it lies in the new text while the old one did not lie in the old text, or
     after the region but nearer to it than the old one was. One before the region hides the
     region from the parser: nothing is known, and nothing counts.
- The languages the block scan reads (`languages`): their brackets, by their own lexers (`brackets`).
- Any other language is not checked (`SyntaxCheck.checked` is "").

Every reader sees the text a parser of the file sees: a leading byte-order mark is the file's encoding
(Python reads a file as `utf-8-sig`, and so do the other languages' compilers), not code, so it is
taken off the document and off a new text that starts the document before anything reads them.
"""

from __future__ import annotations

import ast
import bisect
import re
import textwrap
from dataclasses import dataclass

from ..regions.cache import Snapshot
from ..regions.python import ParseError, parse_python, top_level_chunk
from ..text import split_lines
from .python_newer import RUNNING_GRAMMAR, older_reading

_INDENT = re.compile(r"^([ \t]*)\S", re.M)
_LINE_NUMBER = re.compile(r"\bline (\d+)")
BOM = "\ufeff"
# A document read whole when the new text fails in the statements around it (a broken answer, or a
# chunk misaligned by a column-0 line in a string): 5,000 lines parse in about 25 ms, on that path only.
WHOLE_DOCUMENT_MAX_LINES = 5_000


@dataclass(frozen=True)
class SyntaxProblem:
    line: int  # 1-based, in the document as the new text leaves it; 0: the parser named none
    message: str  # in the parser's (or the lexer's) words, with the document's line numbers


@dataclass(frozen=True)
class SyntaxCheck:
    """What read the text ("python", "brackets", "blocks"; "" when nothing could), and the first
    syntax error the new text brings, if any."""

    checked: str
    problem: SyntaxProblem | None = None


def syntax_check(text: str, start: int, end: int, new: str, language: str) -> SyntaxCheck:
    """Does replacing text[start:end] with `new` bring a syntax error into the document? `language`
    is a languageId (`file_language.language_of`)."""
    text, start, end, new = _without_byte_order_mark(text, start, end, new)
    if language.lower() == "python":
        reader = _Reader()
        problem = python_problem(text, start, end, new, reader)
        newer = problem is None and reader.newer
        return SyntaxCheck(f"not checked ({RUNNING_GRAMMAR})" if newer else "python", problem)
    from ..regions.table import LANGUAGE_OF_ID  # compiles every lexer: not at start-up
    from .brackets import bracket_trouble

    found = LANGUAGE_OF_ID.get(language.lower())
    if found is None:
        return SyntaxCheck("")
    checked = "blocks" if found.word_header is not None else "brackets"
    trouble = bracket_trouble(text[start:end], new, found)
    if trouble is None:
        return SyntaxCheck(checked)
    line = text.count("\n", 0, start) + new.count("\n", 0, trouble.at) + 1
    return SyntaxCheck(checked, SyntaxProblem(line, trouble.message))


def _without_byte_order_mark(text: str, start: int, end: int, new: str) -> tuple[str, int, int, str]:
    """The document and the edit as a parser reads the file: with no leading `\\ufeff` (a mark the
    region keeps is `hygiene.keep_byte_order_mark`'s business, not the check's)."""
    if start == 0:
        new = new.removeprefix(BOM)
    if not text.startswith(BOM):
        return text, start, end, new
    return text[1:], max(start - 1, 0), max(end - 1, 0), new


class _Reader:
    """Python's parser for one check, reading a construct newer than its grammar the older way
    (`python_newer`); `newer`: the new text held one, which the check could not read."""

    newer = False

    def parse(self, source: str, new: bool = True) -> ast.Module | ParseError:
        parsed = parse_python(source)
        if isinstance(parsed, ast.Module):
            return parsed
        older = older_reading(source, _parses)
        if older is None:
            return parsed
        again = parse_python(older)  # still failing: an error of the newer grammar too, on the same line
        self.newer = self.newer or (new and isinstance(again, ast.Module))
        return again


def _parses(source: str) -> bool:
    return isinstance(parse_python(source), ast.Module)


def python_problem(text: str, start: int, end: int, new: str, reader: _Reader) -> SyntaxProblem | None:
    """The first syntax error `new` brings in place of text[start:end] in a Python document."""
    old = text[start:end]
    first_line = text.count("\n", 0, start)  # 0-based
    at_line_start = start == 0 or text[start - 1] in "\r\n"
    whole = start == 0 and end == len(text)  # the file itself: one parse of the new text decides, when it parses
    if at_line_start and not whole and _indent(old) == _indent(new):
        old_alone = reader.parse(textwrap.dedent(old), new=False)
        if isinstance(old_alone, ast.Module):
            new_alone = reader.parse(textwrap.dedent(new))
            return None if isinstance(new_alone, ast.Module) else _problem(new_alone, first_line)
    return _in_context(text, start, end, new, reader)


def _indent(text: str) -> str | None:
    """The indentation of the text's first line that holds code; None when none does."""
    found = _INDENT.search(text)
    return found.group(1) if found else None


def _problem(error: ParseError, offset: int) -> SyntaxProblem:
    """The parser's error in a text that starts `offset` lines into the document, in the document's lines."""

    def moved(match: re.Match[str]) -> str:
        return f"line {int(match.group(1)) + offset}"

    return SyntaxProblem(error.line + offset if error.line else 0, _LINE_NUMBER.sub(moved, error.message))


def _in_context(text: str, start: int, end: int, new: str, reader: _Reader) -> SyntaxProblem | None:
    """Steps 2 and 3 of the module's rule: the top-level statements around the region."""
    snapshot = Snapshot(text)
    index = snapshot.index
    offsets = index.offsets
    top = len(index.lines) - 1
    if top < 0:  # an empty document: the new text is all there is
        alone = reader.parse(new)
        return None if isinstance(alone, ast.Module) else _problem(alone, 0)
    # An insertion after the last line break starts a line of its own (line top + 1); one at the end
    # of a last line without a break is on that line.
    after_last = start == len(text) and text.endswith(("\n", "\r"))
    first = min(bisect.bisect_right(offsets, start) - 1, top + after_last)
    last = max(first, min(bisect.bisect_right(offsets, max(start, end - 1)) - 1, top))
    chunk_first, chunk_end = top_level_chunk(snapshot, min(first, top), min(last, top))
    whole = (0, top + 1)
    widen = top < WHOLE_DOCUMENT_MAX_LINES and (chunk_first, chunk_end) != whole
    # A second round reads the whole document: the chunk's borders are lines at column 0, and some of
    # those lie inside a string (a triple-quoted one's text), which misaligns the chunk.
    for chunk in [(chunk_first, chunk_end), *([whole] if widen else [])]:
        chunk_first, chunk_end = chunk
        before, after = text[offsets[chunk_first] : start], text[end : offsets[chunk_end]]
        new_error = reader.parse(before + new + after)
        if isinstance(new_error, ast.Module):
            return None
    assert isinstance(new_error, ParseError)  # the loop returned on a parse
    old_error = reader.parse(before + text[start:end] + after, new=False)
    problem = _problem(new_error, chunk_first)
    if isinstance(old_error, ast.Module):
        return problem
    # Both fail: where each stops the parser, against the region's lines (1-based, in the chunk).
    region_first = first - chunk_first + 1
    old_last = last - chunk_first + 1
    new_last = region_first + max(len(split_lines(new)), 1) - 1
    if _introduced(old_error.line, new_error.line, region_first, old_last, new_last):
        return problem
    return None


def _introduced(old_line: int, new_line: int, first: int, old_last: int, new_last: int) -> bool:
    """Does the new first error (at `new_line`) count, the old one being at `old_line`? The region is
    lines first..old_last before, first..new_last after; 0: a line the parser did not name."""
    if 0 < new_line < first or 0 < old_line < first:  # the parser stops before the region: it never read it
        return False
    old_inside = old_line == 0 or first <= old_line <= old_last
    if new_line == 0 or new_line <= new_last:  # in the new text
        return not old_inside
    # After the region: it counts when the new text leaves the parser stopping nearer to it than before.
    return old_line > old_last and new_line - new_last < old_line - old_last
