"""Scope for code that is not Python: the definition (function, method, class, ...) around the cursor.

`code_finder(language)` answers the finder of a languageId; `find_code_definition(text, line,
family)` the innermost definition whose span holds the line. The span (`Definition`) runs from the
definition's leading block (decorators, annotations, attributes and the comments written directly
above it, and for some languages a `/** ... */` doc comment blank lines away) to the line of its
closing `}` or `end`.

How, in four steps, each kept near the cursor because code actions ask on every cursor move:

1. Where to start reading (here). Reading a 20,000-line file from the top for every request is too
   slow, so the scan starts at a line above the cursor that is indented no deeper than anything
   between it and the cursor and that may begin a definition (found by a compiled pattern, not line
   by line). Whatever starts there (or below it) is seen whole; if the innermost definition around
   the cursor started further up, the scan finds none, and the next such line further out (less
   indented) is tried, down to column 0. When even that finds nothing, a last scan from the top of
   the file settles it (unless the line tried at column 0 surely began a declaration, or the file is
   huge: then only blocks whose content is not indented, C++ or TypeScript namespaces, are tried).
2. Blocks (`lexers`, `end_blocks`, `scan`): a compiled pattern per language consumes strings and
   comments at C speed and stops only at what nests; the scan keeps the stack of open blocks.
3. Which blocks are definitions (`headers`, `js`, `c_like`, `end_blocks`): only the few blocks around
   the cursor are classified, by the text before their `{` or by the keyword that opened them.
4. The span (`leading`): the header start, moved up over the comment and decorator lines above it,
   to the line of the closing brace.

Each language's rules are one record in `languages`. Two kinds of definitions have no block: a JS
arrow function with an expression body assigned to a name (`js_arrows`), and Ruby's endless
`def f = expression` (`end_blocks`); they are looked for around the cursor after the blocks.

What cannot be known without parsing from the top: a line inside a multi-line string or template
that looks like code (a shell function in a JS template, Go source in a test's raw string) may be
taken as a place to start reading when the cursor is on or right below it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from ..languages.headers import Header
from ..languages.lexers import CLOSE, OPEN
from .cache import ScopeCache, Snapshot, snapshot_of
from .definition import Definition
from .leading import NOT_A_START, TRAILING_COMMENT
from .rules import Language
from .scan import Block, Scan, leading_blanks
from .table import LANGUAGE_OF_ID, LANGUAGES

Finder = Callable[[Snapshot, int], Definition | None]


def code_family(language: str) -> str | None:
    """The family `find_code_definition` reads a languageId (or `file_language.language_of` name) with.

    Brace families differ by their strings and comments: "js" (JavaScript, TypeScript, JSX/TSX),
    "go", "rust", "c" (C, C++, Objective-C), "java" (Java, Kotlin, Scala, Groovy, Dart), "csharp",
    "swift", "php"; "ruby" and "lua" close their blocks with `end`. None for the languages this
    package reads otherwise (Python) or not at all (plain text, YAML, markdown...).
    """
    found = LANGUAGE_OF_ID.get(language.lower())
    return found.family if found is not None else None


def code_finder(language_id: str) -> Finder | None:
    """The finder for a languageId, or None when no family reads it."""
    language = LANGUAGE_OF_ID.get(language_id.lower())
    if language is None:
        return None
    return lambda snapshot, cursor: code_definition(snapshot, cursor, language)


def find_code_definition(
    text: str, cursor_line: int, family: str, cache: ScopeCache | None = None
) -> Definition | None:
    """The innermost definition whose span holds `cursor_line` (0-based), or None when the cursor is in
    no definition (or `family` is unknown). "braces" is accepted too, read as C-like code."""
    language = LANGUAGES.get(family)
    if language is None:
        return None
    return code_definition(snapshot_of(text, cache), cursor_line, language)


def code_definition(snapshot: Snapshot, cursor_line: int, language: Language) -> Definition | None:
    if not 0 <= cursor_line < len(snapshot.index.lines):
        return None
    key = (language.family, cursor_line)
    try:  # one read: a batch's thread may empty the answers of a shared snapshot between two
        return snapshot.answers[key]
    except KeyError:
        found = _find(snapshot, cursor_line, language)
        snapshot.remember(key, found)
        return found


# -- where to start -------------------------------------------------------------------------------

_NOT_A_LINE = r"(?![ \t\r\n]|\Z|//|/\*|\*|#(?!\[)|--)"  # blank, or a comment


@lru_cache(maxsize=512)
def _shallow(start: str, limit: int) -> re.Pattern[str]:
    """A line break, then a line indented by less than `limit` blanks (neither blank nor a comment),
    or by exactly `limit` and where a scan may start (`start`, a language's pattern). The `\n`
    first: a literal the regex engine skips to fast. Compiled once per language and indentation."""
    if limit >= 1 << 20:
        body = rf"[ \t]*+{_NOT_A_LINE}"
    elif limit == 0:
        body = rf"(?={start})"
    else:
        body = rf"(?:[ \t]{{0,{limit - 1}}}+{_NOT_A_LINE}|[ \t]{{{limit}}}(?={start}))"
    return re.compile(rf"\n{body}")


def _last_shallow(text: str, end: int, pattern: re.Pattern[str]) -> int:
    """Where the last line starting before `end` that `pattern` (see `_shallow`) finds starts, or -1.
    Searched in windows growing backwards from `end`: at C speed, not line by line in Python."""
    width = 256
    while end > 0:
        start = max(0, end - width)
        found = None
        for found in pattern.finditer(text, max(0, start - 1), end - 1):  # noqa: B007 - the last one is wanted
            pass
        if found is not None:
            return found.start() + 1
        end = start
        width *= 4
    # The first line has no line break before it.
    return 0 if text and pattern.match("\n" + text[:200]) else -1


def _start_lines(snapshot: Snapshot, cursor: int, language: Language) -> Iterator[int]:
    """Lines at or above the cursor where a scan may start, innermost first: each indented no deeper
    than every line between it and the cursor; after one is tried, the next must be less indented."""
    text, index = snapshot.text, snapshot.index
    lines, offsets = index.lines, index.offsets
    limit = 1 << 30
    end = offsets[cursor + 1]
    while True:
        at = _last_shallow(text, end, _shallow(language.start.pattern, limit))
        if at < 0:
            return
        j = bisect.bisect_right(offsets, at) - 1
        line = lines[j]
        indent = leading_blanks(line)
        if language.start.match(line, indent) and not _continues_above(lines, j, language):
            yield j
            limit = indent - 1
            if limit < 0:
                return
        else:
            limit = indent
        end = offsets[j]


_UNFINISHED = tuple("([,=:?&|+*/%<>!~^.-\\")


def _continues_above(lines: list[str], j: int, language: Language) -> bool:
    """Whether line j continues an expression left unfinished above (`reduce(`, `x =`, `a &&`): a
    scan starting there would read an argument as a statement."""
    for k in range(j - 1, max(j - 12, -1), -1):
        content = lines[k].strip()
        if not content or NOT_A_START.match(content) or content.endswith("*/"):
            continue
        content = TRAILING_COMMENT.sub("", content).rstrip()
        if content.endswith(("++", "--", "*/")) or content.startswith("<?"):  # `<?php` ends nothing
            return False
        if language.semicolons and not content.endswith((";", "{", "}", ":")):
            return True  # `static inline int` above `add(int a) {`, `@Override` above `void run() {`
        return content.endswith(_UNFINISHED)
    return False


_WRAPPER_LINE = re.compile(r"^(?![ \t}/*#\r\n])[^\n]*[{][ \t]*(?://[^\n]*)?\r?\n(?:[ \t]*\r?\n)*(?![ \t}\r\n])", re.M)
_MAX_TRIES = 12


def _find(snapshot: Snapshot, cursor: int, language: Language) -> Definition | None:
    found, scan = _find_block(snapshot, cursor, language)
    if language.after_blocks is not None:
        return language.after_blocks(snapshot, cursor, language, found, scan) or found
    return found


_TOP_SCAN_MAX = 400_000  # characters above the cursor that a last scan from the top may read


def _find_block(snapshot: Snapshot, cursor: int, language: Language) -> tuple[Definition | None, Scan | None]:
    """The innermost definition with braces (or `end`) around the cursor, and the scan that read it
    (the last one tried when none)."""
    text, index = snapshot.text, snapshot.index
    lines = index.lines
    scan: Scan | None = None
    declaration = False
    for tries, start in enumerate(_start_lines(snapshot, cursor, language)):
        if tries >= _MAX_TRIES:
            break
        found, scan = _try(snapshot, language, start, cursor)
        if found is not None or start == 0:
            return found, scan
        # A declaration keyword at column 0, and (Go, JS: where multi-line strings are the backtick's)
        # an even number of backticks above it, and no string read from there running past the
        # cursor's line (as when the reading starts inside one): no string's content.
        declaration = (
            language.backtick_strings
            and language.declaration.match(lines[start]) is not None
            and text.count("`", 0, index.offsets[start]) % 2 == 0
            and not _string_runs_past(text, language, index.offsets[start], index.offsets[cursor + 1])
        )
    # Nothing from the lines tried: the cursor is outside every definition, or one of those lines lay
    # inside a multi-line string, or in a wrapper whose content is not indented (a C++ or TypeScript
    # namespace). Reading from the top settles it, unless the last line tried surely was a declaration;
    # in a huge file, or then, only the wrappers not too far above are tried.
    if index.offsets[cursor] <= _TOP_SCAN_MAX and not declaration:
        return _try(snapshot, language, 0, cursor)
    above = index.offsets[cursor]
    wrappers = list(_WRAPPER_LINE.finditer(text, above - _TOP_SCAN_MAX, above))
    for m in reversed(wrappers[-_MAX_TRIES:]):
        line = bisect.bisect_right(index.offsets, m.start()) - 1
        if lines[line].strip() == "{" and line > 0:
            line -= 1
        if _opens_definition(snapshot, language, line, text.rfind("{", m.start(), m.end())):
            found, wrapper_scan = _try(snapshot, language, line, cursor)
            if found is not None:
                return found, wrapper_scan
    return None, scan


def _string_runs_past(text: str, language: Language, start: int, end: int) -> bool:
    """Whether a string or comment, read from `start`, begins before `end` and ends after it."""
    for token in language.lexer.mask.finditer(text, start):
        if token.start() >= end:
            return False
        if token.end() > end:
            return True
    return False


def _opens_definition(snapshot: Snapshot, language: Language, line: int, brace: int) -> bool:
    """Whether the block whose `{` is at offset `brace` (a scan starting at `line`) is a definition."""
    scan = Scan(snapshot, language, line)
    stack = scan.stack
    for at, what, word in scan.events:
        if what == OPEN:
            block = Block(at, stack[-1] if stack else None, word)
            if at >= brace:
                return scan.header(block).kind is not None
            stack.append(block)
        elif what == CLOSE and stack:
            closed = stack.pop()
            (stack[-1].kids if stack else scan.top_kids).append(at)
            closed.end = at
    return False


def _try(snapshot: Snapshot, language: Language, start: int, cursor: int) -> tuple[Definition | None, Scan]:
    scan = Scan(snapshot, language, start)
    block = scan.found = scan.find(cursor)
    if block is None:
        return None, scan
    first, last = scan.span(block)
    header = scan.header(block)
    if not first <= cursor <= last:
        return None, scan
    kind, name = header.kind or "block", header.name
    holder = block.up
    while holder is not None and scan.header(holder).kind is None and scan.header(holder).inner == "class":
        holder = holder.up  # an object literal, an anonymous class, `class << self`
    if (
        holder is None
        and scan.top == "any"
        and kind == "function"
        and "." not in (name or "")
        and not language.methods_by_syntax
    ):
        # The scan started inside whatever holds the definition: read that one's header to name it.
        owner = _container(snapshot, language, start)
        if owner is not None and owner.kind is None and owner.inner == "class":
            kind = "method"  # in an object literal, an anonymous class
        elif owner is not None and owner.kind in language.method_holders:
            kind = "method"
            if name and owner.name and "." not in name and "::" not in name:
                name = f"{owner.name}.{name}"
    return Definition(first, last, kind, name), scan


_CONTAINER_HEADER_LINES = 30  # how far below its first line a container's `{` is looked for


def _container(snapshot: Snapshot, language: Language, line: int) -> Header | None:
    """The header of the block opened by the nearest line above `line` that is less indented and may
    start a definition (what holds the definition on `line`, if indentation tells the truth)."""
    lines = snapshot.index.lines
    indent = leading_blanks(lines[line])
    above = next((j for j in _start_lines(snapshot, line, language) if leading_blanks(lines[j]) < indent), None)
    if above is None:
        return None
    scan = Scan(snapshot, language, above)
    end = scan.offsets[min(above + _CONTAINER_HEADER_LINES, len(lines))]
    stack = scan.stack
    for at, what, word in scan.events:
        if at >= end:
            break
        if what == OPEN:
            block: Block = Block(at, stack[-1] if stack else None, word)
            if not stack:
                return scan.header(block)
            stack.append(block)
        elif what == CLOSE and stack:
            stack.pop()
            (stack[-1].kids if stack else scan.top_kids).append(at)
    return None
