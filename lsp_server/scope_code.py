"""Scope for code that is not Python: the definition (function, method, class, ...) around the cursor.

`code_family(language)` names the family of a languageId; `find_code_definition(text, line, family)`
answers the innermost definition whose span holds the line. The span (`Definition`) runs from the
definition's leading block (decorators, annotations, attributes and the comments written directly
above it) to the line of its closing `}` or `end`.

How, in four steps, each kept near the cursor because code actions ask on every cursor move:

1. Where to start reading. Reading a 20,000-line file from the top for every request is too slow,
   so the scan starts at a line above the cursor that is indented no deeper than anything between
   it and the cursor and that may begin a definition (found by a compiled pattern, not line by line).
   Whatever starts there (or below it) is seen whole; if the innermost definition around the cursor
   started further up, the scan finds none, and the next such line further out (less indented) is
   tried, down to column 0. When even that finds nothing, a last scan from the top of the file
   settles it (unless the line tried at column 0 surely began a declaration, or the file is huge:
   then only blocks whose content is not indented, C++ or TypeScript namespaces, are tried).
2. Blocks. A compiled pattern per family consumes strings, comments (and JS template literals,
   regex literals, Rust raw strings, Go raw strings, Lua long brackets, Ruby heredocs...) at C speed
   and stops only at what nests: braces, or for Ruby and Lua the keywords that open and close
   blocks. The scan keeps the stack of open blocks, so it knows which blocks are open at the end of
   the cursor's line, which closed on it, and (reading on) which block's header the line belongs to.
3. Which blocks are definitions. Only those few blocks are classified, by the text before their
   `{` (the header): strings and comments blanked, bracket groups emptied, then one pattern per
   family anchored at the `{`. The class/object/code context of the parent block decides between
   `name(args) {` as a method (in a class) and as a call or macro (in a function body).
4. The span. The header start, moved up over the comment and decorator lines directly above it, to
   the line of the closing brace. A buffer in the middle of an edit (a `{` not yet closed) is
   resynchronised at the next line that starts at column 0 with a definition keyword.

Two kinds of definitions have no block: a JS arrow function with an expression body assigned to a
name (`const f = (x) => x + 1;`, `name: () => value,`), whose span is its statement, and Ruby's
endless `def f = expression`, one line. They are looked for around the cursor after the blocks.

What cannot be known without parsing from the top: a line inside a multi-line string or template
that looks like code (a shell function in a JS template, Go source in a test's raw string) may be
taken as a place to start reading when the cursor is on or right below it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

from .definition import Definition
from .text import line_index

# -- families ---------------------------------------------------------------------------------------

_FAMILY_OF_LANGUAGE = {
    "javascript": "js",
    "javascriptreact": "js",
    "typescript": "js",
    "typescriptreact": "js",
    "js": "js",
    "jsx": "js",
    "ts": "js",
    "tsx": "js",
    "go": "go",
    "rust": "rust",
    "c": "c",
    "cpp": "c",
    "c++": "c",
    "objective-c": "c",
    "objective-cpp": "c",
    "cuda-cpp": "c",
    "java": "java",
    "kotlin": "java",
    "scala": "java",
    "groovy": "java",
    "dart": "java",
    "csharp": "csharp",
    "c#": "csharp",
    "swift": "swift",
    "php": "php",
    "ruby": "ruby",
    "lua": "lua",
}


def code_family(language: str) -> str | None:
    """The family `find_code_definition` reads a languageId (or `prompt.language_of` name) with.

    Brace families differ by their strings and comments: "js" (JavaScript, TypeScript, JSX/TSX),
    "go", "rust", "c" (C, C++, Objective-C), "java" (Java, Kotlin, Scala, Groovy, Dart), "csharp",
    "swift", "php"; "ruby" and "lua" close their blocks with `end`. None for the languages this module
    does not read (Python, plain text, YAML, markdown...): the caller falls back on indentation.
    """
    return _FAMILY_OF_LANGUAGE.get(language.lower())


def find_code_definition(text: str, cursor_line: int, family: str) -> Definition | None:
    """The innermost definition whose span holds `cursor_line` (0-based), or None when the cursor is in
    no definition (or `family` is unknown). "braces" is accepted too, read as C-like code."""
    dialect = _DIALECTS.get(family)
    index = line_index(text)
    if dialect is None or not 0 <= cursor_line < len(index.lines):
        return None
    last = _last.entry
    if last[0] is text and last[1] == family and last[2] == cursor_line:
        return last[3]
    found = _find(text, cursor_line, dialect)
    _last.entry = (text, family, cursor_line, found)  # one reference swapped whole
    return found


class _Last:
    """The last answer, keyed on the text object, the family and the line: code actions and the
    refactor they start ask for the same cursor on the same unchanged buffer (pygls hands both the same
    `str`). Why it never needs resetting: like `text.line_index`, the entry holds its string, so that
    string's id cannot be reused while it is cached, and any other string gets an answer of its own."""

    __slots__ = ("entry",)

    def __init__(self) -> None:
        self.entry: tuple[str | None, str, int, Definition | None] = (None, "", -1, None)


_last = _Last()

# -- lexing -----------------------------------------------------------------------------------------

_OPEN, _CLOSE, _RESYNC = 0, 1, 2
_Event = tuple[int, int, str]  # (offset, _OPEN | _CLOSE | _RESYNC, the opening keyword for end-languages)

# Pieces shared by the brace families' patterns. Each consumes one string or comment whole.
_DQ = r'"(?:[^"\\\n]++|\\[\s\S])*+"?'  # an unterminated string ends at its line's end
_SQ = r"'(?:[^'\\\n]++|\\[\s\S])*+'?"
_DQ_MULTI = r'"(?:[^"\\]++|\\[\s\S])*+"?'  # Rust, PHP, Ruby: strings may span lines
_SQ_MULTI = r"'(?:[^'\\]++|\\[\s\S])*+'?"
_LINE_COMMENT = r"//[^\n]*+"
_BLOCK_COMMENT = r"/\*[\s\S]*?(?:\*/|\Z)"
_TRIPLE = r'"""[\s\S]*?(?:"""|\Z)'
_TRIPLE_SQ = r"'''[\s\S]*?(?:'''|\Z)"
_CHAR = r"'(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|[^\n]))'"  # Rust: 'a' and '\n', not 'a lifetimes
# A JS regex literal: a `/` where an operand is expected. Which is unknowable without parsing; the
# usual tell is the character before it (one space allowed) or a keyword that takes an operand.
# The `/` comes first, then what precedes it is checked (lookbehinds that end with it): an
# alternative that starts with a literal keeps the regex engine's first-character prefilter.
_LINE_START = [r"\n", *(rf"\n {{{n}}}" for n in range(1, 17)), *(rf"\n\t{{{n}}}" for n in range(1, 7))]
_REGEX_BEFORE = [r"[(,=:\[!&|?;{}]", r"[(,=:\[!&|?;{}] ", r"\breturn ", r"\btypeof ", r"\bcase ", *_LINE_START]
_JS_REGEX = (
    r"/(?:" + "|".join(f"(?<={before}/)" for before in _REGEX_BEFORE) + r")"
    r"(?![*/])(?:[^/\\\[\n]++|\\.|\[(?:[^\]\\\n]++|\\.)*+\])++/[a-z]*+"
)
_JS_TEMPLATE = r"`(?:[^`\\$]++|\\[\s\S]|\$(?!\{))*+`"  # a template without `${`: skipped whole
_TEMPLATE_HEAD = r"`(?:[^`\\$]++|\\[\s\S]|\$(?!\{))*+\$\{"
_TEMPLATE_REST = re.compile(r"(?:[^`\\$]++|\\[\s\S]|\$(?!\{))*+(`|\$\{)?")

# Lines at column 0 where a brace family resynchronises when the stack says it is still nested.
_RESYNC_JS = (
    r"(?:export|function|class|interface|enum|namespace|declare|async\s+function|abstract\s+class"
    r"|(?:const|let|var)\s+[\w$]+\s*=\s*(?:async\s*)?(?:function\b|\([^)\n]*\)\s*=>|[\w$]+\s*=>))\b"
)
_RESYNC_LINES = {
    "js": _RESYNC_JS,
    "go": r"(?:func|type|var|const|import)\b",
    "rust": r"(?:pub|fn|impl|trait|struct|enum|mod|unsafe|async|const|static|use|extern|macro_rules!|#\[)",
    "c": r"(?:static|extern|inline|void|int|unsigned|char|bool|struct|class|namespace|template|typedef|enum|union)\b",
    "java": r"(?:public|private|protected|class|interface|enum|record|abstract|final|fun|object|data|sealed)\b",
    "csharp": r"(?:public|private|protected|internal|namespace|class|struct|interface|enum|record|sealed)\b",
    "swift": r"(?:public|private|internal|open|func|class|struct|enum|protocol|extension|final)\b",
    "php": r"(?:function|class|interface|trait|abstract|final|namespace)\b",
    "braces": r"(?!)",
}


def _brace_pattern(specials: str, skips: list[str], resync: str, template: bool) -> re.Pattern[str]:
    """Everything up to the next brace (or template head, or resync line), strings and comments
    consumed whole: one match per structural token, so the Python loop sees only those."""
    plain = f"[^{specials}{{}}\\n]++"
    lone = specials.replace("`", "") if template else specials  # a template head is a token
    skip = "|".join([plain, *skips, f"[{lone}]", rf"\n(?!{resync})"])
    tokens = [r"(?P<open>\{)", r"(?P<close>\})", rf"(?P<resync>\n)(?={resync})", r"(?P<eof>\Z)"]
    if template:
        tokens += [rf"(?P<tpl>{_TEMPLATE_HEAD})", r"(?P<tick>`)"]
    return re.compile(rf"(?>{skip})*+(?:{'|'.join(tokens)})")


def _mask_pattern(skips: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(skips))


@dataclass(frozen=True)
class _Lexer:
    token: re.Pattern[str]  # one structural token per match, see _brace_pattern
    mask: re.Pattern[str]  # one string or comment per match: blanked in headers


def _brace_lexer(family: str, specials: str, skips: list[str], template: bool = False) -> _Lexer:
    # Blanking a header wants whole templates, `${...}` included (nested templates aside).
    masks = [_JS_ANY_TEMPLATE if skip == _JS_TEMPLATE else skip for skip in skips]
    return _Lexer(_brace_pattern(specials, skips, _RESYNC_LINES[family], template), _mask_pattern(masks))


_JS_ANY_TEMPLATE = r"`(?:[^`\\]++|\\[\s\S])*+`?"
_JS_SKIPS = [_DQ, _SQ, _JS_TEMPLATE, _LINE_COMMENT, _BLOCK_COMMENT, _JS_REGEX]
_C_LIKE_SKIPS = [_DQ, _SQ, _LINE_COMMENT, _BLOCK_COMMENT]
_LEXERS = {
    "js": _brace_lexer("js", "\"'`/", _JS_SKIPS, template=True),
    "go": _brace_lexer("go", "\"'`/", [_DQ, _SQ, r"`[^`]*+`?", _LINE_COMMENT, _BLOCK_COMMENT]),
    "rust": _brace_lexer(
        "rust",
        "\"'/#",
        [r'(?<=r)(?P<hashes>#++)"[\s\S]*?"(?P=hashes)', _DQ_MULTI, _CHAR, _LINE_COMMENT, _BLOCK_COMMENT],
    ),
    "c": _brace_lexer(
        "c",
        "\"'/#",
        [
            r'(?<=R)"(?P<delim>[^(\s"]{0,16})\([\s\S]*?\)(?P=delim)"',
            _DQ,
            _SQ,
            _LINE_COMMENT,
            _BLOCK_COMMENT,
            r"(?<![^\n])[ \t]*#(?:[^\n\\]++|\\[\s\S])*+",  # preprocessor lines, continuations included
        ],
    ),
    "java": _brace_lexer("java", "\"'/", [_TRIPLE, _TRIPLE_SQ, _DQ, _SQ, _LINE_COMMENT, _BLOCK_COMMENT]),
    "csharp": _brace_lexer(
        "csharp",
        "\"'/#",
        [
            _TRIPLE,
            r'(?<=@)"(?:[^"]++|"")*+"?',
            r'(?<=@\$)"(?:[^"]++|"")*+"?',
            _DQ,
            _SQ,
            _LINE_COMMENT,
            _BLOCK_COMMENT,
            r"(?<![^\n])[ \t]*#[^\n]*+",  # #region, #if...
        ],
    ),
    "swift": _brace_lexer("swift", "\"'/", [_TRIPLE, _DQ, _LINE_COMMENT, _BLOCK_COMMENT]),
    "php": _brace_lexer(
        "php",
        "\"'/#<",
        [
            r"<<<[ \t]*(?P<hq>['\"]?)(?P<hid>\w+)(?P=hq)[^\n]*\n[\s\S]*?\n[ \t]*(?P=hid)\b",
            _DQ_MULTI,
            _SQ_MULTI,
            _LINE_COMMENT,
            _BLOCK_COMMENT,
            r"#(?!\[)[^\n]*+",
        ],
    ),
    "braces": _brace_lexer("braces", "\"'/", _C_LIKE_SKIPS),
}


def _brace_events(text: str, pos: int, lexer: _Lexer) -> Iterator[_Event]:
    """_Block braces from `pos` on. A `}` that ends a template's `${` is no block: the template's text
    resumes after it (tracked by the brace depth at which each `${` opened)."""
    substitutions: list[int] = []
    depth = 0
    finditer = lexer.token.finditer
    while True:
        resume = -1
        for m in finditer(text, pos):
            kind = m.lastgroup
            if kind == "open":
                depth += 1
                yield m.end() - 1, _OPEN, ""
            elif kind == "close":
                if substitutions and substitutions[-1] == depth:
                    substitutions.pop()
                    resume = m.end()
                    break
                depth -= 1
                yield m.end() - 1, _CLOSE, ""
            elif kind == "resync":
                yield m.start("resync"), _RESYNC, ""
            elif kind == "tpl":
                substitutions.append(depth)
            else:  # the end, or a backtick that opens no complete template (unterminated: to the end)
                return
        else:
            return
        # Back in a template's text after its `${ ... }`: to its end, or into the next `${`.
        rest = _TEMPLATE_REST.match(text, resume)
        assert rest is not None  # the pattern matches the empty string
        if rest.group(1) == "${":
            substitutions.append(depth)
        pos = rest.end()


# Ruby: `if`/`unless`/`while`/`until`/`case`/`for` open a block only where a statement starts
# (`x = 1 if y` is a modifier); `do` opens anywhere, except the `do` of `while x do`.
_RUBY_WORDS = r"def|class|module|if|unless|while|until|case|begin|for|do|end"
_RUBY_KEYWORD = rf"(?<![\w.:$@])(?:{_RUBY_WORDS})(?![\w?!]|:[^:])"
_RUBY_TOKEN = re.compile(
    r"(?>"
    r"[^\w\"'`#/%<\n{}:.$@?]++"
    rf"|(?!(?:{_RUBY_WORDS})\b)[A-Za-z_]\w*+[?!]?"
    r"|\d\w*+"
    r"|\.\s*+[A-Za-z_]\w*+[?!=]?"  # a method call: `x.class`, `y.end`
    r"|::?[A-Za-z_]\w*+[?!=]?"  # a constant path or a symbol: `Foo::Bar`, `:end`
    r"|[@$]++\w*+"
    r'|"(?:[^"\\#]++|\\[\s\S]|#\{[^}]*+\}|#)*+"?'
    r"|'(?:[^'\\]++|\\[\s\S])*+'?"
    r"|`(?:[^`\\]++|\\[\s\S])*+`?"
    r"|(?<![^\n])=begin\b[\s\S]*?(?:\n=end\b[^\n]*+|\Z)"
    r"|#[^\n]*+"
    r"|<<[~-]?(?P<hq>['\"`]?)(?P<hid>[A-Za-z_]\w*)(?P=hq)[^\n]*+\n[\s\S]*?(?:^[ \t]*(?P=hid)[ \t]*\r?$|\Z)"
    r"|%[qQwWiIrsx]?(?:\((?:[^()\\]++|\\.)*+\)|\[(?:[^\[\]\\]++|\\.)*+\]|\{(?:[^{}\\]++|\\.)*+\}"
    r"|<(?:[^<>\\]++|\\.)*+>|(?P<pd>[^\w\s])(?:(?!(?P=pd))[^\\]|\\.)*+(?P=pd))"
    r"|(?:(?<=[(,=~!&|?;{}])|(?<=[(,=~!&|?;{}] )|(?<=\bwhen )|(?<=\bif )|(?<=\bunless ))"
    r"/(?![\s/])(?:[^/\\\n]++|\\.)*+/[a-z]*+"
    r"|\?(?:\\.|[^\s\\])(?!\w)"  # a character literal: ?a
    r"|[\"'`#/%<:.$@?]"
    rf"|(?!{_RUBY_KEYWORD})\w"  # a keyword that is none (`end?`, `x.class`) is consumed like a name
    r"|\n(?!(?:def|class|module)\b)"
    r")*+"
    rf"(?:(?P<word>{_RUBY_KEYWORD})|(?P<open>\{{)|(?P<close>\}})"
    r"|(?P<resync>\n)(?=(?:def|class|module)\b)|(?P<eof>\Z))",
    re.M,
)
_RUBY_ENDLESS_LINE = re.compile(
    r"[ \t]*(?:(?:private|protected|public|module_function)\s+)?def\s+(?:self\s*\.\s*)?([\w?!]+)\s*"
    r"(?:\([^()\n]*\))?\s*=(?![=~>])"
)
_RUBY_ENDLESS_DEF = re.compile(r"def\s+(?:self\s*\.\s*)?[\w?!]+\s*(?:\([^()\n]*\))?\s*=(?![=~>])")
_RUBY_MODIFIER_AFTER = re.compile(r"[\w)\]}\"'`?!]\Z")  # code before a word that makes it a modifier
_RUBY_OPENER_AFTER = re.compile(r"(?:\b(?:then|do|else|begin|and|or|not)|[=(\[,|&!;{?:+\-*/<>~%^])\Z")


def _ruby_events(text: str, pos: int, lexer: _Lexer) -> Iterator[_Event]:
    loop_do_until = -1  # the `do` of `while x do` before this offset belongs to the loop
    for m in lexer.token.finditer(text, pos):
        kind = m.lastgroup
        if kind == "word":
            word = m.group("word")
            at = m.start("word")
            if word == "end":
                yield at, _CLOSE, ""
            elif word == "do":
                if at >= loop_do_until:
                    yield at, _OPEN, "do"
            elif word in ("def", "class", "module"):
                if word == "def" and _RUBY_ENDLESS_DEF.match(text, at):
                    continue
                yield at, _OPEN, word
            elif word == "begin" or _ruby_statement_start(text, at):
                if word in ("while", "until", "for"):
                    loop_do_until = text.find("\n", at)
                    loop_do_until = len(text) if loop_do_until < 0 else loop_do_until
                yield at, _OPEN, word
        elif kind == "open":
            yield m.end() - 1, _OPEN, "{"
        elif kind == "close":
            yield m.end() - 1, _CLOSE, ""
        elif kind == "resync":
            yield m.start("resync"), _RESYNC, ""
        else:
            return


def _ruby_statement_start(text: str, at: int) -> bool:
    """Whether the keyword at `at` starts a statement (or an expression: `x = if y`), or is a modifier."""
    line_start = text.rfind("\n", 0, at) + 1
    before = text[max(line_start, at - 80) : at].rstrip()
    if not before:
        return True
    if before[-1] in "?!" and before[-2:-1].isalnum():
        return False  # `x.valid? if y`: the end of a method's name, then a modifier
    if _RUBY_OPENER_AFTER.search(before):
        return True
    return not _RUBY_MODIFIER_AFTER.search(before)


_LUA_WORDS = r"function|if|do|repeat|end|until"
_LUA_TOKEN = re.compile(
    r"(?>"
    r"[^\w\"'\-\[{}\n.:]++"
    rf"|(?!(?:{_LUA_WORDS})\b)[A-Za-z_]\w*+"
    r"|\d\w*+|[.:]"
    r"|--\[(?P<ceq>=*+)\[[\s\S]*?(?:\](?P=ceq)\]|\Z)"
    r"|--[^\n]*+"
    r"|\[(?P<seq>=*+)\[[\s\S]*?(?:\](?P=seq)\]|\Z)"
    r'|"(?:[^"\\\n]++|\\[\s\S])*+"?'
    r"|'(?:[^'\\\n]++|\\[\s\S])*+'?"
    r"|[\-\[]"
    r"|\n(?!(?:local\s+)?function\b)"
    r")*+"
    rf"(?:(?P<word>{_LUA_WORDS})\b|(?P<open>\{{)|(?P<close>\}})|(?P<resync>\n)(?=(?:local\s+)?function\b)"
    r"|(?P<eof>\Z))"
)


def _lua_events(text: str, pos: int, lexer: _Lexer) -> Iterator[_Event]:
    for m in lexer.token.finditer(text, pos):
        kind = m.lastgroup
        if kind == "word":
            word = m.group("word")
            if word in ("end", "until"):
                yield m.start("word"), _CLOSE, ""
            else:
                yield m.start("word"), _OPEN, word
        elif kind == "open":
            yield m.end() - 1, _OPEN, "{"
        elif kind == "close":
            yield m.end() - 1, _CLOSE, ""
        elif kind == "resync":
            yield m.start("resync"), _RESYNC, ""
        else:
            return


# -- headers ----------------------------------------------------------------------------------------

_NOT_NEWLINE = re.compile(r"[^\r\n]")


def _blank(m: re.Match[str]) -> str:
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


def _collapse(masked: str) -> str:
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


def _statement_start(s: str) -> tuple[int, int]:
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


class _Header(NamedTuple):
    kind: str | None  # None: a block that is no definition
    name: str | None
    start: int  # offset where the definition starts (else the innermost statement holding the block)
    inner: str  # what the block's body holds: "class" (members), "code", "top" (declarations)
    statement: int  # offset where the outermost statement holding the block starts


# Control keywords of the C-like families: `if (x) {` is no method named `if`.
_KEYWORDS_NOT_NAMES = (
    "if|for|while|switch|catch|return|else|do|try|finally|new|throw|foreach|using|lock|fixed|synchronized"
    "|when|match|sizeof|typeof|elseif|guard|defer|repeat|unless|until|checked|unchecked|goto|await|yield"
    "|function|fun|func|def|in|of|is|as|case|delete|with"
)
_JS_KEYWORD = re.compile(
    "if|for|while|switch|catch|with|function|return|typeof|else|do|try|finally|new|await|yield|import|void"
    "|delete|in|of|instanceof|case|throw|class|const|let|var|super"
)

# -- JavaScript and TypeScript ----------------------------------------------------------------------

# An optional `: Type` (groups emptied). Possessive: a type holds no bare `=`, so it ends at the `=`
# of an initializer or the `{` of a body, and the search never backtracks into it.
_TS_TYPE = r"(?:\s*:(?:=>|[^;{}()=\n]++|\n(?=\s*[|&.,<>?])|\(\s*\)|\{\s*\})*+)?"
_TS_RETURN = r"(?:\s*:(?:[^;{}()=\n]++|\n(?=\s*[|&.,<>?])|\(\s*\)|\{\s*\})*+)?"  # before an arrow's `=>`
_JS_FUNCTION_VALUE = (
    r"(?:async\s+)?(?:function\b\s*\*?\s*[\w$]*\s*(?:<\s*>\s*)?\(\s*\)"
    + _TS_TYPE
    + r"|(?:(?:<\s*>\s*)?(?:\(\s*\)|[\w$]+)"
    + _TS_RETURN
    + r"\s*=>\s*(?:async\s+)?)+)"
)
_JS_DECORATORS = r"(?:@[\w$.]+(?:\s*\(\s*\))?\s*)*"
_JS_MEMBER_NAME = r"(?:#?[\w$]+|'\s*'|\"\s*\"|\[\s*\]|\d+)"
_JS_DEFINITION = re.compile(
    r"(?<![\w$.#@])(?=\S)(?:"
    r"(?P<cls>" + _JS_DECORATORS + r"(?:(?:export|default|declare|abstract)\s+)*class\b(?:\s+(?P<cls_n>[\w$]+))?"
    r"[^;{}=]*+)"
    r"|(?P<ifc>(?:(?:export|default|declare)\s+)*interface\s+(?P<ifc_n>[\w$]+)[^;{}=]*+)"
    r"|(?P<enm>(?:(?:export|declare|const)\s+)*enum\s+(?P<enm_n>[\w$]+)\s*)"
    r"|(?P<nsp>(?:(?:export|declare)\s+)*(?:namespace|module)\s+(?P<nsp_n>[\w$.]+|'\s*'|\"\s*\")\s*"
    r"|(?:declare\s+)?global\s*)"
    r"|(?P<fun>(?:(?:export|default|declare|async)\s+)*function\b\s*\*?\s*(?P<fun_n>[\w$]+)?\s*(?:<\s*>\s*)?"
    r"\(\s*\)" + _TS_TYPE + r")"
    r"|(?P<var>(?:(?:export|declare)\s+)*(?:const|let|var)\s+(?P<var_n>[\w$]+)\s*!?" + _TS_TYPE + r"\s*=\s*"
    r"(?:" + _JS_FUNCTION_VALUE + r"|(?P<var_c>class\b[^;{}=]*+)))"
    r"|(?P<asg>" + _JS_DECORATORS + r"(?:(?:public|private|protected|static|readonly|override|declare|accessor)\s+)*"
    r"(?P<asg_n>#?[\w$]+(?:\s*\.\s*#?[\w$]+|\s*\[\s*\])*|\[\s*\]|'\s*'|\"\s*\")\s*[?!]?"
    + _TS_TYPE
    + r"\s*=\s*"
    + _JS_FUNCTION_VALUE
    + r")"
    r"|(?P<pa>(?P<pa_n>" + _JS_MEMBER_NAME + r")\s*:\s*" + _JS_FUNCTION_VALUE + r")"
    r"|(?P<mth>" + _JS_DECORATORS + r"(?:(?:public|private|protected|static|readonly|override|abstract|async"
    r"|declare|accessor|get|set)\s+)*\*?\s*(?!function\b)(?P<mth_n>" + _JS_MEMBER_NAME + r")"
    r"\s*[?!]?\s*(?:<\s*>\s*)?\(\s*\)" + _TS_TYPE + r")"
    r")\s*\Z"
)
_JS_MEMBER_MODIFIER = re.compile(r"@|(?:public|private|protected|static|readonly|override|declare|accessor)\s")
_JS_OPERAND_BEFORE = set("(,=:?!&|+-*%<~^[")  # not `/` (a regex's end) nor `>` (a type's)
_JS_OPERAND_WORD = re.compile(
    r"\b(?:return|typeof|void|new|await|yield|in|of|instanceof|case|delete|throw|extends|else)\s*\Z"
)


def _js_statement_at(s: str, at: int) -> bool:
    """Whether a statement (a declaration) may start at `at` in the collapsed header `s`: not an
    operand of an expression (`foo(function bar() {`, `x = class {`, `return function () {`)."""
    j = at - 1
    while j >= 0 and s[j] in " \t\r\n":
        j -= 1
    if j < 0 or s[j] in ";{}":
        return True
    if s[j] in _JS_OPERAND_BEFORE or s[j - 1 : j + 1] == "=>" or _JS_OPERAND_WORD.search(s, max(0, j - 12), j + 1):
        return False
    return "\n" in s[j:at]  # after an identifier or `)`: a new statement only on a new line (no `;` style)


def _js_member_at(s: str, at: int) -> bool:
    """Whether an object literal's member may start at `at`: first in its braces, or after a comma."""
    j = at - 1
    while j >= 0 and s[j] in " \t\r\n":
        j -= 1
    return j < 0 or s[j] in "{,"


def _js_classify(s: str, st: int, ctx: str) -> tuple[str | None, str | None, int, str]:
    m = _JS_DEFINITION.search(s, st)
    if m is not None:
        group = m.lastgroup
        at = m.start()
        if group in ("cls", "fun", "var", "asg"):
            declared = _js_statement_at(s, at)
        elif group == "pa":
            declared = ctx != "code" and _js_member_at(s, at)
        else:  # `if (x) {` is a method named `if` only in a class or object body
            declared = group != "mth" or ctx == "class" or not _JS_KEYWORD.fullmatch(m.group("mth_n"))
        if not declared:
            m = None
    if m is None:
        return None, None, st, _js_body(s, st, ctx)
    group = m.lastgroup
    if group == "cls":
        return "class", m.group("cls_n"), at, "class"
    if group == "ifc":
        return "interface", m.group("ifc_n"), at, "class"
    if group == "enm":
        return "enum", m.group("enm_n"), at, "class"
    if group == "nsp":
        return "namespace", m.group("nsp_n"), at, "top"
    if group == "fun":
        return "function", m.group("fun_n"), at, "code"
    if group == "var":
        if m.group("var_c") is not None:
            return "class", m.group("var_n"), at, "class"
        return "function", m.group("var_n"), at, "code"
    if group == "asg":
        name = re.sub(r"\s+", "", m.group("asg_n"))
        member = ctx == "class" or _JS_MEMBER_MODIFIER.match(s, at) is not None or name.startswith("#")
        return ("method" if member else "function"), name, at, "code"
    if group == "pa":
        return "method", _plain_name(m.group("pa_n")), at, "code"
    return "method", _plain_name(m.group("mth_n")), at, "code"


def _plain_name(name: str) -> str | None:
    name = name.strip()
    return name if name and name[0] not in "'\"`[" else None


_JS_CASE_OR_LABEL = re.compile(r"\s*(?:case\b|default\s*:|[\w$]+\s*:\s*\Z)")


def _js_body(s: str, st: int, ctx: str) -> str:
    """What a block that is no definition holds: an object literal's members, or code."""
    tail = s.rstrip()
    if tail.endswith(":") and ctx != "class" and _JS_CASE_OR_LABEL.match(s, st):
        return "code"  # `case 1: {`, `default: {`, `outer: {`
    if tail and ((tail[-1] in "=(,:[?|&" and not tail.endswith("=>")) or tail.endswith(("return", "default"))):
        return "class"
    if _JS_CLASS_EXPRESSION.search(s, st):
        return "class"  # `module.exports = class Name extends Base {`: no definition, but members inside
    return "code"


_JS_CLASS_EXPRESSION = re.compile(r"(?<![\w$.])class\b(?:\s+[\w$]+)?(?:\s+extends\b[^;{}]*+)?\s*\Z")


# -- Go ---------------------------------------------------------------------------------------------

_GO_DEFINITION = re.compile(
    r"(?<![\w$])(?=\S)(?:"
    # A function, or a method (the receiver's parentheses first); its results on the same line.
    r"(?P<fn>func\b\s*(?:\(\s*\)\s*)?(?!func\b)(?P<fn_n>\w+)\s*(?:\[\s*\]\s*)?\(\s*\)"
    r"(?:[^;{}=\n]++|\{\s*\})*+)"
    r"|(?P<ty>type\s+(?P<ty_n>\w+)\s*(?:\[\s*\]\s*)?(?P<ty_k>struct|interface)\s*)"
    r"|(?P<gty>(?P<gty_n>\w+)\s*(?:\[\s*\]\s*)?(?P<gty_k>struct|interface)\s*)"
    r")\s*\Z"
)
_GO_RECEIVER = re.compile(r"func\s*\(\s*(?:\w+\s+)?\*?\s*(\w+)")
_GO_TYPE_GROUP = re.compile(r"\btype\s*\(")
_GO_TYPE_BODY = re.compile(r"\b(?:struct|interface)\s*\Z")


def _go_classify(
    s: str, st: int, ctx: str, masked: str, wider: Callable[[], str]
) -> tuple[str | None, str | None, int, str]:
    m = _GO_DEFINITION.search(s, st)
    if m is None:
        return None, None, st, "code"
    group = m.lastgroup
    at = m.start()
    if group == "fn" and _GO_TYPE_BODY.search(s):
        return None, None, st, "code"  # `func f() <-chan struct{} {`: the `{` of the result's type
    if group == "fn":
        receiver = _GO_RECEIVER.match(masked, at)
        name = m.group("fn_n")
        if receiver is not None and s[at:].lstrip()[4:].lstrip().startswith("("):
            return "method", f"{receiver.group(1)}.{name}", at, "code"
        return "function", name, at, "code"
    if group == "ty":
        return m.group("ty_k"), m.group("ty_n"), at, "class"
    # `Name struct {` alone on its line: a type of a `type ( ... )` group (a field's anonymous struct
    # is in a struct's body, and `var ( ... )` groups are told by their keyword when in sight).
    opener = s.rfind("(", 0, at)
    grouped = _GO_TYPE_GROUP.search(s, max(0, opener - 40), opener + 1) is not None if opener >= 0 else None
    if grouped is None and ctx != "top":
        # Read from after the previous type's `}`: look back for an unclosed `type (` in the block.
        before = wider()
        group = None
        for group in _GO_TYPE_GROUP.finditer(before):  # noqa: B007 - the last one is wanted
            pass
        grouped = group is not None and before.count("(", group.end()) >= before.count(")", group.end())
    if not grouped and (grouped is False or ctx != "top"):
        return None, None, st, "code"
    return m.group("gty_k"), m.group("gty_n"), at, "class"


# -- Rust -------------------------------------------------------------------------------------------

_RUST_VIS = r"(?:pub(?:\s*\(\s*\))?\s+)?"
_RUST_DEFINITION = re.compile(
    r"(?<![\w$])(?=\S)(?:"
    r"(?P<fn>" + _RUST_VIS + r"(?:(?:default|const|async|unsafe|extern(?:\s*\"\s*\")?)\s+)*fn\s+(?P<fn_n>\w+)"
    r"[^;{}]*+)"
    r"|(?P<impl>(?:unsafe\s+)?impl\b(?P<impl_r>[^;{}]*+))"
    r"|(?P<trait>" + _RUST_VIS + r"(?:(?:unsafe|auto)\s+)*trait\s+(?P<trait_n>\w+)[^;{}]*+)"
    r"|(?P<adt>" + _RUST_VIS + r"(?P<adt_k>struct|enum|union)\s+(?P<adt_n>\w+)[^;{}()]*+)"
    r"|(?P<mod>" + _RUST_VIS + r"mod\s+(?P<mod_n>\w+)\s*)"
    r"|(?P<mac>macro_rules!\s*(?P<mac_n>\w+)\s*)"
    r")\s*\Z"
)
_RUST_IMPL_NAME = re.compile(r"(?:\bfor\s+|^\s*(?:<\s*>)?\s*)(?:dyn\s+)?&?(?:[\w]+::)*(\w+)")


def _rust_classify(s: str, st: int, ctx: str, parent: _Header | None) -> tuple[str | None, str | None, int, str]:
    m = _RUST_DEFINITION.search(s, st)
    if m is None:
        return None, None, st, "code"
    group = m.lastgroup
    at = m.start()
    if group == "fn":
        if parent is not None and parent.kind in ("impl", "trait"):
            return "method", _qualified(parent.name, m.group("fn_n")), at, "code"
        return "function", m.group("fn_n"), at, "code"
    if group == "impl":
        rest = m.group("impl_r")
        names = _RUST_IMPL_NAME.findall(rest)
        return "impl", (names[-1] if names else None), at, "class"
    if group == "trait":
        return "trait", m.group("trait_n"), at, "class"
    if group == "adt":
        return m.group("adt_k"), m.group("adt_n"), at, "class"
    if group == "mod":
        return "module", m.group("mod_n"), at, "top"
    return "macro", m.group("mac_n"), at, "code"


def _qualified(owner: str | None, name: str | None) -> str | None:
    return f"{owner}.{name}" if owner and name else name


# -- C-like: C, C++, Objective-C, Java, Kotlin, Scala, Dart, C#, Swift, PHP ----------------------------


@dataclass(frozen=True)
class _CLike:
    """One C-like family's declarations: its keywords, and whether functions nest in code."""

    pattern: re.Pattern[str]
    local_functions: bool  # functions declared inside function bodies (C# local functions, Kotlin...)


def _c_like(keywords: str, rest: str, modifiers: str, extra: str = "", local_functions: bool = False) -> _CLike:
    attrs = r"(?:(?:@[\w.]+(?:\s*\(\s*\))?|\[\s*\]|#\[\s*\])\s*)*"
    type_token = (
        rf"(?:<\s*>\s*|(?!(?:{_KEYWORDS_NOT_NAMES})\b)"
        r"[\w$]+(?:\s*(?:::|\.)\s*~?[\w$]+)*(?:\s*<\s*>)?(?:\s*\[\s*\])*[?!]?[\s*&^]+)"
    )
    name = (
        r"(?:[\w$]+\s*(?:<\s*>)?\s*(?:::|\.)\s*)*"
        r"(?:operator\s*(?:\(\s*\)|\[\s*\]|[^\s\w(]+|[\w\s]+?)|~?[\w$]+)"
    )
    suffix = (
        r"(?:[^;{}()=:]++|=>|\{\s*\}(?=\s*,)|:(?:[^;{}=]++|\{\s*\})*+|(?<=noexcept)\s*\(\s*\)"
        r"|(?<=throw)\s*\(\s*\))*+"
    )
    pattern = re.compile(
        r"(?<![\w$.:~])(?=\S)(?:"
        rf"(?P<kw>{attrs}(?:(?:{modifiers})\s+)*(?P<kw_k>{keywords})(?![\w$])(?P<kw_r>{rest}+))"
        rf"{extra}"
        rf"|(?P<fn>{attrs}(?:template\s*<\s*>\s*)?(?P<fn_t>{type_token}*?)"
        r"(?P<fn_k>(?:fun|func|def|function)\s+(?:<\s*>\s*)?)?"
        rf"(?!(?:{_KEYWORDS_NOT_NAMES})\b)(?P<fn_n>{name})[?!]?\s*(?:<\s*>\s*)?\(\s*\){suffix}(?:=\s*)?)"
        r")\s*\Z"
    )
    return _CLike(pattern, local_functions)


_JAVA_MODIFIERS = (
    r"public|private|protected|internal|static|final|abstract|sealed|non-sealed|open|override|data|inner|enum"
    r"|annotation|companion|case|implicit|lazy|strictfp|value|inline|expect|actual|fun|base|interface|mixin"
)
_C_LIKES = {
    "c": _c_like(
        r"class|struct|union|enum(?:\s+(?:class|struct))?|namespace",
        r"[^;{}=()]*",
        r"typedef|export|template\s*<\s*>|inline",
        extra=r"|(?P<objc>[-+]\s*\(\s*\)\s*(?P<objc_n>\w+)[^;{}]*+)",  # Objective-C: `- (int)count {`
    ),
    "java": _c_like(
        r"class|interface|enum|record|@interface|object|trait|mixin|extension",
        r"[^;{}=]*",
        _JAVA_MODIFIERS,
        local_functions=True,
    ),
    "csharp": _c_like(
        r"class|struct|interface|enum|record(?:\s+(?:struct|class))?|namespace",
        r"[^;{}=]*",
        r"public|private|protected|internal|static|sealed|abstract|partial|readonly|unsafe|new|file|ref",
        extra=(
            r"|(?P<prop>(?:\[\s*\]\s*)*(?:(?:public|private|protected|internal|static|virtual|override|abstract"
            r"|sealed|new|readonly|required|extern)\s+)*(?!(?:" + _KEYWORDS_NOT_NAMES + r"|get|set|init|add|remove)\b)"
            r"[\w$.]+(?:\s*<\s*>)?(?:\s*\[\s*\])*\??\s+(?P<prop_n>[\w$]+)\s*)"
        ),
        local_functions=True,
    ),
    "swift": _c_like(
        r"class|struct|enum|protocol|extension|actor",
        r"[^;{}=]*",
        r"public|private|fileprivate|internal|open|final|indirect|static",
        extra=(
            r"|(?P<prop>(?:@\w+\s*)*(?:(?:public|private|fileprivate|internal|open|static|class|override|lazy)\s+)*"
            r"(?:var|let)\s+(?P<prop_n>\w+)\s*:[^;{}=\n]*)"
        ),
        local_functions=True,
    ),
    "php": _c_like(
        r"class|interface|trait|enum|namespace",
        r"[^;{}=]*",
        r"abstract|final|readonly",
        local_functions=True,
    ),
}
_C_LIKES["braces"] = _C_LIKES["c"]
_KIND_OF_KEYWORD = {
    "class": "class",
    "struct": "struct",
    "union": "struct",
    "interface": "interface",
    "@interface": "interface",
    "protocol": "interface",
    "enum": "enum",
    "record": "record",
    "namespace": "namespace",
    "object": "object",
    "trait": "trait",
    "mixin": "class",
    "extension": "extension",
    "actor": "class",
}
_CLASS_LIKE = frozenset(("class", "struct", "interface", "enum", "record", "object", "trait", "extension", "impl"))
_C_OPERAND_WORD = re.compile(r"\b(?:new|return|throw|else|case|await|yield|goto|delete|sizeof|in|is|as)\s*\Z")
_FIRST_WORD = re.compile(r"[A-Za-z_$][\w$]*(?:\s*(?:::|\.)\s*[A-Za-z_$][\w$]*)*")


def _c_statement_at(s: str, at: int) -> bool:
    """Whether a declaration may start at `at` in the collapsed header `s`: not inside an expression
    (`new Foo() {`, `x = bar() {`)."""
    j = at - 1
    while j >= 0 and s[j] in " \t\r\n":
        j -= 1
    if j < 0 or s[j] in ";{}:]":
        return True
    if s[j] in "(,=?!&|+-*/%<>[^~" or _C_OPERAND_WORD.search(s, max(0, j - 8), j + 1):
        return False
    return "\n" in s[j:at]


def _c_classify(
    s: str, st: int, ctx: str, parent: _Header | None, spec: _CLike, masked: str
) -> tuple[str | None, str | None, int, str]:
    m = spec.pattern.search(s, st)
    if m is None or not _c_statement_at(s, m.start()):
        return None, None, st, _c_body(s, st)
    group = m.lastgroup
    at = m.start()
    owner = parent.name if parent is not None and parent.kind in _CLASS_LIKE else None
    if group == "kw":
        keyword = m.group("kw_k").split()[0]
        if keyword == "namespace":
            words = _FIRST_WORD.findall(m.group("kw_r"))
            return "namespace", (re.sub(r"\s+", "", words[0]) if words else None), at, "top"
        words = _FIRST_WORD.findall(m.group("kw_r"))
        name = next((w for w in words if w not in ("class", "struct", "final", "sealed", "abstract")), None)
        return _KIND_OF_KEYWORD.get(keyword, "class"), name, at, "class"
    if group == "prop":
        if ctx == "code":
            return None, None, st, "code"
        return "property", _qualified(owner, m.group("prop_n")), at, "code"
    if group == "objc":
        return "method", _qualified(owner, m.group("objc_n")), at, "code"
    name = re.sub(r"\s+", "", masked[m.start("fn_n") : m.end("fn_n")])
    typed = bool(m.group("fn_t").strip() or m.group("fn_k"))
    if ctx == "code" and not (spec.local_functions and typed):
        return None, None, st, "code"
    # Where the parent is unknown (the scan started inside it), an untyped `name(args) {` in C is as
    # likely a macro over a block as a function.
    if ctx == "any" and not typed and not spec.local_functions and "::" not in name:
        return None, None, st, "code"
    kind = "method" if owner or "::" in name or ctx == "class" else "function"
    return kind, _qualified(owner, name), at, "code"


_C_ANONYMOUS_CLASS = re.compile(r"\bnew\s+[\w$.]+\s*(?:<\s*>\s*)?\(\s*\)\s*\Z|\bobject\s*:[^;{}=]*\Z")
_C_EXTERN_BLOCK = re.compile(r"\bextern\s*\"\s*\"\s*\Z")


def _c_body(s: str, st: int) -> str:
    if _C_ANONYMOUS_CLASS.search(s, st):
        return "class"
    if _C_EXTERN_BLOCK.search(s, st):
        return "top"
    return "code"


# -- dialects ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Dialect:
    """How one family is read: its lexer, where a scan may start, and its comment and decorator lines."""

    family: str
    lexer: _Lexer
    events: Callable[[str, int, _Lexer], Iterator[_Event]]
    start: re.Pattern[str]  # a line, from its first non-blank character, where a scan may start
    comment: re.Pattern[str]  # a line (stripped) that is a line comment
    decoration: re.Pattern[str] | None  # a line (stripped) that opens a decorator, annotation or attribute
    block_comments: bool  # /* ... */
    declaration: re.Pattern[str]  # a line at column 0 that surely starts a top-level declaration


# A line at column 0 that surely starts a top-level statement (see `_find_block`), where it differs
# from the resynchronisation lines (which must start definitions).
_DECLARATION_LINES = {
    "js": r"(?:export|import|function|class|interface|enum|namespace|declare|const|let|var|type|async\s+function"
    r"|abstract\s+class|module\.exports|exports\.)\b",
}
_BRACE_START = re.compile(r"(?:[\w$@~\[]|#\[|[-+]\s*\()")
# C-like: not a label or access specifier (`public:`, `default:`): they head no block.
_C_START = re.compile(r"(?!\w+\s*:(?!:))(?:[\w$@~\[]|#\[|[-+]\s*\()")
_SLASH_COMMENT = re.compile(r"//")
_DIALECTS: dict[str, _Dialect] = {
    family: _Dialect(
        family,
        lexer,
        _brace_events,
        _BRACE_START if family in ("js", "go", "rust") else _C_START,
        re.compile(r"//|#(?!\[)") if family == "php" else _SLASH_COMMENT,
        {
            "js": re.compile(r"@[\w$]"),
            "java": re.compile(r"@\w"),
            "swift": re.compile(r"@\w"),
            "csharp": re.compile(r"\["),
            "rust": re.compile(r"#\["),
            "php": re.compile(r"#\["),
            "c": re.compile(r"\[\["),
        }.get(family),
        True,
        re.compile(_DECLARATION_LINES.get(family, _RESYNC_LINES[family])),
    )
    for family, lexer in _LEXERS.items()
}
_DIALECTS["ruby"] = _Dialect(
    "ruby",
    _Lexer(_RUBY_TOKEN, re.compile(r"(?!)")),
    _ruby_events,
    re.compile(r"(?:(?:private|protected|public|module_function)\s+)?(?:def|class|module)\b|[\w@:]"),
    re.compile(r"#"),
    None,
    False,
    re.compile(r"(?:def|class|module)\b"),
)
_DIALECTS["lua"] = _Dialect(
    "lua",
    _Lexer(_LUA_TOKEN, re.compile(r"(?!)")),
    _lua_events,
    re.compile(r"(?:local\s+)?function\b|[\w.\[\]]+\s*=\s*function\b|\w"),
    re.compile(r"--"),
    None,
    False,
    re.compile(r"(?:local\s+)?function\b"),
)

# -- the scan ---------------------------------------------------------------------------------------

# A block on the scan's stack: [offset of its opening token, offset of its closing token (-1 while
# open), its parent block (None at the scan's top), its _Header once asked, the closing offsets of its
# child blocks (where a header of a later child may safely start reading), the keyword that opened it].
_AT, _END, _UP, _HEAD, _KIDS, _WORD = range(6)
_Block = list  # see above: a list, the cheapest record in the hot loop
_GONE: _Block = [-1, -1, None, None, [], ""]  # a holder ruled out (see _Scan.find)
_DECORATION_LINES = 40  # how far up a multi-line decorator (attribute, annotation) is followed
_DECORATION_LINE_CHARS = 1_000  # a longer line is none of its lines
_HEADER_MAX_LINES = 200  # a header is never read from further up than this
_HEADER_MAX_CHARS = 20_000  # ... nor than this (minified code)
_HEADER_BLOCKS = 8  # blocks (decorator arguments, types) a header is read back over at most
_NON_BLANK = re.compile(r"\S")
_GOES_ON = frozenset(")]>.|&?:=[")
_HEADER_CHARS = 2000  # the most of a statement's end its header patterns are searched in
_HEADER_SEARCH_LINES = 16  # ... and the most lines (bracket groups emptied; a union return type takes one each)
_RUBY_DEF = re.compile(r"def\s+(?:self\s*\.\s*)?([\w?!=]+|[^\s\w(;]+)")
_RUBY_CLASS = re.compile(r"(class|module)\s+(?!<<)([\w:]+)")
_RUBY_VISIBILITY = re.compile(r"[ \t]*(?:private|protected|public|module_function|private_class_method)\s+")
_LUA_NAMED = re.compile(r"function\s+([\w.:]+)")
_LUA_ASSIGNED = re.compile(r"(?:local\s+)?([\w.\[\]\"']+)\s*=\s*\Z")

# The last character of a header before a `{` that opens a value (an object, a type, an initializer),
# never a body. Scala's `def f() = {`, Rust's `where T: X,` and Kotlin's `): T? {` end bodies' headers.
_VALUE_BEFORE = {"java": "<:|&,([", "rust": "<:|&=([?", "swift": "<:|&,=([", "csharp": "<:|&,=(["}
_VALUE_BEFORE_ANY = "<:|&,=([?"


def _depth(block: _Block) -> int:
    """How many blocks hold `block`, within the scan."""
    depth = -1
    while block is not None:
        block = block[_UP]
        depth += 1
    return depth


def _skip_space(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return min(i, len(s))


class _Scan:
    """The blocks from one start line down, read as far as one cursor line needs."""

    def __init__(self, text: str, dialect: _Dialect, start_line: int) -> None:
        index = line_index(text)
        self.text = text
        self.lines = index.lines
        self.offsets = index.offsets
        self.dialect = dialect
        self.start = self.offsets[start_line]
        self.events = dialect.events(text, self.start, dialect.lexer)
        self.stack: list[_Block] = []
        self.top_kids: list[int] = []
        self.around: list[_Block] = []  # the blocks open at the end of the cursor's line, and closed on it
        self.found: _Block | None = None  # the block `find` answered
        # What holds the blocks the scan starts among: from column 0, most likely the file itself.
        self.top = "top" if _indent(self.lines[start_line]) == 0 else "any"

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.offsets, offset) - 1

    # -- the answer for one line --

    def find(self, cursor: int) -> _Block | None:
        """The innermost definition block whose span holds line `cursor`, if it starts below the scan's
        start; its `_END` is set (the end of the text when it never closes)."""
        line_start, line_end = self.offsets[cursor], self.offsets[cursor + 1]
        stack = self.stack
        closed_here: list[_Block] = []
        events = self.events
        pending: _Event | None = None
        for event in events:
            at, what, word = event
            if at >= line_end:
                pending = event
                break
            if what == _OPEN:
                stack.append([at, -1, stack[-1] if stack else None, None, [], word])
            elif what == _CLOSE:
                if stack:
                    block = stack.pop()
                    block[_END] = at
                    (stack[-1][_KIDS] if stack else self.top_kids).append(at)
                    if at >= line_start:
                        closed_here.append(block)
                else:  # the end of a block opened above the scan's start
                    self.top_kids.append(at)
            else:
                self._resync(at)
        rest = chain((pending,), events) if pending is not None else events
        self.around = [*stack, *closed_here]

        # Open at the end of the line: the innermost definition among them holds the line.
        best: _Block | None = None
        best_depth = -1
        for depth, block in enumerate(stack):
            if self.header(block).kind:
                best, best_depth = block, depth
        # Closed on the line: a deeper one (a method closing inside its class) holds it more closely.
        for block in closed_here:
            if self.header(block).kind:
                depth = _depth(block)
                if depth > best_depth:
                    best, best_depth = block, depth

        # Read on while the line may belong to the header (or leading comments) of a block below: the
        # statement holding the line lies in one of the blocks open here (or at the scan's top); a child
        # block that starts a later statement rules its parent out, one that is a definition starting
        # at or above the line is the answer. Children of blocks opened further down are parts of some
        # header (a decorator's argument, a type), never what is looked for.
        holders: list[_Block | None] = [None, *stack]
        # A definition found through a level at or above `best` would hold `best`: not more inner.
        holders[: best_depth + 1] = [_GONE] * (best_depth + 1)
        alive = len(holders) - best_depth - 1
        ahead: _Block | None = None
        ahead_depth = -1
        for at, what, word in rest:
            if what == _OPEN:
                parent = stack[-1] if stack else None
                block = [at, -1, parent, None, [], word]
                stack.append(block)
                level = len(stack) - 1  # the parent's index in holders
                if level >= len(holders) or holders[level] is not parent:
                    continue
                header = self.header(block)
                if header.kind and self.first_line(block) <= cursor:
                    ahead, ahead_depth = block, level
                    break
                if header.kind or self.leading_start(self.line_of(header.statement)) > cursor:
                    # A later statement in this block. If it holds statements (code, a definition's
                    # body), the cursor's statement is no header part of anything further out either.
                    holders[level] = _GONE
                    alive -= 1
                    if parent is not None and (self.header(parent).kind or self.header(parent).inner == "code"):
                        for outer in range(level):
                            if holders[outer] is not _GONE:
                                holders[outer] = _GONE
                                alive -= 1
            elif what == _CLOSE:
                if stack:
                    block = stack.pop()
                    block[_END] = at
                    (stack[-1][_KIDS] if stack else self.top_kids).append(at)
                    level = len(stack) + 1
                    if level < len(holders) and holders[level] is block:
                        holders[level] = _GONE
                        alive -= 1
                else:
                    self.top_kids.append(at)
                    if holders[0] is None:  # the block the scan started in has ended
                        holders[0] = _GONE
                        alive -= 1
            else:
                self._resync(at)
                continue
            if alive <= 0:
                break
        if ahead is not None and best_depth < ahead_depth:
            best = ahead
        if best is None:
            return None
        if best[_END] < 0:
            for at, what, word in rest:
                if what == _OPEN:
                    stack.append([at, -1, stack[-1] if stack else None, None, [], word])
                elif what == _CLOSE:
                    if stack:
                        block = stack.pop()
                        block[_END] = at
                        (stack[-1][_KIDS] if stack else self.top_kids).append(at)
                else:
                    self._resync(at)
                if best[_END] >= 0:
                    break
            else:
                best[_END] = len(self.text)  # never closed: to the end of the text
        return best

    def _resync(self, at: int) -> None:
        """A definition keyword at column 0 while nested: the blocks still open there were never closed
        (the buffer is mid-edit), unless they are wrappers whose content starts at column 0 too."""
        stack = self.stack
        if not stack or self._wrapper(stack[-1]):
            return
        keyword_line = self.line_of(at + 1)
        last = max(self.leading_start(keyword_line) - 1, 0)
        while last > 0 and not self.lines[last].strip():
            last -= 1
        end = self.offsets[last]
        while stack and not self._wrapper(stack[-1]):
            block = stack.pop()
            block[_END] = max(end, block[_AT])
            (stack[-1][_KIDS] if stack else self.top_kids).append(at)

    def _wrapper(self, block: _Block) -> bool:
        lines = self.lines
        line = self.line_of(block[_AT])
        if lines[line][:1] in (" ", "\t"):
            return False
        for below in range(line + 1, min(line + 50, len(lines))):
            content = lines[below]
            if content.strip():
                return content[:1] not in (" ", "\t", "}")
        return False

    # -- headers --

    def header(self, block: _Block) -> _Header:
        header = block[_HEAD]
        if header is None:
            header = block[_HEAD] = self._classify(block)
        return header

    def _classify(self, block: _Block) -> _Header:
        parent = block[_UP]
        parent_header = self.header(parent) if parent is not None else None
        ctx = parent_header.inner if parent_header is not None else self.top
        if self.dialect.family in ("ruby", "lua"):
            return self._classify_word(block, parent_header)
        at = block[_AT]
        floor = parent[_AT] + 1 if parent is not None else self.start
        kids = parent[_KIDS] if parent is not None else self.top_kids
        # Read from just after the last `}` above (a safe offset: code, no string), unless what follows
        # that `}` goes on with the same statement: `@Component({...})`, `f(): { a: 1 } {`.
        text = self.text
        i = bisect.bisect_left(kids, at) - 1
        for _ in range(_HEADER_BLOCKS):
            if i < 0 or kids[i] < floor:
                break
            after = _NON_BLANK.search(text, kids[i] + 1, at)
            if after is not None and after.group() not in _GOES_ON:
                gap = self.dialect.lexer.mask.sub(_blank, text[kids[i] + 1 : at])
                if gap.count(")") <= gap.count("("):  # not inside a parameter list that opened above
                    floor = kids[i] + 1
                    break
            i -= 1
        floor = self._capped(floor, kids, at)
        masked = self.dialect.lexer.mask.sub(_blank, self.text[floor:at])
        s = _collapse(masked)
        st, outer = _statement_start(s)
        # Without `;` (or after a long comment) the statement start says little: a header spans a few
        # lines once its groups are emptied, and the leading block finds the decorators above.
        newline = len(s)
        for _ in range(_HEADER_SEARCH_LINES):
            newline = s.rfind("\n", st, newline)
            if newline < 0:
                break
        st = max(st, newline + 1, len(s) - _HEADER_CHARS)
        family = self.dialect.family
        tail = s.rstrip()[-1:]
        if tail and tail in _VALUE_BEFORE.get(family, _VALUE_BEFORE_ANY):
            # The `{` of an object, a type or an initializer: `f(): Promise<{ ok: boolean }>`, `= {`.
            kind, name, rel, inner = None, None, st, _js_body(s, st, ctx) if family == "js" else "code"
        elif family == "js":
            kind, name, rel, inner = _js_classify(s, st, ctx)
            if kind == "method" and parent_header is not None and parent_header.kind in ("class", "interface"):
                name = _qualified(parent_header.name, name)
        elif family == "go":
            kind, name, rel, inner = _go_classify(s, st, ctx, masked, lambda: self._masked_before(block))
        elif family == "rust":
            kind, name, rel, inner = _rust_classify(s, st, ctx, parent_header)
        else:
            kind, name, rel, inner = _c_classify(s, st, ctx, parent_header, _C_LIKES[family], masked)
        return _Header(kind, name, floor + _skip_space(s, rel), inner, floor + _skip_space(s, outer))

    def _masked_before(self, block: _Block) -> str:
        """The text from the start of the block holding `block` (or of the scan) to its `{`, strings
        and comments blanked: no more than a header's longest reach."""
        at = block[_AT]
        parent = block[_UP]
        floor = parent[_AT] + 1 if parent is not None else self.start
        floor = self._capped(floor, parent[_KIDS] if parent is not None else self.top_kids, at)
        return self.dialect.lexer.mask.sub(_blank, self.text[floor:at])

    def _capped(self, floor: int, kids: list[int], at: int) -> int:
        """`floor`, or where to read a header ending at `at` from when that is much further up: the
        first `}` below the cap, else the cap's line (which a multi-line string could hold: a header
        that long is rare enough to risk it)."""
        cap = max(self.offsets[max(0, self.line_of(at) - _HEADER_MAX_LINES)], at - _HEADER_MAX_CHARS)
        if floor >= cap:
            return floor
        j = bisect.bisect_left(kids, cap)
        return kids[j] + 1 if j < len(kids) and kids[j] < at else cap

    def _classify_word(self, block: _Block, parent: _Header | None) -> _Header:
        """Ruby and Lua: the keyword that opened the block says what it is."""
        at = block[_AT]
        word = block[_WORD]
        text = self.text
        # The class or module around: through `class << self`, whose methods are the class's.
        holder = block[_UP]
        while parent is not None and parent.kind is None and parent.inner == "class" and holder is not None:
            holder = holder[_UP]
            parent = self.header(holder) if holder is not None else None
        owner = parent.name if parent is not None and parent.kind in ("class", "module") else None
        kind: str | None = None
        name: str | None = None
        start = at
        inner = "code"
        if word == "def":
            m = _RUBY_DEF.match(text, at)
            kind, name = ("method" if owner else "function"), _qualified(owner, m.group(1) if m else None)
            line_start = text.rfind("\n", 0, at) + 1
            if _RUBY_VISIBILITY.fullmatch(text, line_start, at):
                start = line_start  # `private def helper`: the line is the definition's
        elif word in ("class", "module"):
            m = _RUBY_CLASS.match(text, at)
            inner = "class"
            if m is not None:  # not `class << self`
                kind, name = word, _qualified(owner, m.group(2))
        elif word == "function":
            line_start = text.rfind("\n", 0, at) + 1
            named = _LUA_NAMED.match(text, at)
            assigned = _LUA_ASSIGNED.search(text, line_start, at)
            if named is not None:
                kind, name = "function", named.group(1)
                if text[line_start:at].strip() == "local":
                    start = line_start
            elif assigned is not None:
                kind, name, start = "function", assigned.group(1), assigned.start()
        return _Header(kind, name, start, inner, start)

    # -- spans --

    def first_line(self, block: _Block) -> int:
        start = self.header(block).start
        line = self.line_of(start)
        before = self.text[self.offsets[line] : start].strip()
        if before.endswith("*/") and self.dialect.block_comments:
            # `*/ class Foo {`: the comment that ends on the header's line is the definition's too.
            opener = self.text.rfind("/*", 0, start)
            opener_line = self.line_of(opener)
            if opener < 0 or self.text[self.offsets[opener_line] : opener].strip():
                return line
            line = opener_line
        elif before:
            return line  # code before it on its line: the comments above belong to that code
        return self.leading_start(line)

    def leading_start(self, line: int) -> int:
        """`line`, moved up over the comment and decorator lines directly above it."""
        return _leading_start(self.lines, line, self.dialect)

    def span(self, block: _Block) -> tuple[int, int]:
        return self.first_line(block), self.line_of(block[_END])


_STRING_IN_LINE = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")


def _leading_start(lines: list[str], line: int, dialect: _Dialect) -> int:
    first = line
    j = line - 1
    comment = dialect.comment
    decoration = dialect.decoration
    while j >= 0:
        content = lines[j].strip()
        if not content:
            break
        if comment.match(content):
            first = j
            j -= 1
            continue
        if dialect.block_comments and content.endswith("*/"):
            k = j
            while k >= 0 and "/*" not in lines[k]:
                k -= 1
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
        if dialect.family == "ruby" and content.startswith("=end"):
            k = j
            while k >= 0 and not lines[k].startswith("=begin"):
                k -= 1
            if k < 0:
                break
            first = k
            j = k - 1
            continue
        if dialect.family == "lua" and content.endswith("]]"):
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


# -- where to start -------------------------------------------------------------------------------


def _indent(line: str) -> int:
    """Leading blanks, a tab counting as one: a file indents with one or the other, and this is the
    count `_shallow` matches."""
    return len(line) - len(line.lstrip(" \t"))


_NOT_A_START = re.compile(r"(?://|/\*|\*|#(?!\[)|--)")
_SHALLOW: dict[tuple[str, int], re.Pattern[str]] = {}  # compiled once per family and indentation
_NOT_A_LINE = r"(?![ \t\r\n]|\Z|//|/\*|\*|#(?!\[)|--)"  # blank, or a comment


def _shallow(dialect: _Dialect, limit: int) -> re.Pattern[str]:
    """A line break, then a line indented by less than `limit` blanks (neither blank nor a comment),
    or by exactly `limit` and where a scan may start. The `\n` first: a literal the regex engine
    skips to fast."""
    key = (dialect.family, limit)
    pattern = _SHALLOW.get(key)
    if pattern is None:
        if limit >= 1 << 20:
            body = rf"[ \t]*+{_NOT_A_LINE}"
        elif limit == 0:
            body = rf"(?={dialect.start.pattern})"
        else:
            body = rf"(?:[ \t]{{0,{limit - 1}}}+{_NOT_A_LINE}|[ \t]{{{limit}}}(?={dialect.start.pattern}))"
        pattern = _SHALLOW[key] = re.compile(rf"\n{body}")
    return pattern


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


def _start_lines(text: str, cursor: int, dialect: _Dialect) -> Iterator[int]:
    """Lines at or above the cursor where a scan may start, innermost first: each indented no deeper
    than every line between it and the cursor; after one is tried, the next must be less indented."""
    index = line_index(text)
    lines, offsets = index.lines, index.offsets
    limit = 1 << 30
    end = offsets[cursor + 1]
    while True:
        at = _last_shallow(text, end, _shallow(dialect, limit))
        if at < 0:
            return
        j = bisect.bisect_right(offsets, at) - 1
        line = lines[j]
        indent = _indent(line)
        if dialect.start.match(line, indent) and not _continues_above(lines, j, dialect):
            yield j
            limit = indent - 1
            if limit < 0:
                return
        else:
            limit = indent
        end = offsets[j]


_TRAILING_COMMENT = re.compile(r"\s(?://|#|--).*$")
_UNFINISHED = tuple("([,=:?&|+*/%<>!~^.-\\")


def _continues_above(lines: list[str], j: int, dialect: _Dialect) -> bool:
    """Whether line j continues an expression left unfinished above (`reduce(`, `x =`, `a &&`): a
    scan starting there would read an argument as a statement."""
    for k in range(j - 1, max(j - 12, -1), -1):
        content = lines[k].strip()
        if not content or _NOT_A_START.match(content) or content.endswith("*/"):
            continue
        content = _TRAILING_COMMENT.sub("", content).rstrip()
        if content.endswith(("++", "--", "*/")) or content.startswith("<?"):  # `<?php` ends nothing
            return False
        if dialect.family in _STATEMENTS_END_WITH_SEMICOLON and not content.endswith((";", "{", "}", ":")):
            return True  # `static inline int` above `add(int a) {`, `@Override` above `void run() {`
        return content.endswith(_UNFINISHED)
    return False


_STATEMENTS_END_WITH_SEMICOLON = frozenset(("c", "java", "csharp", "php", "braces"))


_WRAPPER_LINE = re.compile(r"^(?![ \t}/*#\r\n])[^\n]*[{][ \t]*(?://[^\n]*)?\r?\n(?:[ \t]*\r?\n)*(?![ \t}\r\n])", re.M)
_MAX_TRIES = 12


def _find(text: str, cursor: int, dialect: _Dialect) -> Definition | None:
    found, scan = _find_block(text, cursor, dialect)
    if dialect.family == "ruby":
        # `def name(args) = expression`: a definition without `end`, on its line (after its comments).
        lines = line_index(text).lines
        below = cursor
        while below + 1 < len(lines) and dialect.comment.match(lines[below].strip()):
            below += 1
        m = _RUBY_ENDLESS_LINE.match(lines[below])
        if m is not None and (found is None or found.first_line < below):
            first = _leading_start(lines, below, dialect)
            if first <= cursor:
                kind = "method" if found is not None and found.kind in ("class", "module") else "function"
                owner = found.name if kind == "method" and found is not None else None
                return Definition(first, below, kind, _qualified(owner, m.group(1)))
    if dialect.family == "js":
        arrow = _js_arrow(text, cursor, dialect, found, scan)
        if arrow is not None:
            return arrow
    return found


_TOP_SCAN_MAX = 400_000  # characters above the cursor that a last scan from the top may read


def _find_block(text: str, cursor: int, dialect: _Dialect) -> tuple[Definition | None, _Scan | None]:
    """The innermost definition with braces (or `end`) around the cursor, and the scan that read it
    (the last one tried when none)."""
    index = line_index(text)
    lines = index.lines
    scan: _Scan | None = None
    declaration = False
    for tries, start in enumerate(_start_lines(text, cursor, dialect)):
        if tries >= _MAX_TRIES:
            break
        found, scan = _try(text, dialect, start, cursor)
        if found is not None or start == 0:
            return found, scan
        # A declaration keyword at column 0, and (Go, JS: where multi-line strings are the backtick's)
        # an even number of backticks above it, and no string read from there running past the
        # cursor's line (as when the reading starts inside one): no string's content.
        declaration = (
            dialect.family in ("go", "js")
            and dialect.declaration.match(lines[start]) is not None
            and text.count("`", 0, index.offsets[start]) % 2 == 0
            and not _string_runs_past(text, dialect, index.offsets[start], index.offsets[cursor + 1])
        )
    # Nothing from the lines tried: the cursor is outside every definition, or one of those lines lay
    # inside a multi-line string, or in a wrapper whose content is not indented (a C++ or TypeScript
    # namespace). Reading from the top settles it, unless the last line tried surely was a declaration;
    # in a huge file, or then, only the wrappers not too far above are tried.
    if index.offsets[cursor] <= _TOP_SCAN_MAX and not declaration:
        return _try(text, dialect, 0, cursor)
    above = index.offsets[cursor]
    wrappers = list(_WRAPPER_LINE.finditer(text, above - _TOP_SCAN_MAX, above))
    for m in reversed(wrappers[-_MAX_TRIES:]):
        line = bisect.bisect_right(index.offsets, m.start()) - 1
        if lines[line].strip() == "{" and line > 0:
            line -= 1
        if _opens_definition(text, dialect, line, text.rfind("{", m.start(), m.end())):
            found, wrapper_scan = _try(text, dialect, line, cursor)
            if found is not None:
                return found, wrapper_scan
    return None, scan


def _string_runs_past(text: str, dialect: _Dialect, start: int, end: int) -> bool:
    """Whether a string or comment, read from `start`, begins before `end` and ends after it."""
    for token in dialect.lexer.mask.finditer(text, start):
        if token.start() >= end:
            return False
        if token.end() > end:
            return True
    return False


def _opens_definition(text: str, dialect: _Dialect, line: int, brace: int) -> bool:
    """Whether the block whose `{` is at offset `brace` (a scan starting at `line`) is a definition."""
    scan = _Scan(text, dialect, line)
    stack = scan.stack
    for at, what, word in scan.events:
        if what == _OPEN:
            block = [at, -1, stack[-1] if stack else None, None, [], word]
            if at >= brace:
                return scan.header(block).kind is not None
            stack.append(block)
        elif what == _CLOSE and stack:
            closed = stack.pop()
            (stack[-1][_KIDS] if stack else scan.top_kids).append(at)
            closed[_END] = at
    return False


def _try(text: str, dialect: _Dialect, start: int, cursor: int) -> tuple[Definition | None, _Scan]:
    scan = _Scan(text, dialect, start)
    block = scan.found = scan.find(cursor)
    if block is None:
        return None, scan
    first, last = scan.span(block)
    header = scan.header(block)
    if not first <= cursor <= last:
        return None, scan
    kind, name = header.kind or "block", header.name
    holder = block[_UP]
    while holder is not None and scan.header(holder).kind is None and scan.header(holder).inner == "class":
        holder = holder[_UP]  # an object literal, an anonymous class, `class << self`
    if (
        holder is None
        and scan.top == "any"
        and kind == "function"
        and "." not in (name or "")
        and dialect.family not in ("js", "go", "lua")  # their methods are told apart by their syntax
    ):
        # The scan started inside whatever holds the definition: read that one's header to name it.
        owner = _container(text, dialect, start)
        if owner is not None and owner.kind is None and owner.inner == "class":
            kind = "method"  # in an object literal, an anonymous class
        elif owner is not None and (owner.kind in _CLASS_LIKE or (owner.kind, dialect.family) == ("module", "ruby")):
            kind = "method"
            if name and owner.name and "." not in name and "::" not in name:
                name = f"{owner.name}.{name}"
    return Definition(first, last, kind, name), scan


_CONTAINER_HEADER_LINES = 30  # how far below its first line a container's `{` is looked for


def _container(text: str, dialect: _Dialect, line: int) -> _Header | None:
    """The header of the block opened by the nearest line above `line` that is less indented and may
    start a definition (what holds the definition on `line`, if indentation tells the truth)."""
    lines = line_index(text).lines
    indent = _indent(lines[line])
    above = next((j for j in _start_lines(text, line, dialect) if _indent(lines[j]) < indent), None)
    if above is None:
        return None
    scan = _Scan(text, dialect, above)
    end = scan.offsets[min(above + _CONTAINER_HEADER_LINES, len(lines))]
    stack = scan.stack
    for at, what, word in scan.events:
        if at >= end:
            break
        if what == _OPEN:
            block: _Block = [at, -1, stack[-1] if stack else None, None, [], word]
            if not stack:
                return scan.header(block)
            stack.append(block)
        elif what == _CLOSE and stack:
            stack.pop()
            (stack[-1][_KIDS] if stack else scan.top_kids).append(at)
    return None


# -- JavaScript: arrow functions with an expression body --------------------------------------------

# A line that may start one: `const f = (`, `name: async x =>`, `this.x = <T>(`, `static y = (`.
_JS_ARROW_LINE = re.compile(
    r"[ \t]*(?:(?:export|declare|public|private|protected|static|readonly|override|accessor)\s+)*"
    r"(?:(?:const|let|var)\s+)?(?:#?[\w$]+(?:\s*\.\s*#?[\w$]+|\[[^\]\n]*\])*|'[^'\n]*'|\"[^\"\n]*\"|\[[^\]\n]*\])"
    r"\s*[!?]?\s*"
    r"(?::[^=\n]*)?[:=]\s*(?:async\b\s*)?(?:\(|<|[\w$]+\s*=>)"
)
_JS_ARROW_DEF = re.compile(
    r"[ \t]*(?:"
    r"(?P<var>(?:(?:export|declare)\s+)*(?:const|let|var)\s+(?P<var_n>[\w$]+)\s*!?" + _TS_TYPE + r"\s*=)"
    r"|(?P<asg>(?:(?:public|private|protected|static|readonly|override|declare|accessor)\s+)*"
    r"(?P<asg_n>#?[\w$]+(?:\s*\.\s*#?[\w$]+|\s*\[\s*\])*|\[\s*\]|'\s*'|\"\s*\")\s*[?!]?" + _TS_TYPE + r"\s*=)"
    r"|(?P<pa>(?P<pa_n>" + _JS_MEMBER_NAME + r")\s*:)"
    r")\s*(?:async\s+)?(?:<\s*>\s*)?(?:\(\s*\)|[\w$]+)" + _TS_RETURN + r"\s*=>\s*"
)
_JS_EXPRESSION_TOKEN = re.compile(r"[(\[{]|[)\]}]|[;,]|\n")
_JS_CONTINUES_BEFORE = set("=([{,+-*/%&|^!~?:<>.")  # a line ending in one of these goes on
_JS_CONTINUES_AFTER = set(".?:+-*/%&|^=<>([`")  # so does the next line starting with one
_ARROW_LINES_UP = 60  # how far above the cursor an arrow's first line is looked for
_ARROW_LINES_DOWN = 300  # how far below its first line an arrow's end is looked for
_ARROW_CHARS = 20_000  # ... in characters
_ARROW_LINE_CHARS = 1_000  # lines longer than this (minified code) are not looked at


def _js_arrow(
    text: str, cursor: int, dialect: _Dialect, found: Definition | None, scan: _Scan | None
) -> Definition | None:
    """An arrow function with an expression body (`const f = (x) => x + 1;`, `name: () => value,`)
    whose span holds the cursor and lies inside `found` (the brace scan's answer), if any."""
    index = line_index(text)
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
    while below + 1 < len(lines) and dialect.comment.match(lines[below].strip()):
        below += 1
    if below != cursor and _JS_ARROW_LINE.match(lines[below]):
        starts.insert(0, (below, offsets[below]))
    # Members of an object literal written on the cursor's line: `{ get: () => x, set: (v) => f(v) }`.
    if "=>" in lines[cursor]:
        masked = dialect.lexer.mask.sub(_blank, lines[cursor])
        inline = [(cursor, offsets[cursor] + m.end()) for m in _JS_INLINE_MEMBER.finditer(masked)]
        starts[:0] = inline[::-1]
    for line, at in starts:
        span = _js_arrow_span(text, offsets, lines, line, at, dialect, scan)
        if span is None:
            continue
        first, last, name = span
        if not first <= cursor <= last:
            continue
        if found is not None and not (found.first_line <= first and last <= found.last_line):
            continue
        if found is not None and (first, last) == (found.first_line, found.last_line):
            continue
        if scan is not None and scan.found is not None and at < scan.found[_AT]:
            continue  # in the header of the definition found (`callback: () => void` among parameters)
        return Definition(first, last, "function", name)
    return None


_JS_INLINE_MEMBER = re.compile(r"[{,][ \t]*(?=[\w$'\"\[][^\n]*?=>)")


def _js_arrow_span(
    text: str, offsets: list[int], lines: list[str], line: int, start: int, dialect: _Dialect, scan: _Scan | None
) -> tuple[int, int, str | None] | None:
    """(first line, last line, name) of the arrow definition starting at offset `start` on `line`."""
    end = min(offsets[min(line + _ARROW_LINES_DOWN, len(lines))], start + _ARROW_CHARS)
    masked = dialect.lexer.mask.sub(_blank, text[start:end])
    arrow = masked.find("=>", 0, 4000)
    head = _JS_ARROW_DEF.match(_collapse(masked[: arrow + 2])) if arrow >= 0 else None
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
    name = head.group("var_n") or head.group("asg_n") or _plain_name(head.group("pa_n") or "")
    return (line if inline else _leading_start(lines, line, dialect)), last, name


def _js_in_object(scan: _Scan | None, offset: int) -> bool | None:
    """Whether `offset` lies directly in an object literal's braces (not in a class or interface body,
    not inside parentheses or brackets there); None when the scan did not see the braces around it."""
    if scan is None:
        return None
    holder: _Block | None = None
    for block in scan.around:
        holds = block[_AT] < offset and (block[_END] < 0 or block[_END] >= offset)
        if holds and (holder is None or _depth(block) > _depth(holder)):
            holder = block
    if holder is None:
        return None
    header = scan.header(holder)
    if header.kind is not None or header.inner != "class":
        return False
    between = scan.dialect.lexer.mask.sub(_blank, scan.text[holder[_AT] + 1 : offset])
    return between.count("(") == between.count(")") and between.count("[") == between.count("]")


def _js_member_line(lines: list[str], line: int) -> bool:
    """Whether the previous code line leaves an object literal open for a member: ends in `{` or `,`."""
    for k in range(line - 1, max(line - 12, -1), -1):
        content = _TRAILING_COMMENT.sub("", lines[k].strip()).rstrip()
        if content and not _NOT_A_START.match(content) and not content.endswith("*/"):
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
