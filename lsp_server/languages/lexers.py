"""Lexing for the brace languages: one compiled pattern per language consumes strings and comments
(JS template literals and regex literals, Rust raw strings, Go raw strings, C++ raw strings, PHP
heredocs...) at C speed and stops only at what nests, so the Python loop sees braces alone.

`brace_lexer` builds a language's `Lexer` from the pieces below (the language table in `languages`
says which); `brace_events` reads the braces. An event is a plain tuple (offset, OPEN | CLOSE |
RESYNC, the keyword that opened the block, for `end` languages): thousands are made per scan and
unpacked at once, so a named type would only cost time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

OPEN, CLOSE, RESYNC = 0, 1, 2
Event = tuple[int, int, str]


class Lexer(NamedTuple):
    token: re.Pattern[str]  # one structural token per match, see brace_pattern
    mask: re.Pattern[str]  # one string or comment per match: blanked in headers


EventReader = Callable[[str, int, Lexer], Iterator[Event]]

# Pieces shared by the brace languages' patterns. Each consumes one string or comment whole.
DQ = r'"(?:[^"\\\n]++|\\[\s\S])*+"?'  # an unterminated string ends at its line's end
SQ = r"'(?:[^'\\\n]++|\\[\s\S])*+'?"
DQ_MULTI = r'"(?:[^"\\]++|\\[\s\S])*+"?'  # Rust, PHP, Ruby: strings may span lines
SQ_MULTI = r"'(?:[^'\\]++|\\[\s\S])*+'?"
LINE_COMMENT = r"//[^\n]*+"
BLOCK_COMMENT = r"/\*[\s\S]*?(?:\*/|\Z)"
TRIPLE = r'"""[\s\S]*?(?:"""|\Z)'
TRIPLE_SQ = r"'''[\s\S]*?(?:'''|\Z)"
RUST_CHAR = r"'(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|[^\n]))'"  # Rust: 'a' and '\n', not 'a lifetimes
# A JS regex literal: a `/` where an operand is expected (ECMAScript's InputElementRegExp goal).
# Which is unknowable without parsing; the tell is the token before it (one space allowed): a
# punctuator that leaves an operand to come, any but `)`, `]`, the postfix `++`/`--`, `.`/`?.` and
# `<` (`}` ends a block more often than an object; `<` is left out for JSX's `</p>`), or a keyword
# that takes an operand (`return`, `=>`'s `>`, `yield`, `await`, `typeof`, `case`, `do`...).
# The `/` comes first, then what precedes it is checked (lookbehinds that end with it): an
# alternative that starts with a literal keeps the regex engine's first-character prefilter.
_LINE_START = [r"\n", *(rf"\n {{{n}}}" for n in range(1, 17)), *(rf"\n\t{{{n}}}" for n in range(1, 7))]
_OPERAND_PUNCTUATORS = [r"[(,=:\[!&|?;{>*%^~]", r"[^+]\+", r"[^-]-"]  # each of one width, for a lookbehind
JS_OPERAND_KEYWORDS = (
    "return", "typeof", "instanceof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
    "yield", "await", "extends", "default",
)  # fmt: skip
_REGEX_BEFORE = [
    *_OPERAND_PUNCTUATORS,
    *(f"{punctuator} " for punctuator in _OPERAND_PUNCTUATORS),
    *(rf"(?<![\w$.]){keyword}{space}" for keyword in JS_OPERAND_KEYWORDS for space in ("", " ")),
    *_LINE_START,
]
# After a `}`, a `/>` closes a JSX element (`panel={<Step />} />`, `<a href={x}/>`): no regex.
_AFTER_A_BRACE = [r"(?<=\}/)(?!>)", r"(?<=\} /)(?!>)"]
JS_REGEX = (
    r"/(?:" + "|".join([*(f"(?<={before}/)" for before in _REGEX_BEFORE), *_AFTER_A_BRACE]) + r")"
    r"(?![*/])(?:[^/\\\[\n]++|\\.|\[(?:[^\]\\\n]++|\\.)*+\])++/[a-z]*+"
)
# An apostrophe between a name's character and a letter starts no string in JavaScript (no literal
# follows a name or a number), unless a keyword that takes an operand ends there (`return'x'`,
# minified): it is JSX text, `<p>Don't</p>`, `it's`. Only there: a quote after a name followed by
# anything else is more often a string misaligned by a slip (`f("a, "b")`), to be caught. In the
# mask its group names it, so that the check does not read it as a string (the token pattern has
# no group for it: one inside its possessive repeat trips `re`).
# The quote comes first, then what precedes it is checked (lookbehinds that end with it): a pattern
# that starts with lookbehinds loses the regex engine's first-character prefilter (5x slower).
_AFTER_A_NAME = r"(?<=[\w$]')" + "".join(
    rf"(?<!(?<![\w$.]){keyword}')" for keyword in (*JS_OPERAND_KEYWORDS, "import", "from", "module")
)
JS_TEXT_QUOTE = r"'" + _AFTER_A_NAME + r"(?=[A-Za-z])"
_JS_TEXT_QUOTE_NAMED = r"(?P<text_quote>')" + _AFTER_A_NAME + r"(?=[A-Za-z])"
JS_TEMPLATE = r"`(?:[^`\\$]++|\\[\s\S]|\$(?!\{))*+`"  # a template without `${`: skipped whole
_TEMPLATE_HEAD = r"`(?:[^`\\$]++|\\[\s\S]|\$(?!\{))*+\$\{"
_TEMPLATE_REST = re.compile(r"(?:[^`\\$]++|\\[\s\S]|\$(?!\{))*+(`|\$\{)?")


def brace_pattern(specials: str, skips: list[str], resync: str, template: bool) -> re.Pattern[str]:
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


def brace_lexer(specials: str, skips: list[str], resync: str, template: bool = False) -> Lexer:
    """The lexer of a brace language: `specials` are the characters that may start a string or
    comment, `skips` consume one each, `resync` matches a line at column 0 where a nested scan
    resynchronises (see `Scan.resync`); `template` for JS template literals with `${`."""
    # Blanking a header wants whole templates, `${...}` included (nested templates aside).
    named = {JS_TEMPLATE: JS_ANY_TEMPLATE, JS_TEXT_QUOTE: _JS_TEXT_QUOTE_NAMED}
    masks = [named.get(skip, skip) for skip in skips]
    return Lexer(brace_pattern(specials, skips, resync, template), _mask_pattern(masks))


JS_ANY_TEMPLATE = r"`(?:[^`\\]++|\\[\s\S])*+`?"


def brace_events(text: str, pos: int, lexer: Lexer) -> Iterator[Event]:
    """The braces from `pos` on. A `}` that ends a template's `${` is no block: the template's text
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
                yield m.end() - 1, OPEN, ""
            elif kind == "close":
                if substitutions and substitutions[-1] == depth:
                    substitutions.pop()
                    resume = m.end()
                    break
                depth -= 1
                yield m.end() - 1, CLOSE, ""
            elif kind == "resync":
                yield m.start("resync"), RESYNC, ""
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
