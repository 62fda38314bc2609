"""Scope for Python: the enclosing definition from the syntax tree, or from a scan when it does not parse.

The stdlib `ast` knows every definition's exact lines (decorators, black's multi-line signatures,
nested and async definitions, bodies after long strings). Parsing a whole 20,000-line module takes
well over 100 ms, and code actions ask on every cursor move, so only the top-level statement around
the cursor is parsed: the lines from the nearest top-level statement start above the cursor to the
next one below. A chunk that does not parse (its borders fell inside a string, or the buffer is in
the middle of an edit) is widened a few times; when it still does not parse, a scan that tracks
strings and brackets finds the definitions by their indentation instead.
"""

from __future__ import annotations

import ast
import bisect
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .cache import ScopeCache, Snapshot, snapshot_of
from .definition import Definition

# A line at column 0 that may start a top-level statement (not a closing bracket, a comment, or a
# clause that continues the statement above).
_TOP_START = re.compile(r"(?!(?:else|elif|except|finally)\b)[^\s#)\]}]")
_DEFINITION_HEADER = re.compile(r"[ \t]*(?:async[ \t]+)?(def|class)[ \t]+(\w+)")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_WIDENINGS = 4  # chunk retries, each twice as wide, before the scan
_FULL_PARSE_MAX_LINES = 1500  # past this a whole-file parse costs more than a code action may take
_WHOLE_SCAN_MAX_LINES = 3000  # a scan from the top is always right about strings; past this, a window


def find_python_definition(text: str, cursor_line: int, cache: ScopeCache | None = None) -> Definition | None:
    """The innermost definition whose span holds `cursor_line` (0-based), or the multi-line top-level
    statement holding it (kind "block"), or None."""
    return python_definition(snapshot_of(text, cache), cursor_line)


def python_definition(snapshot: Snapshot, cursor_line: int) -> Definition | None:
    lines = snapshot.index.lines
    if not 0 <= cursor_line < len(lines):
        return None
    tree, first = _parse_around(snapshot, cursor_line)
    if tree is None or _starts_in_a_string(tree, first):
        return _scan(snapshot, cursor_line)
    return _from_tree(tree, first, lines, cursor_line)


# -- the syntax tree ----------------------------------------------------------------------------------


# The same, found in the whole text at once: at a line start (after `\n`, or a `\r` alone ends a line too).
_TOP_START_LINE = re.compile(r"(?:^|(?<=\r))" + _TOP_START.pattern, re.M)


def _top_starts(snapshot: Snapshot) -> list[int]:
    """The lines (in order) that may start a top-level statement: found once per text by one search at
    C speed, then bisected. Read line by line from each question's line, a chunk of a big class cost
    each question the lines of the class (a snippet naming hundreds of its methods asks hundreds)."""
    starts = snapshot.top_starts
    if starts is None:
        offsets = snapshot.index.offsets
        starts = [bisect.bisect_right(offsets, m.start()) - 1 for m in _TOP_START_LINE.finditer(snapshot.text)]
        snapshot.top_starts = starts
    return starts


def _start_at_or_above(snapshot: Snapshot, line: int, nth: int = 1) -> int:
    """The nth top-level statement start at or above `line` (the highest there is when fewer), 0 for none."""
    starts = _top_starts(snapshot)
    k = bisect.bisect_right(starts, line) - 1
    return starts[max(k - nth + 1, 0)] if k >= 0 else 0


def _start_below(snapshot: Snapshot, line: int, nth: int = 1) -> int:
    """The nth top-level statement start below `line` (the lowest there is when fewer); the line count for none."""
    starts = _top_starts(snapshot)
    k = bisect.bisect_right(starts, line)
    return starts[min(k + nth - 1, len(starts) - 1)] if k < len(starts) else len(snapshot.index.lines)


def _chunk_start(snapshot: Snapshot, line: int) -> int:
    """The top-level statement start at or above `line`, moved up over the decorators above it."""
    starts, lines = _top_starts(snapshot), snapshot.index.lines
    k = bisect.bisect_right(starts, line) - 1
    if k < 0:
        return 0
    while k > 0 and lines[starts[k - 1]].startswith("@"):
        k -= 1
    return starts[k]


def _parsed(snapshot: Snapshot, first: int, end: int) -> ast.Module | None:
    """Lines [first, end) parsed, once per text: a code action per cursor move must not re-parse.
    The snapshot may be shared with another thread, which may empty its trees between two reads."""
    key = (first, end)
    try:
        return snapshot.trees[key]
    except KeyError:
        parsed = parse_python("".join(snapshot.index.lines[first:end]))
        tree = parsed if isinstance(parsed, ast.Module) else None
        snapshot.keep_tree(key, tree)
        return tree


# CPython 3.11 turns a parse into `ast` objects keeping its recursion depth in state that every thread
# shares: two parses at once (a batch finding its targets in a worker thread while the event loop
# answers a code action) fail with "SystemError: AST constructor recursion depth mismatch" whenever
# the interpreter switches threads inside one (a collection that runs a finalizer is enough). Every
# parse the package does goes through this lock (tests/unit/test_parse_threads.py checks there is no other).
_PARSER = threading.Lock()


class ParseError(NamedTuple):
    """Why a source does not parse: the parser's first error, where it put it."""

    line: int  # 1-based, in the source parsed; 0 when the parser named no line
    message: str  # the parser's words: "'(' was never closed"


def parse_python(source: str) -> ast.Module | ParseError:
    """`source` parsed, or the first error that stops it; from any thread."""
    with _PARSER:
        try:
            return ast.parse(source)
        except SyntaxError as exc:  # IndentationError and TabError too
            return ParseError(exc.lineno or 0, exc.msg)
        except (ValueError, RecursionError, MemoryError) as exc:  # a NUL character; nesting too deep
            return ParseError(0, str(exc) or type(exc).__name__)


def top_level_chunk(snapshot: Snapshot, first: int, last: int) -> tuple[int, int]:
    """The lines [start, end) of the top-level statements that lines first..last (0-based) are part
    of: from the statement start at or above `first` (its decorators included) to the next one below
    `last`. Each top-level statement parses on its own, so they parse as the whole file would."""
    return _chunk_start(snapshot, first), _start_below(snapshot, last)


def _parse_around(snapshot: Snapshot, cursor: int) -> tuple[ast.Module | None, int]:
    """A parsed chunk holding `cursor`, and the chunk's first line; (None, 0) when none parses."""
    lines = snapshot.index.lines
    first, end = top_level_chunk(snapshot, cursor, cursor)
    for widening in range(_WIDENINGS + 1):
        tree = _parsed(snapshot, first, end)
        if tree is not None:
            return tree, first
        if (first, end) == (0, len(lines)):
            return None, 0
        step = 2**widening
        first = _chunk_start(snapshot, _start_at_or_above(snapshot, first - 1, step)) if first else 0
        end = _start_below(snapshot, end, step) if end < len(lines) else end
    if len(lines) <= _FULL_PARSE_MAX_LINES:
        return _parsed(snapshot, 0, len(lines)), 0
    return None, 0


def _starts_in_a_string(tree: ast.Module, first: int) -> bool:
    """A chunk that parsed by accident: it began on the closing quotes of a string above it, so what
    it reads as a string statement is the code between two strings."""
    head = tree.body[0] if tree.body else None
    return (
        first > 0
        and isinstance(head, ast.Expr)
        and isinstance(head.value, ast.Constant)
        and isinstance(head.value.value, str | bytes)
        and head.end_lineno != head.lineno
    )


def _leading_comments(lines: Sequence[str], first: int) -> int:
    """Move `first` up over the comment lines written directly above it."""
    while first > 0 and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    return first


def _span(node: ast.stmt, offset: int, lines: Sequence[str]) -> tuple[int, int]:
    """0-based (first, last) lines of a statement; a definition's starts at its decorators and comments."""
    first = node.lineno
    if isinstance(node, _DEFINITIONS) and node.decorator_list:
        first = min(first, *(d.lineno for d in node.decorator_list))
    first += offset - 1
    if isinstance(node, _DEFINITIONS):
        first = _leading_comments(lines, first)
    return first, (node.end_lineno or node.lineno) + offset - 1


def _from_tree(tree: ast.Module, offset: int, lines: Sequence[str], cursor: int) -> Definition | None:
    found: Definition | None = None
    top_block: Definition | None = None
    names: list[str] = []
    parent_is_class = False
    body: Sequence[ast.stmt] = tree.body
    while True:
        # The statements of a body follow one another: the one holding the cursor is the first that ends
        # at or below it, if it starts above it. Bisected: a class of thousands of methods is asked often.
        at = bisect.bisect_left(body, cursor, key=lambda node: (node.end_lineno or node.lineno) + offset - 1)
        if at == len(body):
            break
        holder = body[at]
        first, last = _span(holder, offset, lines)
        if not first <= cursor <= last:
            break
        if body is tree.body and not isinstance(holder, _DEFINITIONS) and last > first:
            top_block = Definition(first, last, "block")
        if isinstance(holder, _DEFINITIONS):
            names.append(holder.name)
            kind = "class" if isinstance(holder, ast.ClassDef) else "method" if parent_is_class else "function"
            found = Definition(first, last, kind, ".".join(names))
            parent_is_class = isinstance(holder, ast.ClassDef)
        if isinstance(holder, _DEFINITIONS):
            body = holder.body  # its own list: not copied, however long
        elif isinstance(holder, ast.Match):
            body = [stmt for case in holder.cases for stmt in case.body]
        elif isinstance(holder, ast.Try | ast.TryStar):
            body = [*holder.body, *(s for h in holder.handlers for s in h.body), *holder.orelse, *holder.finalbody]
        else:
            body = [child for child in ast.iter_child_nodes(holder) if isinstance(child, ast.stmt)]
    return found or top_block


# -- the scan, for a buffer that does not parse --------------------------------------------------------

_LEXEME = re.compile(
    r"""(?P<comment>\#)"""
    r"""|(?P<triple>[rRbBuUfF]{0,2}(?:\"\"\"|'''))"""
    r"""|(?P<string>[rRbBuUfF]{0,2}(?:"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))"""
    r"""|(?P<open>[(\[{])|(?P<close>[)\]}])"""
)


@dataclass(frozen=True)
class _Logical:
    """A logical line: its physical lines [first, last], indentation and text of its first line."""

    first: int
    last: int
    indent: int
    head: str


def _indent(line: str) -> int:
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def _logical_lines(lines: Sequence[str], start: int, stop: int) -> tuple[list[_Logical], bool]:
    """Logical lines of lines[start:stop], skipping blank and comment-only lines, and whether the
    scan ended inside a string (a sign that it started inside one).

    An unclosed bracket in a half-written line would swallow the rest of the file, so a `def`,
    `class` or decorator that starts a line no deeper than the bracket's line starts a new statement.
    """
    result: list[_Logical] = []
    depth = 0
    triple: str | None = None
    opener_indent = 0
    current: list[int] | None = None  # [first, indent] of the logical line being read
    for i in range(start, stop):
        line = lines[i]
        stripped = line.strip()
        pos = 0
        if (
            triple is None
            and depth > 0
            and current is not None
            and _indent(line) <= opener_indent
            and (_DEFINITION_HEADER.match(line) or stripped.startswith("@"))
        ):
            result.append(_Logical(current[0], i - 1, current[1], lines[current[0]].strip()))
            current, depth = None, 0
        if current is None and triple is None:
            if not stripped or stripped.startswith("#"):
                continue
            current = [i, _indent(line)]
            opener_indent = current[1]
        if triple is not None:
            close = _find_close(line, triple, 0)
            if close < 0:
                continue
            triple, pos = None, close
        while True:
            match = _LEXEME.search(line, pos)
            if match is None:
                break
            pos = match.end()
            kind = match.lastgroup
            if kind == "comment":
                break
            if kind == "triple":
                quote = match.group()[-3:]
                close = _find_close(line, quote, pos)
                if close < 0:
                    triple = quote
                    break
                pos = close
            elif kind == "open":
                depth += 1
            elif kind == "close":
                depth = max(depth - 1, 0)
        continued = line.rstrip("\r\n").endswith("\\")
        if triple is None and depth == 0 and not continued and current is not None:
            result.append(_Logical(current[0], i, current[1], lines[current[0]].strip()))
            current = None
    if current is not None:
        result.append(_Logical(current[0], stop - 1, current[1], lines[current[0]].strip()))
    return result, triple is not None


def _find_close(line: str, quote: str, pos: int) -> int:
    """The offset just after the closing `quote` in `line` from `pos`, or -1."""
    while True:
        found = line.find(quote, pos)
        if found < 0:
            return -1
        backslashes = len(line[:found]) - len(line[:found].rstrip("\\"))
        if backslashes % 2 == 0:
            return found + 3
        pos = found + 1


def _only_comments(lines: Sequence[str], start: int, stop: int) -> bool:
    return all(lines[i].lstrip().startswith("#") for i in range(start, stop))


def _scan_window(snapshot: Snapshot, cursor: int) -> tuple[int, int]:
    """From the top-level definition at or above the cursor to the one after it: a window to scan."""
    lines = snapshot.index.lines
    start = 0
    for i in range(cursor, -1, -1):
        if lines[i][:1].strip() and _DEFINITION_HEADER.match(lines[i]):
            start = _chunk_start(snapshot, i)
            break
    # When the cursor is on a decorator, the definition it decorates is below it: scan past it.
    in_decorators = lines[_start_at_or_above(snapshot, cursor)].startswith("@")
    stop = len(lines)
    for i in range(cursor + 1, len(lines)):
        line = lines[i]
        if not line[:1].strip():
            continue
        header = _DEFINITION_HEADER.match(line)
        if in_decorators:
            in_decorators = header is None
        elif header or line.startswith("@"):
            stop = i
            break
    return start, stop


def _scan(snapshot: Snapshot, cursor: int) -> Definition | None:
    lines = snapshot.index.lines
    start, stop = (0, len(lines)) if len(lines) <= _WHOLE_SCAN_MAX_LINES else _scan_window(snapshot, cursor)
    logical, in_string = _logical_lines(lines, start, stop)
    if in_string and start > 0:  # the window began inside a string: only the top of the file is safe
        logical, _ = _logical_lines(lines, 0, stop)
    best: Definition | None = None
    # (indent, name, is_class) of the definitions open at each logical line, to name methods.
    stack: list[tuple[int, str, bool]] = []
    for k, header in enumerate(logical):
        while stack and stack[-1][0] >= header.indent:
            stack.pop()
        match = _DEFINITION_HEADER.match(header.head)
        if match is None:
            continue
        last = header.last
        for body in logical[k + 1 :]:
            if body.indent <= header.indent:
                break
            last = body.last
        first = header.first
        j = k
        while j > 0 and logical[j - 1].indent == header.indent and logical[j - 1].head.startswith("@"):
            if not _only_comments(lines, logical[j - 1].last + 1, first):
                break
            j -= 1
            first = logical[j].first
        if first > cursor:
            break
        first = _leading_comments(lines, first)
        is_class = match.group(1) == "class"
        if first <= cursor <= last and (best is None or last - first <= best.last_line - best.first_line):
            kind = "class" if is_class else "method" if stack and stack[-1][2] else "function"
            name = ".".join([*(s[1] for s in stack), match.group(2)])
            best = Definition(first, last, kind, name)
        stack.append((header.indent, match.group(2), is_class))
    return best
