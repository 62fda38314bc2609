"""Headers of the other brace languages: Go, Rust, and the C-like ones (C, C++, Objective-C, Java,
Kotlin, Scala, Groovy, Dart, C#, Swift, PHP), whose declarations differ by their keywords and
modifiers (`c_like_classifier` builds a classifier from them; the language table passes them)."""

from __future__ import annotations

import re
from functools import partial
from typing import NamedTuple

from .headers import CLASS_LIKE, KEYWORDS_NOT_NAMES, Classified, Classifier, HeaderText, qualified

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


def go_classify(h: HeaderText) -> Classified:
    s, st, ctx, masked = h.flat, h.statement, h.context, h.masked
    m = _GO_DEFINITION.search(s, st)
    if m is None:
        return Classified(None, None, st, "code")
    group = m.lastgroup
    at = m.start()
    if group == "fn" and _GO_TYPE_BODY.search(s):
        return Classified(None, None, st, "code")  # `func f() <-chan struct{} {`: the `{` of the result's type
    if group == "fn":
        receiver = _GO_RECEIVER.match(masked, at)
        name = m.group("fn_n")
        if receiver is not None and s[at:].lstrip()[4:].lstrip().startswith("("):
            return Classified("method", f"{receiver.group(1)}.{name}", at, "code")
        return Classified("function", name, at, "code")
    if group == "ty":
        return Classified(m.group("ty_k"), m.group("ty_n"), at, "class")
    # `Name struct {` alone on its line: a type of a `type ( ... )` group (a field's anonymous struct
    # is in a struct's body, and `var ( ... )` groups are told by their keyword when in sight).
    opener = s.rfind("(", 0, at)
    grouped = _GO_TYPE_GROUP.search(s, max(0, opener - 40), opener + 1) is not None if opener >= 0 else None
    if grouped is None and ctx != "top":
        # Read from after the previous type's `}`: look back for an unclosed `type (` in the block.
        before = h.wider()
        last: re.Match[str] | None = None
        for last in _GO_TYPE_GROUP.finditer(before):  # noqa: B007 - the last one is wanted
            pass
        grouped = last is not None and before.count("(", last.end()) >= before.count(")", last.end())
    if not grouped and (grouped is False or ctx != "top"):
        return Classified(None, None, st, "code")
    return Classified(m.group("gty_k"), m.group("gty_n"), at, "class")


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


def rust_classify(h: HeaderText) -> Classified:
    s, st, parent = h.flat, h.statement, h.parent
    m = _RUST_DEFINITION.search(s, st)
    if m is None:
        return Classified(None, None, st, "code")
    group = m.lastgroup
    at = m.start()
    if group == "fn":
        if parent is not None and parent.kind in ("impl", "trait"):
            return Classified("method", qualified(parent.name, m.group("fn_n")), at, "code")
        return Classified("function", m.group("fn_n"), at, "code")
    if group == "impl":
        rest = m.group("impl_r")
        names = _RUST_IMPL_NAME.findall(rest)
        return Classified("impl", (names[-1] if names else None), at, "class")
    if group == "trait":
        return Classified("trait", m.group("trait_n"), at, "class")
    if group == "adt":
        return Classified(m.group("adt_k"), m.group("adt_n"), at, "class")
    if group == "mod":
        return Classified("module", m.group("mod_n"), at, "top")
    return Classified("macro", m.group("mac_n"), at, "code")


# -- C-like: C, C++, Objective-C, Java, Kotlin, Scala, Dart, C#, Swift, PHP ----------------------------


class _CLike(NamedTuple):
    """One C-like family's declarations: its keywords, and whether functions nest in code."""

    pattern: re.Pattern[str]
    local_functions: bool  # functions declared inside function bodies (C# local functions, Kotlin...)


def c_like_classifier(
    keywords: str, rest: str, modifiers: str, extra: str = "", local_functions: bool = False
) -> Classifier:
    """The classifier of a C-like language: `keywords` open type declarations (`class|struct`),
    followed by `rest`, after `modifiers`; `extra` adds alternatives (named groups) of its own."""
    attrs = r"(?:(?:@[\w.]+(?:\s*\(\s*\))?|\[\s*\]|#\[\s*\])\s*)*"
    type_token = (
        rf"(?:<\s*>\s*|(?!(?:{KEYWORDS_NOT_NAMES})\b)"
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
        rf"(?!(?:{KEYWORDS_NOT_NAMES})\b)(?P<fn_n>{name})[?!]?\s*(?:<\s*>\s*)?\(\s*\){suffix}(?:=\s*)?)"
        r")\s*\Z"
    )
    return partial(_c_classify, _CLike(pattern, local_functions))


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


def _c_classify(spec: _CLike, h: HeaderText) -> Classified:
    s, st, ctx, parent, masked = h.flat, h.statement, h.context, h.parent, h.masked
    m = spec.pattern.search(s, st)
    if m is None or not _c_statement_at(s, m.start()):
        return Classified(None, None, st, _c_body(s, st))
    group = m.lastgroup
    at = m.start()
    owner = parent.name if parent is not None and parent.kind in CLASS_LIKE else None
    if group == "kw":
        keyword = m.group("kw_k").split()[0]
        if keyword == "namespace":
            words = _FIRST_WORD.findall(m.group("kw_r"))
            return Classified("namespace", (re.sub(r"\s+", "", words[0]) if words else None), at, "top")
        words = _FIRST_WORD.findall(m.group("kw_r"))
        name = next((w for w in words if w not in ("class", "struct", "final", "sealed", "abstract")), None)
        return Classified(_KIND_OF_KEYWORD.get(keyword, "class"), name, at, "class")
    if group == "prop":
        if ctx == "code":
            return Classified(None, None, st, "code")
        return Classified("property", qualified(owner, m.group("prop_n")), at, "code")
    if group == "objc":
        return Classified("method", qualified(owner, m.group("objc_n")), at, "code")
    name = re.sub(r"\s+", "", masked[m.start("fn_n") : m.end("fn_n")])
    typed = bool(m.group("fn_t").strip() or m.group("fn_k"))
    if ctx == "code" and not (spec.local_functions and typed):
        return Classified(None, None, st, "code")
    # Where the parent is unknown (the scan started inside it), an untyped `name(args) {` in C is as
    # likely a macro over a block as a function.
    if ctx == "any" and not typed and not spec.local_functions and "::" not in name:
        return Classified(None, None, st, "code")
    kind = "method" if owner or "::" in name or ctx == "class" else "function"
    return Classified(kind, qualified(owner, name), at, "code")


_C_ANONYMOUS_CLASS = re.compile(r"\bnew\s+[\w$.]+\s*(?:<\s*>\s*)?\(\s*\)\s*\Z|\bobject\s*:[^;{}=]*\Z")
_C_EXTERN_BLOCK = re.compile(r"\bextern\s*\"\s*\"\s*\Z")


def _c_body(s: str, st: int) -> str:
    if _C_ANONYMOUS_CLASS.search(s, st):
        return "class"
    if _C_EXTERN_BLOCK.search(s, st):
        return "top"
    return "code"
