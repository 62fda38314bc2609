"""Where a text's strings and comments are, as the language's own lexer reads them: which lines begin
inside one, and (Python) which bare `...` lines are code.

Lazy markers (`lazy.py`) are comments; text that only looks like one is not a marker when it is
inside a string (a docstring quoting `# ... existing code ...`, a doctest's `...` continuation line,
a JS template literal holding `// ... existing code ...`). Python is read by `tokenize`, the other
languages by the scan's own lexers (`languages`): the pattern that consumes one string or comment a
match. Python's `...` is code where Python puts it: inside brackets (`Callable[\\n ...,\\n T]`), and
as the whole body of a `def` or `class`, a docstring before it or not (a stub, a Protocol's method).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

_MAX_RESTARTS = 20  # a text tokenize stops on this often is read from there on without its help
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12+: an f-string is several tokens
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)
_OPENERS, _CLOSERS = frozenset("([{"), frozenset(")]}")
_SKIPPED = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})


@dataclass
class Lexed:
    """What the lexer says of a text's lines (0-based)."""

    in_literal: set[int] = field(default_factory=set)  # begins inside a string or comment opened above
    bracketed: set[int] = field(default_factory=set)  # begins inside an open bracket (Python)
    stubs: set[int] = field(default_factory=set)  # a bare `...` that is a def's or class's whole body
    docstrings: set[int] = field(default_factory=set)  # lines of a def's or class's docstring (Python)


def lexed(lines: Sequence[str], language: str | None, python: bool, comments: Collection[int] = ()) -> Lexed:
    """The lines read by the language's lexer: Python's `tokenize`, else the scan's lexer for the
    language; nothing known for a language neither reads. `comments`: lines that read as a comment of
    some language (a snippet's `// ...` in Python), given to tokenize as `#` (`--x` is Python code)."""
    if python:
        return _python(lines, comments)
    if language:
        pattern = _literal_pattern(language)
        if pattern is not None:
            return Lexed(in_literal=_lines_inside(lines, pattern))
    return Lexed()


def _literal_pattern(language: str) -> re.Pattern[str] | None:
    # Imported here: the scan's lexers compile on first use (regions/__init__.py says why).
    from ..regions.table import LANGUAGE_OF_ID

    found = LANGUAGE_OF_ID.get(language.lower())
    return found.literals if found is not None else None


def _lines_inside(lines: Sequence[str], pattern: re.Pattern[str]) -> set[int]:
    """The lines that begin inside a string or comment (one a match of `pattern`) begun on a line above."""
    text = "".join(lines)
    starts = [0]
    for text_line in lines:
        starts.append(starts[-1] + len(text_line))
    inside: set[int] = set()
    line = 0
    for match in pattern.finditer(text):
        if "\n" not in match.group():
            continue
        while starts[line + 1] <= match.start():
            line += 1
        first = line + 1
        while first < len(lines) and starts[first] < match.end():
            inside.add(first)
            first += 1
    return inside


# -- Python ------------------------------------------------------------------------------------------


@dataclass
class _Statement:
    first: int  # 0-based lines
    last: int
    tokens: list[tokenize.TokenInfo]

    @property
    def kind(self) -> str:
        strings = [t.string for t in self.tokens]
        if strings == ["..."]:
            return "ellipsis"
        if all(t.type == tokenize.STRING for t in self.tokens):
            return "docstring"
        head = strings[1:2] if strings[:1] == ["async"] else strings[:1]
        if head in (["def"], ["class"]) and strings[-1] == ":":
            return "header"
        return "code"


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _python(lines: Sequence[str], comments: Collection[int]) -> Lexed:
    """tokenize's reading. Each line is given to it without its indentation (which it would judge, and a
    snippet's markers break) and each of `comments` in another language's syntax as `#` (a quote in it
    would open a string); where it stops (an unclosed string on one line), it starts again on the next."""
    readable = [line.lstrip(" \t\f") for line in lines]
    for index in comments:
        line = readable[index]
        if not line.startswith("#") and not any(quote in line for quote in "\"'"):
            readable[index] = "#\n"
    found = Lexed()
    statements: list[_Statement] = []
    start, restarts = 0, 0
    while start < len(lines) and restarts <= _MAX_RESTARTS:
        start = _tokenize_from(readable, start, found, statements)
        restarts += 1
    for k, statement in enumerate(statements):
        if statement.kind == "ellipsis" and _is_stub(statements, k, lines):
            found.stubs.add(statement.first)
        elif statement.kind == "docstring" and k and statements[k - 1].kind == "header":
            found.docstrings.update(range(statement.first, statement.last + 1))
    return found


def _tokenize_from(lines: Sequence[str], start: int, found: Lexed, statements: list[_Statement]) -> int:
    """Tokens from line `start` on, their facts added to `found` and `statements`; the line to start
    again at after an error (len(lines) when done)."""
    depth, row, fstrings = 0, start, []
    pending: list[tokenize.TokenInfo] = []
    reader = io.StringIO("".join(lines[start:])).readline
    try:
        for token in tokenize.generate_tokens(reader):
            first, last = token.start[0] - 1 + start, token.end[0] - 1 + start
            while row < first:  # the lines this token is the first on
                row += 1
                if depth:
                    found.bracketed.add(row)
            if token.type == tokenize.STRING and last > first:
                found.in_literal.update(range(first + 1, last + 1))
            elif token.type == _FSTRING_START:
                fstrings.append(first)
            elif token.type == _FSTRING_END and fstrings:
                found.in_literal.update(range(fstrings.pop() + 1, last + 1))
            elif token.type == tokenize.OP and token.string in _OPENERS:
                depth += 1
            elif token.type == tokenize.OP and token.string in _CLOSERS:
                depth = max(depth - 1, 0)
            if token.type == tokenize.NEWLINE:
                if pending:
                    statements.append(_Statement(pending[0].start[0] - 1 + start, first, pending))
                pending = []
            elif token.type not in _SKIPPED and token.type != tokenize.ENDMARKER:
                pending.append(token)
            row = max(row, last)
    except (tokenize.TokenError, SyntaxError) as exc:
        at = (exc.args[1][0] if isinstance(exc, tokenize.TokenError) else exc.lineno or 1) - 1 + start
        if "multi-line string" in str(exc.args[0]):  # open to the end: what follows is its text
            found.in_literal.update(range(at + 1, len(lines)))
            return len(lines)
        return max(at, row) + 1
    return len(lines)


def _is_stub(statements: list[_Statement], k: int, lines: Sequence[str]) -> bool:
    """Statement k (`...`) is the whole body of the `def` or `class` above it, after its docstring or not."""
    ellipsis = statements[k]
    j = k - 1
    if (
        j >= 0
        and statements[j].kind == "docstring"
        and _indent(lines[statements[j].first]) == _indent(lines[ellipsis.first])
    ):
        j -= 1
    if j < 0 or statements[j].kind != "header":
        return False
    depth = _indent(lines[statements[j].first])
    if _indent(lines[ellipsis.first]) <= depth:
        return False
    after = statements[k + 1] if k + 1 < len(statements) else None
    return after is None or _indent(lines[after.first]) <= depth
