"""Headers: the text before a block's `{`, made flat enough for one pattern per language to read.

Strings and comments are blanked (`blank`), bracket groups emptied (`collapse`), offsets kept, so
that a match in the flat text is a position in the real one. Each language's classifier (in `js`,
`c_like`) then reads what is left, anchored at the `{`, and answers a `Classified`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

_NOT_NEWLINE = re.compile(r"[^\r\n]")


def blank(m: re.Match[str]) -> str:
    """A string or comment as spaces (line breaks kept, so offsets and lines stay); a string keeps its
    quotes, so that `'name': function` still reads as a property."""
    s = m.group()
    if len(s) >= 2 and ((s[0] in "\"'`" and s[-1] == s[0]) or (s[0] == "/" and s[1] not in "/*")):
        return s[0] + _NOT_NEWLINE.sub(" ", s[1:-1]) + s[0]  # a regex literal keeps its slashes too
    return _NOT_NEWLINE.sub(" ", s)


def _empty(m: re.Match[str]) -> str:
    """A bracket group emptied, line breaks too: a multi-line parameter list or decorator argument
    then reads as one line (offsets are kept, so lines are still counted on the real text)."""
    s = m.group()
    return s[0] + " " * (len(s) - 2) + s[-1]


# A bracket group holding only text and groups already emptied: emptied in its turn, innermost first.
_GROUP = re.compile(
    r"\((?=\s*[^\s)])(?:[^()\[\]{}]++|\(\s*\)|\[\s*\]|\{\s*\})*+\)"
    r"|\[(?=\s*[^\s\]])(?:[^()\[\]{}]++|\(\s*\)|\[\s*\]|\{\s*\})*+\]"
    r"|\{(?=\s*[^\s}])(?:[^()\[\]{}]++|\(\s*\)|\[\s*\]|\{\s*\})*+\}"
)
# Type arguments, after the brackets: `<T extends Foo<Bar>>`, `template <typename T, int N = 3>`.
_ANGLES = re.compile(r"<(?=\s*[^\s>])(?:=>|->|[^<>()\[\]{};=-]++|[=-]|\(\s*\)|\[\s*\]|\{\s*\}|<\s*>)*+>")


def collapse(masked: str) -> str:
    """Every balanced (), [], {} and <> group emptied to whitespace, offsets kept: what is left of a
    header is flat enough for one pattern to read."""
    for pattern in (_GROUP, _ANGLES):
        while True:
            emptied = pattern.sub(_empty, masked)
            if emptied == masked:
                break
            masked = emptied
    return masked


_STATEMENT_TOKEN = re.compile(r"\(\s*\)|\[\s*\]|\{\s*\}|[;(\[{]")
_PART_OF_STATEMENT = set("=:<,|&?([!")  # before a `{ }`: an object or type in the statement
_TYPE_KEYWORD_END = re.compile(r"\b(?:struct|interface)\Z")  # so is `struct { }` (Go, C)


def statement_start(s: str) -> tuple[int, int]:
    """Where the statement ending at the end of `s` (a collapsed header) starts: after the last `;`,
    unclosed bracket, or block that closed before it (a `{ }` not used as an object or type). Twice:
    the innermost (an argument's start, after an unclosed `(`), and the outermost (unclosed brackets
    do not end the statement that holds them)."""
    inner = outer = 0
    for m in _STATEMENT_TOKEN.finditer(s):
        token = m.group()
        if token == ";":
            inner = outer = m.end()
        elif len(token) == 1:
            inner = m.end()
        elif token[0] == "{":
            j = m.start() - 1
            while j >= 0 and s[j] in " \t\r\n":
                j -= 1
            if j < 0 or (s[j] not in _PART_OF_STATEMENT and not _TYPE_KEYWORD_END.search(s, max(0, j - 9), j + 1)):
                inner = outer = m.end()
    return inner, outer


class Header(NamedTuple):
    """What a block is, read once per block from the text before its `{` (or from its keyword)."""

    kind: str | None  # None: a block that is no definition
    name: str | None
    start: int  # offset where the definition starts (else the innermost statement holding the block)
    inner: str  # what the block's body holds: "class" (members), "code", "top" (declarations)
    statement: int  # offset where the outermost statement holding the block starts


# Control keywords of the C-like families: `if (x) {` is no method named `if`.
KEYWORDS_NOT_NAMES = (
    "if|for|while|switch|catch|return|else|do|try|finally|new|throw|foreach|using|lock|fixed|synchronized"
    "|when|match|sizeof|typeof|elseif|guard|defer|repeat|unless|until|checked|unchecked|goto|await|yield"
    "|function|fun|func|def|in|of|is|as|case|delete|with"
)


# Kinds of definitions that hold members: a function declared in one is a method.
CLASS_LIKE = frozenset(("class", "struct", "interface", "enum", "record", "object", "trait", "extension", "impl"))


class HeaderText(NamedTuple):
    """What a classifier reads: the flat header and where it stands."""

    flat: str  # the header, strings and comments blanked, bracket groups emptied
    statement: int  # where the innermost statement holding the `{` starts in `flat`
    context: str  # what the parent block holds: "class", "code", "top", or "any" (unknown)
    parent: Header | None  # the parent block's header, None at the scan's top
    masked: str  # the header with strings and comments blanked, groups kept
    wider: Callable[[], str]  # `masked` read from further up: the start of the block holding it


class Classified(NamedTuple):
    kind: str | None  # None: no definition
    name: str | None
    at: int  # where in `flat` the definition (or the statement) starts
    inner: str  # what the block's body holds, as `Header.inner`


Classifier = Callable[[HeaderText], Classified]


def qualified(owner: str | None, name: str | None) -> str | None:
    return f"{owner}.{name}" if owner and name else name


def plain_name(name: str) -> str | None:
    """A member's name, or None for a quoted or computed one."""
    name = name.strip()
    return name if name and name[0] not in "'\"`[" else None


def skip_space(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return min(i, len(s))
