"""Syntax a rewrite breaks: the first syntax error that a region's new text brings into the document,
one its old text did not have, or None. Errors the document had already (the user is in the middle
of an edit) do not count: a valid rewrite of a broken file is no worse than the file.

- Python: the standard library's parser, through `python.parse_python` (the package's one locked
  parse), on as little text as decides. Python reports only its first error, so:
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
"""

from __future__ import annotations

import ast
import bisect
import re
import textwrap
from dataclasses import dataclass

from ..text import split_lines
from .cache import Snapshot
from .python import ParseError, parse_python, top_level_chunk

_INDENT = re.compile(r"^([ \t]*)\S", re.M)
_LINE_NUMBER = re.compile(r"\bline (\d+)")


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
    if language.lower() == "python":
        return SyntaxCheck("python", python_problem(text, start, end, new))
    from .brackets import bracket_trouble
    from .languages import LANGUAGE_OF_ID  # compiles every lexer: not at start-up

    found = LANGUAGE_OF_ID.get(language.lower())
    if found is None:
        return SyntaxCheck("")
    checked = "blocks" if found.word_header is not None else "brackets"
    trouble = bracket_trouble(text[start:end], new, found)
    if trouble is None:
        return SyntaxCheck(checked)
    line = text.count("\n", 0, start) + new.count("\n", 0, trouble.at) + 1
    return SyntaxCheck(checked, SyntaxProblem(line, trouble.message))


def python_problem(text: str, start: int, end: int, new: str) -> SyntaxProblem | None:
    """The first syntax error `new` brings in place of text[start:end] in a Python document."""
    old = text[start:end]
    first_line = text.count("\n", 0, start)  # 0-based
    at_line_start = start == 0 or text[start - 1] in "\r\n"
    whole = start == 0 and end == len(text)  # the file itself: one parse of the new text decides, when it parses
    if at_line_start and not whole and _indent(old) == _indent(new):
        old_alone = parse_python(textwrap.dedent(old))
        if isinstance(old_alone, ast.Module):
            new_alone = parse_python(textwrap.dedent(new))
            return None if isinstance(new_alone, ast.Module) else _problem(new_alone, first_line)
    return _in_context(text, start, end, new)


def _indent(text: str) -> str | None:
    """The indentation of the text's first line that holds code; None when none does."""
    found = _INDENT.search(text)
    return found.group(1) if found else None


def _problem(error: ParseError, offset: int) -> SyntaxProblem:
    """The parser's error in a text that starts `offset` lines into the document, in the document's lines."""

    def moved(match: re.Match[str]) -> str:
        return f"line {int(match.group(1)) + offset}"

    return SyntaxProblem(error.line + offset if error.line else 0, _LINE_NUMBER.sub(moved, error.message))


def _in_context(text: str, start: int, end: int, new: str) -> SyntaxProblem | None:
    """Steps 2 and 3 of the module's rule: the top-level statements around the region."""
    snapshot = Snapshot(text)
    index = snapshot.index
    offsets = index.offsets
    first = bisect.bisect_right(offsets, start) - 1
    last = bisect.bisect_right(offsets, max(start, end - 1)) - 1
    chunk_first, chunk_end = top_level_chunk(snapshot, first, max(first, min(last, len(index.lines) - 1)))
    before, after = text[offsets[chunk_first] : start], text[end : offsets[chunk_end]]
    new_error = parse_python(before + new + after)
    if isinstance(new_error, ast.Module):
        return None
    old_error = parse_python(before + text[start:end] + after)
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
