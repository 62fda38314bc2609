"""Ruby and Lua: blocks closed by `end`. One compiled pattern per language consumes strings,
comments, heredocs, `%w()` literals and long brackets at C speed and stops at the keywords that open
and close blocks (and at braces, which nest too); the keyword that opened a block says what it is.

Ruby also has a definition without `end`: the endless `def name(args) = expression`, one line,
looked for around the cursor after the blocks (`ruby_endless`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..languages.headers import Header, qualified
from ..languages.lexers import CLOSE, OPEN, RESYNC, Event, Lexer
from .cache import Snapshot
from .definition import Definition
from .leading import leading_start
from .rules import Language
from .scan import Scan

# -- Ruby -------------------------------------------------------------------------------------------

# Ruby: `if`/`unless`/`while`/`until`/`case`/`for` open a block only where a statement starts
# (`x = 1 if y` is a modifier); `do` opens anywhere, except the `do` of `while x do`.
_RUBY_WORDS = r"def|class|module|if|unless|while|until|case|begin|for|do|end"
_RUBY_KEYWORD = rf"(?<![\w.:$@])(?:{_RUBY_WORDS})(?![\w?!]|:[^:])"
_RUBY_SQ = r"'(?:[^'\\]++|\\[\s\S])*+'"
# A special global quotes nothing: `$'`, `$``, `$"` (rdoc's), `$-w`.
_RUBY_SPECIAL_GLOBAL = r"\$(?:[!@&`'+~=/\\,;.<>*$?:\"]|-\w)"


def _ruby_code(depth: int) -> str:
    """The code of a `#{...}`: strings (with interpolations of their own) and braces nest in it, up
    to `depth` levels (Python's `re` has no recursion; three is more than code holds)."""
    if depth == 0:
        return r"[^}]*+"
    return rf"(?:[^\"'{{}}\\]++|\\[\s\S]|{_ruby_dq(depth - 1)}\"|{_RUBY_SQ}|\{{{_ruby_code(depth - 1)}\}})*+"


def _ruby_dq(depth: int) -> str:
    """A double-quoted string, its closing quote left to the caller: `#{h["k"]}` and `#{a ? "x" : "y"}`
    end at their own `}`, not at the first quote or brace inside."""
    return rf'"(?:[^"\\#]++|\\[\s\S]|#\{{{_ruby_code(depth)}\}}|#)*+'


# Ruby's strings and comments, each consumed whole: a double-quoted string with its `#{...}`, a
# single-quoted and a backtick one, `=begin ... =end`, a `#` comment, a heredoc, a `%` literal, a regex
# where an operand is expected.
_RUBY_LITERALS = (
    rf'{_ruby_dq(3)}"?'
    r"|'(?:[^'\\]++|\\[\s\S])*+'?"
    r"|`(?:[^`\\]++|\\[\s\S])*+`?"
    r"|(?<![^\n])=begin\b[\s\S]*?(?:\n=end\b[^\n]*+|\Z)"
    r"|#[^\n]*+"
    r"|<<[~-]?(?P<hq>['\"`]?)(?P<hid>[A-Za-z_]\w*)(?P=hq)[^\n]*+\n[\s\S]*?(?:^[ \t]*(?P=hid)[ \t]*\r?$|\Z)"
    r"|%[qQwWiIrsx]?(?:\((?:[^()\\]++|\\.)*+\)|\[(?:[^\[\]\\]++|\\.)*+\]|\{(?:[^{}\\]++|\\.)*+\}"
    r"|<(?:[^<>\\]++|\\.)*+>|(?P<pd>[^\w\s])(?:(?!(?P=pd))[^\\]|\\.)*+(?P=pd))"
    r"|(?:(?<=[(,=~!&|?;{}])|(?<=[(,=~!&|?;{}] )|(?<=\bwhen )|(?<=\bif )|(?<=\bunless ))"
    r"/(?![\s/])(?:[^/\\\n]++|\\.)*+/[a-z]*+"
)
# Names and symbols first: `x.class`, `:end`, `@x` hold no string (`:"..."` aside, read as a string).
RUBY_LITERALS = re.compile(
    r"[A-Za-z_]\w*+[?!]?|::?[A-Za-z_]\w*+[?!=]?|"
    + _RUBY_SPECIAL_GLOBAL
    + r"|[@$]++\w*+|\?(?:\\.|[^\s\\])(?!\w)|"
    + _RUBY_LITERALS,
    re.M,
)
RUBY_TOKEN = re.compile(
    r"(?>"
    r"[^\w\"'`#/%<\n{}:.$@?]++"
    rf"|(?!(?:{_RUBY_WORDS})\b)[A-Za-z_]\w*+[?!]?"
    r"|\d\w*+"
    r"|\.\s*+[A-Za-z_]\w*+[?!=]?"  # a method call: `x.class`, `y.end`
    r"|::?[A-Za-z_]\w*+[?!=]?"  # a constant path or a symbol: `Foo::Bar`, `:end`
    rf"|{_RUBY_SPECIAL_GLOBAL}"
    r"|[@$]++\w*+"
    rf"|{_RUBY_LITERALS}"
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


def ruby_events(text: str, pos: int, lexer: Lexer) -> Iterator[Event]:
    loop_do_until = -1  # the `do` of `while x do` before this offset belongs to the loop
    for m in lexer.token.finditer(text, pos):
        kind = m.lastgroup
        if kind == "word":
            word = m.group("word")
            at = m.start("word")
            if word == "end":
                yield at, CLOSE, ""
            elif word == "do":
                if at >= loop_do_until:
                    yield at, OPEN, "do"
            elif word in ("def", "class", "module"):
                if word == "def" and _RUBY_ENDLESS_DEF.match(text, at):
                    continue
                yield at, OPEN, word
            elif word == "begin" or _ruby_statement_start(text, at):
                if word in ("while", "until", "for"):
                    loop_do_until = text.find("\n", at)
                    loop_do_until = len(text) if loop_do_until < 0 else loop_do_until
                yield at, OPEN, word
        elif kind == "open":
            yield m.end() - 1, OPEN, "{"
        elif kind == "close":
            yield m.end() - 1, CLOSE, ""
        elif kind == "resync":
            yield m.start("resync"), RESYNC, ""
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


_RUBY_DEF = re.compile(r"def\s+(?:self\s*\.\s*)?([\w?!=]+|[^\s\w(;]+)")
_RUBY_CLASS = re.compile(r"(class|module)\s+(?!<<)([\w:]+)")
_RUBY_VISIBILITY = re.compile(r"[ \t]*(?:private|protected|public|module_function|private_class_method)\s+")


def ruby_header(text: str, at: int, word: str, owner: str | None) -> Header:
    """The block opened by `word` at `at`; `owner` names the class or module around it, if any."""
    kind: str | None = None
    name: str | None = None
    start = at
    inner = "code"
    if word == "def":
        m = _RUBY_DEF.match(text, at)
        kind, name = ("method" if owner else "function"), qualified(owner, m.group(1) if m else None)
        line_start = text.rfind("\n", 0, at) + 1
        if _RUBY_VISIBILITY.fullmatch(text, line_start, at):
            start = line_start  # `private def helper`: the line is the definition's
    elif word in ("class", "module"):
        m = _RUBY_CLASS.match(text, at)
        inner = "class"
        if m is not None:  # not `class << self`
            kind, name = word, qualified(owner, m.group(2))
    return Header(kind, name, start, inner, start)


def ruby_endless(
    snapshot: Snapshot, cursor: int, language: Language, found: Definition | None, scan: Scan | None
) -> Definition | None:
    """`def name(args) = expression` on the cursor's line (or below the comments the cursor is on),
    unless the block scan's answer `found` starts below it."""
    lines = snapshot.index.lines
    below = cursor
    while below + 1 < len(lines) and language.comment.match(lines[below].strip()):
        below += 1
    m = _RUBY_ENDLESS_LINE.match(lines[below])
    if m is None or (found is not None and found.first_line >= below):
        return None
    first = leading_start(lines, below, language)
    if first > cursor:
        return None
    kind = "method" if found is not None and found.kind in ("class", "module") else "function"
    owner = found.name if kind == "method" and found is not None else None
    return Definition(first, below, kind, qualified(owner, m.group(1)))


# -- Lua --------------------------------------------------------------------------------------------

_LUA_WORDS = r"function|if|do|repeat|end|until"
# Lua's strings and comments, each consumed whole: a long comment `--[[ ]]`, a line comment, a long
# string `[[ ]]`, a quoted string.
_LUA_LITERALS = (
    r"--\[(?P<ceq>=*+)\[[\s\S]*?(?:\](?P=ceq)\]|\Z)"
    r"|--[^\n]*+"
    r"|\[(?P<seq>=*+)\[[\s\S]*?(?:\](?P=seq)\]|\Z)"
    r'|"(?:[^"\\\n]++|\\[\s\S])*+"?'
    r"|'(?:[^'\\\n]++|\\[\s\S])*+'?"
)
LUA_LITERALS = re.compile(_LUA_LITERALS)
LUA_TOKEN = re.compile(
    r"(?>"
    r"[^\w\"'\-\[{}\n.:]++"
    rf"|(?!(?:{_LUA_WORDS})\b)[A-Za-z_]\w*+"
    r"|\d\w*+|[.:]"
    rf"|{_LUA_LITERALS}"
    r"|[\-\[]"
    r"|\n(?!(?:local\s+)?function\b)"
    r")*+"
    rf"(?:(?P<word>{_LUA_WORDS})\b|(?P<open>\{{)|(?P<close>\}})|(?P<resync>\n)(?=(?:local\s+)?function\b)"
    r"|(?P<eof>\Z))"
)


def lua_events(text: str, pos: int, lexer: Lexer) -> Iterator[Event]:
    for m in lexer.token.finditer(text, pos):
        kind = m.lastgroup
        if kind == "word":
            word = m.group("word")
            if word in ("end", "until"):
                yield m.start("word"), CLOSE, ""
            else:
                yield m.start("word"), OPEN, word
        elif kind == "open":
            yield m.end() - 1, OPEN, "{"
        elif kind == "close":
            yield m.end() - 1, CLOSE, ""
        elif kind == "resync":
            yield m.start("resync"), RESYNC, ""
        else:
            return


_LUA_NAMED = re.compile(r"function\s+([\w.:]+)")
_LUA_ASSIGNED = re.compile(r"(?:local\s+)?([\w.\[\]\"']+)\s*=\s*\Z")


def lua_header(text: str, at: int, word: str, owner: str | None) -> Header:
    """The block opened by `word` at `at`: a function (named, or assigned to a name), or none."""
    kind: str | None = None
    name: str | None = None
    start = at
    if word == "function":
        line_start = text.rfind("\n", 0, at) + 1
        named = _LUA_NAMED.match(text, at)
        assigned = _LUA_ASSIGNED.search(text, line_start, at)
        if named is not None:
            kind, name = "function", named.group(1)
            if text[line_start:at].strip() == "local":
                start = line_start
        elif assigned is not None:
            kind, name, start = "function", assigned.group(1), assigned.start()
    return Header(kind, name, start, "code", start)
