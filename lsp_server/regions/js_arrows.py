"""JavaScript and TypeScript definitions without a block: an arrow function with an expression body
assigned to a name (`const f = (x) => x + 1;`, `name: () => value,`), whose span is its statement.
Looked for around the cursor after the block scan, inside the definition it found."""

from __future__ import annotations

import bisect
import re

from ..languages.headers import blank, collapse, plain_name
from ..languages.js import JS_MEMBER_NAME, TS_RETURN, TS_TYPE
from .cache import Snapshot
from .definition import Definition
from .leading import NOT_A_START, TRAILING_COMMENT, leading_start
from .rules import Language
from .scan import Block, Scan, depth_of

# A line that may start one: `const f = (`, `name: async x =>`, `this.x = <T>(`, `static y = (`.
_JS_ARROW_LINE = re.compile(
    r"[ \t]*(?:(?:export|declare|public|private|protected|static|readonly|override|accessor)\s+)*"
    r"(?:(?:const|let|var)\s+)?(?:#?[\w$]+(?:\s*\.\s*#?[\w$]+|\[[^\]\n]*\])*|'[^'\n]*'|\"[^\"\n]*\"|\[[^\]\n]*\])"
    r"\s*[!?]?\s*"
    r"(?::[^=\n]*)?[:=]\s*(?:async\b\s*)?(?:\(|<|[\w$]+\s*=>)"
)
_JS_ARROW_DEF = re.compile(
    r"[ \t]*(?:"
    r"(?P<var>(?:(?:export|declare)\s+)*(?:const|let|var)\s+(?P<var_n>[\w$]+)\s*!?" + TS_TYPE + r"\s*=)"
    r"|(?P<asg>(?:(?:public|private|protected|static|readonly|override|declare|accessor)\s+)*"
    r"(?P<asg_n>#?[\w$]+(?:\s*\.\s*#?[\w$]+|\s*\[\s*\])*|\[\s*\]|'\s*'|\"\s*\")\s*[?!]?" + TS_TYPE + r"\s*=)"
    r"|(?P<pa>(?P<pa_n>" + JS_MEMBER_NAME + r")\s*:)"
    r")\s*(?:async\s+)?(?:<\s*>\s*)?(?:\(\s*\)|[\w$]+)" + TS_RETURN + r"\s*=>\s*"
)
_JS_EXPRESSION_TOKEN = re.compile(r"[(\[{]|[)\]}]|[;,]|\n")
_JS_CONTINUES_BEFORE = set("=([{,+-*/%&|^!~?:<>.")  # a line ending in one of these goes on
_JS_CONTINUES_AFTER = set(".?:+-*/%&|^=<>([`")  # so does the next line starting with one
_ARROW_LINES_UP = 60  # how far above the cursor an arrow's first line is looked for
_ARROW_LINES_DOWN = 300  # how far below its first line an arrow's end is looked for
_ARROW_CHARS = 20_000  # ... in characters
_ARROW_LINE_CHARS = 1_000  # lines longer than this (minified code) are not looked at


def js_arrow(
    snapshot: Snapshot, cursor: int, language: Language, found: Definition | None, scan: Scan | None
) -> Definition | None:
    """An arrow function with an expression body (`const f = (x) => x + 1;`, `name: () => value,`)
    whose span holds the cursor and lies inside `found` (the brace scan's answer), if any."""
    text = snapshot.text
    index = snapshot.index
    lines, offsets = index.lines, index.offsets
    if len(lines[cursor]) > _ARROW_LINE_CHARS:
        return None  # minified code: the line is all one can tell apart
    floor = max(found.first_line if found is not None else 0, cursor - _ARROW_LINES_UP)
    starts = [
        (line, offsets[line])
        for line in range(cursor, floor - 1, -1)
        if len(lines[line]) <= _ARROW_LINE_CHARS and _JS_ARROW_LINE.match(lines[line])
    ]
    # On a comment line, the arrow the comment documents may start below.
    below = cursor
    while below + 1 < len(lines) and language.comment.match(lines[below].strip()):
        below += 1
    if below != cursor and _JS_ARROW_LINE.match(lines[below]):
        starts.insert(0, (below, offsets[below]))
    # Members of an object literal written on the cursor's line: `{ get: () => x, set: (v) => f(v) }`.
    if "=>" in lines[cursor]:
        masked = language.lexer.mask.sub(blank, lines[cursor])
        inline = [(cursor, offsets[cursor] + m.end()) for m in _JS_INLINE_MEMBER.finditer(masked)]
        starts[:0] = inline[::-1]
    for line, at in starts:
        span = _js_arrow_span(text, offsets, lines, line, at, language, scan)
        if span is None:
            continue
        first, last, name = span
        if not first <= cursor <= last:
            continue
        if found is not None and not (found.first_line <= first and last <= found.last_line):
            continue
        if found is not None and (first, last) == (found.first_line, found.last_line):
            continue
        if scan is not None and scan.found is not None and at < scan.found.at:
            continue  # in the header of the definition found (`callback: () => void` among parameters)
        return Definition(first, last, "function", name)
    return None


_JS_INLINE_MEMBER = re.compile(r"[{,][ \t]*(?=[\w$'\"\[][^\n]*?=>)")


def _js_arrow_span(
    text: str, offsets: list[int], lines: list[str], line: int, start: int, language: Language, scan: Scan | None
) -> tuple[int, int, str | None] | None:
    """(first line, last line, name) of the arrow definition starting at offset `start` on `line`."""
    end = min(offsets[min(line + _ARROW_LINES_DOWN, len(lines))], start + _ARROW_CHARS)
    masked = language.lexer.mask.sub(blank, text[start:end])
    arrow = masked.find("=>", 0, 4000)
    head = _JS_ARROW_DEF.match(collapse(masked[: arrow + 2])) if arrow >= 0 else None
    if head is None or masked[head.end() : head.end() + 1] == "{":
        return None
    group = head.lastgroup
    inline = start != offsets[line]
    if group == "pa":
        in_object = _js_in_object(scan, start)
        if in_object is None:
            in_object = inline or _js_member_line(lines, line)
        if not in_object:
            return None
    elif inline:
        return None
    # The body runs to the `;`, `,` or closing bracket at its own depth, or to a line break where
    # the expression cannot go on (no `;` style).
    depth = 0
    stop = -1
    for m in _JS_EXPRESSION_TOKEN.finditer(masked, head.end()):
        token = m.group()
        if token in "([{":
            depth += 1
        elif token in ")]}":
            if depth == 0:
                if group != "pa" and token == ")":
                    return None  # an arrow closed by `)`: an argument, no definition
                stop = _last_code(masked, m.start())
                break
            depth -= 1
        elif depth:
            continue
        elif token == ";":
            if group == "pa":
                return None  # `name: (x) => void;`: a type's member
            stop = m.start()
            break
        elif token == ",":
            if group != "pa":
                return None  # `const a = () => 1, b = 2`: not one declaration
            stop = _last_code(masked, m.start())
            break
        else:
            before = _last_code(masked, m.start())
            if before < head.end():
                continue  # the body starts on a later line
            after = _next_code(masked, m.end())
            if after < len(masked) and masked[after] == ";":
                stop = after  # the `;` that ends it, written after a comment
                break
            if masked[before] in _JS_CONTINUES_BEFORE or (after < len(masked) and masked[after] in _JS_CONTINUES_AFTER):
                continue
            if group == "pa" and after < len(masked) and masked[after] not in ",}":
                return None
            stop = before
            break
    if stop < head.end():
        return None
    last = bisect.bisect_right(offsets, start + stop) - 1
    name = head.group("var_n") or head.group("asg_n") or plain_name(head.group("pa_n") or "")
    return (line if inline else leading_start(lines, line, language)), last, name


def _js_in_object(scan: Scan | None, offset: int) -> bool | None:
    """Whether `offset` lies directly in an object literal's braces (not in a class or interface body,
    not inside parentheses or brackets there); None when the scan did not see the braces around it."""
    if scan is None:
        return None
    holder: Block | None = None
    for block in scan.around:
        holds = block.at < offset and (block.end < 0 or block.end >= offset)
        if holds and (holder is None or depth_of(block) > depth_of(holder)):
            holder = block
    if holder is None:
        return None
    header = scan.header(holder)
    if header.kind is not None or header.inner != "class":
        return False
    between = scan.language.lexer.mask.sub(blank, scan.text[holder.at + 1 : offset])
    return between.count("(") == between.count(")") and between.count("[") == between.count("]")


def _js_member_line(lines: list[str], line: int) -> bool:
    """Whether the previous code line leaves an object literal open for a member: ends in `{` or `,`."""
    for k in range(line - 1, max(line - 12, -1), -1):
        content = TRAILING_COMMENT.sub("", lines[k].strip()).rstrip()
        if content and not NOT_A_START.match(content) and not content.endswith("*/"):
            return content.endswith(("{", ","))
    return False


def _last_code(s: str, i: int) -> int:
    """The last non-blank character before i (-1 when none)."""
    i -= 1
    while i >= 0 and s[i] in " \t\r\n":
        i -= 1
    return i


def _next_code(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i
