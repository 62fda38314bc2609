"""Brackets a rewrite breaks, in the languages the block scan reads (`languages`): what a text leaves
open, closes without opening, or gets wrong, by the same lexers (strings, comments, template and regex
literals, raw strings, heredocs) that find definitions.

A text's `Shape`: the openers it never closes, the closers it has nothing open for, and what is wrong
wherever it stands (a `)` that meets a `{`, a string or comment that never ends, an `else` right after
an `else` block). `bracket_trouble` compares two: a region whose shape was clean must stay clean, and
one that was not (a selection that cuts a block in two, a buffer in the middle of an edit) must leave
the same openers open and closers unmatched as before, with no trouble it did not have.
Ruby and Lua close their blocks with `end`: their shape is their blocks', read by their own events.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..languages.lexers import CLOSE, OPEN
from ..regions.rules import Language

_OPENER = {")": "(", "]": "[", "}": "{"}
# A bracket, or an `else` that is a keyword (not `x.else`, not part of a name).
_TOKEN = re.compile(r"[()\[\]{}]|(?<![\w$.])else\b")
_ELSE_END = re.compile(r"(?<![\w$.])else\s*\Z")


@dataclass(frozen=True)
class Trouble:
    """One thing wrong in a text, where it starts."""

    at: int  # offset in the text
    message: str  # what, with no position: "'(' is never closed"


@dataclass(frozen=True)
class Shape:
    unclosed: tuple[Trouble, ...] = ()  # openers never closed, outermost first
    unmatched: tuple[Trouble, ...] = ()  # closers with nothing open
    broken: tuple[Trouble, ...] = ()  # wrong wherever they stand

    @property
    def clean(self) -> bool:
        return not (self.unclosed or self.unmatched or self.broken)

    def troubles(self) -> list[Trouble]:
        return sorted((*self.unclosed, *self.unmatched, *self.broken), key=lambda t: t.at)


def _unterminated(token: str) -> str | None:
    """What never ended, when the lexer's match for a string or comment ran out before its end."""
    if token.startswith(("'''", '"""')):
        return None if len(token) >= 6 and token.endswith(token[:3]) else "unterminated triple-quoted string"
    if token.startswith("/*"):
        return None if len(token) >= 4 and token.endswith("*/") else "unterminated comment"
    quote = token[:1]
    if quote in ("'", '"', "`") and (len(token) < 2 or not token.endswith(quote)):
        return "unterminated template literal" if quote == "`" else "unterminated string"
    return None


def brace_shape(text: str, language: Language) -> Shape:
    """The shape of `text` in a brace language: its strings and comments read by the language's lexer
    (`Lexer.mask`), its brackets between them."""
    stack: list[tuple[str, int, bool]] = []  # (opener, offset, opened right after `else`)
    unmatched: list[Trouble] = []
    broken: list[Trouble] = []
    previous = ""  # the last token: a bracket, or "else"
    previous_end = 0
    closed_else = False  # the last `}` closed a block opened by `else`

    def code(segment_start: int, segment_end: int) -> None:
        nonlocal previous, previous_end, closed_else
        for m in _TOKEN.finditer(text, segment_start, segment_end):
            token, at = m.group(), m.start()
            adjacent = not text[previous_end:at].strip()
            if token == "else":
                # `}else` with no space between is minified code, where `if(a)if(b){}else{}else c` (an
                # outer `if` without braces) is valid: a model's doubled `else` is written `} else`.
                if previous == "}" and closed_else and adjacent and previous_end < at:
                    broken.append(Trouble(at, "'else' follows an 'else' block"))
            elif token in "([{":
                stack.append((token, at, previous == "else" and adjacent))
            elif stack and stack[-1][0] == _OPENER[token]:
                closed_else = stack.pop()[2]
            else:
                opener = _OPENER[token]
                deeper = next((i for i in range(len(stack) - 1, -1, -1) if stack[i][0] == opener), None)
                if deeper is not None:  # it closes an outer one: those opened inside it never closed
                    broken.extend(
                        Trouble(inner_at, f"'{inner}' is never closed") for inner, inner_at, _ in stack[deeper + 1 :]
                    )
                    closed_else = stack[deeper][2]
                    del stack[deeper:]
                elif stack:
                    broken.append(Trouble(at, f"'{token}' does not match '{stack[-1][0]}'"))
                else:
                    unmatched.append(Trouble(at, f"unmatched '{token}'"))
            previous, previous_end = token, m.end()

    position = 0
    for m in language.lexer.mask.finditer(text):
        code(position, m.start())
        if m.lastgroup != "text_quote" and (what := _unterminated(m.group())) is not None:
            broken.append(Trouble(m.start(), what))
        position = m.end()
    code(position, len(text))
    unclosed = tuple(Trouble(at, f"'{opener}' is never closed") for opener, at, _ in stack)
    return Shape(unclosed, tuple(unmatched), tuple(broken))


def block_shape(text: str, language: Language) -> Shape:
    """The shape of `text` in Ruby or Lua: its blocks (`def` ... `end`, `do` ... `end`, braces), by the
    language's own events."""
    stack: list[tuple[str, int]] = []
    unmatched: list[Trouble] = []
    for at, what, word in language.events(text, 0, language.lexer):
        if what == OPEN:
            stack.append((word or text[at], at))
        elif what == CLOSE:
            if stack:
                stack.pop()
            else:
                unmatched.append(Trouble(at, f"unmatched '{'}' if text[at] == '}' else 'end'}'"))
    unclosed = tuple(
        Trouble(at, "'{' is never closed" if word == "{" else f"'{word}' is never closed by an 'end'")
        for word, at in stack
    )
    return Shape(unclosed, tuple(unmatched))


def shape_of(text: str, language: Language) -> Shape:
    return block_shape(text, language) if language.word_header is not None else brace_shape(text, language)


def bracket_trouble(old: str, new: str, language: Language) -> Trouble | None:
    """The first trouble `new` brings that `old` did not have (its offset in `new`), or None."""
    after = shape_of(new, language)
    before = shape_of(old, language)
    fresh = _first_fresh(before.broken, after.broken)
    if fresh is not None:
        return fresh
    ends_before, ends_after = (*before.unclosed, *before.unmatched), (*after.unclosed, *after.unmatched)
    if _messages(ends_before) == _messages(ends_after):
        return None
    opened = _first_fresh(ends_before, sorted(ends_after, key=lambda t: t.at))
    if opened is not None:
        return opened
    # The region left brackets open for the code after it (or closed some opened before it), a
    # selection that cuts a block: the new text does not, so that code no longer matches.
    gone = _first_fresh(ends_after, ends_before)
    assert gone is not None  # the two differ, and the new text has nothing the old had not
    what = gone.message.replace(" is never closed", "").replace("unmatched ", "")
    side = "open for the code after it" if gone in before.unclosed else "closed for the code before it"
    return Trouble(0, f"the region left {what} {side}, and the new text does not")


def _messages(troubles: tuple[Trouble, ...]) -> list[str]:
    return [t.message for t in troubles]


def _first_fresh(had: Sequence[Trouble], has: Sequence[Trouble]) -> Trouble | None:
    """The first of `has` beyond what `had` holds of its kind."""
    counts = Counter(t.message for t in had)
    for trouble in has:
        if counts[trouble.message] <= 0:
            return trouble
        counts[trouble.message] -= 1
    return None
