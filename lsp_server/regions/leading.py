"""The leading block of a definition: the comment, doc-comment, decorator, annotation and attribute
lines written above it, which a refactor of the definition rewrites with it."""

from __future__ import annotations

import re

from .rules import Language

_DECORATION_LINES = 40  # how far up a multi-line decorator (attribute, annotation) is followed
_DECORATION_LINE_CHARS = 1_000  # a longer line is none of its lines
_STRING_IN_LINE = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")
# A line that starts a comment (or goes on with a block comment): no statement starts there.
NOT_A_START = re.compile(r"(?://|/\*|\*|#(?!\[)|--)")
TRAILING_COMMENT = re.compile(r"\s(?://|#|--).*$")
# A comment about the file, not about the definition that happens to come first, or one that
# declares a type of its own (a JSDoc `@typedef`, `@callback`).
_NOT_THE_DEFINITIONS = re.compile(
    r"@(?:license|preserve|file|fileoverview|overview|module|packageDocumentation|copyright|typedef|callback)\b"
    r"|\bcopyright\b|SPDX-License-Identifier",
    re.IGNORECASE,
)


def leading_start(lines: list[str], line: int, language: Language) -> int:
    """`line`, moved up over the comment and decorator lines directly above it, and, where the
    language attaches one so, over a `/** ... */` doc comment that only blank lines separate from them."""
    first = _directly_above(lines, line, language)
    if language.docs_across_blank_lines and first > 0 and not lines[first - 1].strip():
        doc = _doc_across_blank_lines(lines, first, line)
        if doc is not None:
            return _directly_above(lines, doc, language)
    return first


def _opener_above(lines: list[str], j: int) -> int:
    """The line that opens the block comment ending on line `j` (-1: none). A continuation line
    (` * …`) is inside the comment whatever it quotes: ` * micromatch('test/*.js')` opens nothing."""
    k = j
    while k >= 0 and ("/*" not in lines[k] or (k < j and lines[k].lstrip().startswith("*"))):
        k -= 1
    return k


def _doc_across_blank_lines(lines: list[str], first: int, line: int) -> int | None:
    """The first line of the `/** ... */` comment above the blank lines above line `first`, when the
    definition on `line` (with its leading block from `first`) has no doc comment of its own."""
    if any(lines[k].lstrip().startswith("/**") for k in range(first, line)):
        return None
    j = first - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0 or not lines[j].rstrip().endswith("*/"):
        return None
    k = _opener_above(lines, j)
    if k < 0:
        return None
    opener = lines[k].lstrip()
    if not opener.startswith("/**") or opener.startswith("/**/"):
        return None
    if any(_NOT_THE_DEFINITIONS.search(lines[i]) for i in range(k, j + 1)):
        return None
    return k


def _directly_above(lines: list[str], line: int, language: Language) -> int:
    first = line
    j = line - 1
    comment = language.comment
    decoration = language.decoration
    block_comments = language.block_comments
    while j >= 0:
        content = lines[j].strip()
        if not content:
            break
        if comment.match(content):
            first = j
            j -= 1
            continue
        if block_comments == "/*" and content.endswith("*/"):
            k = _opener_above(lines, j)
            if k < 0:
                break
            if not lines[k].lstrip().startswith("/*"):
                return k + 1 if k < j else first  # `}/**`: only the lines wholly inside the comment
            first = k
            j = k - 1
            continue
        if decoration is not None and not content.endswith((";", ",")):
            k = _decoration_start(lines, j, decoration)
            if k >= 0:
                first = k
                j = k - 1
                continue
        if block_comments == "=begin" and content.startswith("=end"):
            k = j
            while k >= 0 and not lines[k].startswith("=begin"):
                k -= 1
            if k < 0:
                break
            first = k
            j = k - 1
            continue
        if block_comments == "--[" and content.endswith("]]"):
            k = j
            while k >= 0 and "--[" not in lines[k]:
                k -= 1
            if k < 0 or not lines[k].lstrip().startswith("--["):
                break
            first = k
            j = k - 1
            continue
        break
    return first


def _decoration_start(lines: list[str], j: int, decoration: re.Pattern[str]) -> int:
    """The first line of a decorator (attribute, annotation) that ends on line j, or -1."""
    balance = 0
    for k in range(j, max(j - _DECORATION_LINES, -1), -1):
        if len(lines[k]) > _DECORATION_LINE_CHARS:
            return -1
        content = _STRING_IN_LINE.sub("", lines[k].strip())
        if k == j and not content:
            return -1
        balance += sum(content.count(c) for c in ")]}") - sum(content.count(c) for c in "([{")
        if balance <= 0:
            if not decoration.match(content):
                return -1
            return k if balance == 0 else -1
    return -1
