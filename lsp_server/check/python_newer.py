"""Python newer than the Python running the server: code that its grammar cannot read, told from code
that no grammar reads.

The check before an edit reads Python with the running interpreter's parser (`python.parse_python`).
The code it reads may target a newer Python: PEP 695's `type X = int`, `def f[T](x: T)` and
`class C[T]` (3.12; 3.13's defaults `[T = int]` inside them), PEP 701's f-strings (3.12: a field
that reuses the f-string's quote or holds a backslash, a comment or a line break, format specs
nested deeper, a space after a conversion), 3.14's `except A, B:` (PEP 758) and t-strings (PEP 750).
Each of these is an error to an older grammar, so where a parse fails `older_reading` writes each
such construct the way the running grammar reads it, on the same lines (the parameters in brackets
dropped, an `except` tuple parenthesized, such an f-string a string of its lines, once each of its
fields' expressions parses on its own). When that text parses, the failure was the newer
constructs': the code is not refused, and the check says what it could not read. When it still
fails, the error is one the newer grammar has too, at the same line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

RUNNING_GRAMMAR = f"Python {sys.version_info.major}.{sys.version_info.minor}'s grammar"

_TYPE_ALIAS = re.compile(r"^([ \t]*)type[ \t]+(\w+)[ \t]*(?:\[[^\n]*?\])?[ \t]*=(?!=)", re.M)
_GENERIC_DEF = re.compile(r"^([ \t]*(?:async[ \t]+)?def[ \t]+\w+)[ \t]*\[[^\n]*?\][ \t]*(?=\()", re.M)
_GENERIC_CLASS = re.compile(r"^([ \t]*class[ \t]+\w+)[ \t]*\[[^\n]*?\][ \t]*(?=[(:])", re.M)
# `except A, B:` with no `as` (3.14 keeps the parentheses for that).
_EXCEPT_TUPLE = re.compile(r"^([ \t]*except\*?)[ \t]+(?!\()((?:(?! as )[^\n:#])+?,(?:(?! as )[^\n:#])*?)[ \t]*:", re.M)
# A string's start: its prefix (letters right before the quote, no name character before them), its quote.
_STRING = re.compile(r"(?:(?<![\w])([A-Za-z]{1,2}))?('''|\"\"\"|'|\")|#[^\n]*")
_PREFIXES = frozenset(("", "r", "u", "b", "br", "rb", "f", "fr", "rf", "t", "tr", "rt"))
_OPENERS, _CLOSERS = "([{", ")]}"
_DEEP_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")
_CONVERSION_SPACE = re.compile(r"![rsa]\s")

Parse = Callable[[str], bool]  # whether a source parses with the running grammar
# A replacement field: where its text starts, where its expression ends, the offset of its `}`.
Field = tuple[int, int, int]


def older_reading(source: str, parses: Parse) -> str | None:
    """`source` with every construct newer than the running grammar written the way this grammar reads
    it, line for line; None when it holds none. `parses` says whether an f-string field's expression
    parses (an f-string whose fields do not is left as it is, for the parser to refuse)."""
    text = _older_strings(source, parses)
    text = _TYPE_ALIAS.sub(r"\1\2 =", text)
    text = _GENERIC_DEF.sub(r"\1", text)
    text = _GENERIC_CLASS.sub(r"\1", text)
    text = _EXCEPT_TUPLE.sub(r"\1 (\2):", text)
    return None if text == source else text


def _older_strings(source: str, parses: Parse) -> str:
    """Each t-string, and each f-string that only PEP 701 reads, as a plain string of as many lines."""
    out: list[str] = []
    position = 0
    at = 0
    while (m := _STRING.search(source, at)) is not None:
        if m.group(2) is None:  # a comment
            at = m.end()
            continue
        prefix, quote = (m.group(1) or "").lower(), m.group(2)
        if prefix not in _PREFIXES:  # a name right before a string: the parser's to refuse
            prefix = ""
        formatted = "f" in prefix or "t" in prefix
        found = _string_end(source, m.end(), quote, formatted, "r" in prefix)
        if found is None:  # unterminated: the parser's to say
            break
        end, fields = found
        newer = formatted and ("t" in prefix or _needs_pep_701(source, fields, quote))
        if newer and all(parses("(\n" + (older_reading(e, parses) or e) + "\n)") for e in _expressions(source, fields)):
            lines = source.count("\n", m.start(), end)
            out += [source[position : m.start()], '"""' + "\n" * lines + '"""' if lines else '""']
            position = end
        at = end
    return "".join(out) + source[position:] if out else source


def _needs_pep_701(source: str, fields: list[Field], quote: str) -> bool:
    """A field that an older grammar cannot read: its f-string's own quote, a backslash, a comment, or
    (in a one-line f-string) a line break."""
    for start, cut, end in fields:
        field = source[start:end]
        if quote in field or "\\" in field or "#" in field or (len(quote) == 1 and "\n" in field):
            return True
        if _DEEP_SPEC.search(source, cut, end) or _CONVERSION_SPACE.match(source, cut):
            return True  # a spec's field with a spec of its own holding a field; `{x!r }`
    return False


def _expressions(source: str, fields: list[Field]) -> list[str]:
    """Each field's expression: before its conversion (`!r`) and format spec (`:>10`), less its
    comments and a debug `=`."""
    out = []
    for start, cut, _ in fields:
        expression = _without_comments(source[start:cut]).rstrip()
        if expression.endswith("=") and not expression.endswith(("==", "!=", "<=", ">=")):
            expression = expression[:-1]
        out.append(expression)
    return out


def _without_comments(code: str) -> str:
    """`code` with its comments taken out (its strings kept whole)."""
    out, position, at = [], 0, 0
    while (m := _STRING.search(code, at)) is not None:
        if m.group(2) is None:
            out.append(code[position : m.start()])
            position = at = m.end()
            continue
        prefix = (m.group(1) or "").lower()
        found = _string_end(code, m.end(), m.group(2), "f" in prefix or "t" in prefix, "r" in prefix)
        if found is None:
            break
        at = found[0]
    return "".join(out) + code[position:]


def _string_end(source: str, at: int, quote: str, formatted: bool, raw: bool = False) -> tuple[int, list[Field]] | None:
    """Where the string whose text starts at `at` ends (after its quote), and its replacement fields;
    None when it never ends."""
    fields: list[Field] = []
    i, n = at, len(source)
    while i < n:
        if source.startswith(quote, i):
            return i + len(quote), fields
        c = source[i]
        if c == "\\":
            following = source[i + 1 : i + 2]
            if formatted and not raw and following == "N" and source.startswith("{", i + 2):
                i = source.find("}", i) + 1 or n  # a named character, `\N{DASH}`: no field
            else:  # a brace after a backslash is still a field's (or an escaped brace's)
                i += 1 if formatted and following in ("{", "}") else 2
        elif c == "\n" and len(quote) == 1:
            return None
        elif formatted and c == "{":
            if source.startswith("{{", i):
                i += 2
                continue
            field = _field(source, i + 1)
            if field is None:
                return None
            fields.append(field)
            i = field[2] + 1
        else:
            i += 1
    return None


def _field(source: str, at: int) -> Field | None:
    """The replacement field whose text starts at `at`: (at, where its expression ends, the offset of
    the `}` that closes it); None when it never closes. Its format spec's own fields are passed whole."""
    depth = 0
    i, n = at, len(source)
    while i < n:
        c = source[i]
        if c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            if depth == 0:
                return (at, i, i) if c == "}" else None
            depth -= 1
        elif c == "#":
            i = source.find("\n", i)
            if i < 0:
                return None
            continue
        elif depth == 0 and (c == ":" or (c == "!" and source[i + 1 : i + 2] != "=")):
            end = _spec_end(source, i + 1)
            return None if end is None else (at, i, end)
        elif c in "'\"":
            start = i
            while start > at and i - start < 2 and source[start - 1].isalpha():
                start -= 1
            prefix = source[start:i].lower()
            quote = source[i : i + 3] if source.startswith(c * 3, i) else c
            found = _string_end(source, i + len(quote), quote, "f" in prefix or "t" in prefix, "r" in prefix)
            if found is None:
                return None
            i = found[0]
            continue
        i += 1
    return None


def _spec_end(source: str, at: int) -> int | None:
    """The offset of the `}` that ends a conversion and format spec starting at `at` (`r:>{width}`)."""
    i, n = at, len(source)
    while i < n:
        c = source[i]
        if c == "}":
            return i
        if c == "{":
            nested = _field(source, i + 1)
            if nested is None:
                return None
            i = nested[2]
        i += 1
    return None
