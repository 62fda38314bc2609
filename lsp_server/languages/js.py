"""JavaScript and TypeScript headers: which blocks are functions, methods, classes, interfaces, enums
and namespaces. What a block that is no definition holds (an object literal's members, or code)
matters too: it decides whether `name() {` inside it is a method."""

from __future__ import annotations

import re

from .headers import Classified, HeaderText, plain_name, qualified

_JS_KEYWORD = re.compile(
    "if|for|while|switch|catch|with|function|return|typeof|else|do|try|finally|new|await|yield|import|void"
    "|delete|in|of|instanceof|case|throw|class|const|let|var|super"
)


# An optional `: Type` (groups emptied). Possessive: a type holds no bare `=`, so it ends at the `=`
# of an initializer or the `{` of a body, and the search never backtracks into it.
TS_TYPE = r"(?:\s*:(?:=>|[^;{}()=\n]++|\n(?=\s*[|&.,<>?])|\(\s*\)|\{\s*\})*+)?"
TS_RETURN = r"(?:\s*:(?:[^;{}()=\n]++|\n(?=\s*[|&.,<>?])|\(\s*\)|\{\s*\})*+)?"  # before an arrow's `=>`
_JS_FUNCTION_VALUE = (
    r"(?:async\s+)?(?:function\b\s*\*?\s*[\w$]*\s*(?:<\s*>\s*)?\(\s*\)"
    + TS_TYPE
    + r"|(?:(?:<\s*>\s*)?(?:\(\s*\)|[\w$]+)"
    + TS_RETURN
    + r"\s*=>\s*(?:async\s+)?)+)"
)
_JS_DECORATORS = r"(?:@[\w$.]+(?:\s*\(\s*\))?\s*)*"
JS_MEMBER_NAME = r"(?:#?[\w$]+|'\s*'|\"\s*\"|\[\s*\]|\d+)"
_JS_DEFINITION = re.compile(
    r"(?<![\w$.#@])(?=\S)(?:"
    r"(?P<cls>" + _JS_DECORATORS + r"(?:(?:export|default|declare|abstract)\s+)*class\b(?:\s+(?P<cls_n>[\w$]+))?"
    r"[^;{}=]*+)"
    r"|(?P<ifc>(?:(?:export|default|declare)\s+)*interface\s+(?P<ifc_n>[\w$]+)[^;{}=]*+)"
    r"|(?P<enm>(?:(?:export|declare|const)\s+)*enum\s+(?P<enm_n>[\w$]+)\s*)"
    r"|(?P<nsp>(?:(?:export|declare)\s+)*(?:namespace|module)\s+(?P<nsp_n>[\w$.]+|'\s*'|\"\s*\")\s*"
    r"|(?:declare\s+)?global\s*)"
    r"|(?P<fun>(?:(?:export|default|declare|async)\s+)*function\b\s*\*?\s*(?P<fun_n>[\w$]+)?\s*(?:<\s*>\s*)?"
    r"\(\s*\)" + TS_TYPE + r")"
    r"|(?P<var>(?:(?:export|declare)\s+)*(?:const|let|var)\s+(?P<var_n>[\w$]+)\s*!?" + TS_TYPE + r"\s*=\s*"
    r"(?:" + _JS_FUNCTION_VALUE + r"|(?P<var_c>class\b[^;{}=]*+)))"
    r"|(?P<asg>" + _JS_DECORATORS + r"(?:(?:public|private|protected|static|readonly|override|declare|accessor)\s+)*"
    r"(?P<asg_n>#?[\w$]+(?:\s*\.\s*#?[\w$]+|\s*\[\s*\])*|\[\s*\]|'\s*'|\"\s*\")\s*[?!]?"
    + TS_TYPE
    + r"\s*=\s*"
    + _JS_FUNCTION_VALUE
    + r")"
    r"|(?P<pa>(?P<pa_n>" + JS_MEMBER_NAME + r")\s*:\s*" + _JS_FUNCTION_VALUE + r")"
    r"|(?P<mth>" + _JS_DECORATORS + r"(?:(?:public|private|protected|static|readonly|override|abstract|async"
    r"|declare|accessor|get|set)\s+)*\*?\s*(?!function\b)(?P<mth_n>" + JS_MEMBER_NAME + r")"
    r"\s*[?!]?\s*(?:<\s*>\s*)?\(\s*\)" + TS_TYPE + r")"
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


def js_classify(h: HeaderText) -> Classified:
    kind, name, at, inner = _classify(h.flat, h.statement, h.context)
    if kind == "method" and h.parent is not None and h.parent.kind in ("class", "interface"):
        name = qualified(h.parent.name, name)
    return Classified(kind, name, at, inner)


def _classify(s: str, st: int, ctx: str) -> tuple[str | None, str | None, int, str]:
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
        return None, None, st, js_body(s, st, ctx)
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
        return "method", plain_name(m.group("pa_n")), at, "code"
    return "method", plain_name(m.group("mth_n")), at, "code"


_JS_CASE_OR_LABEL = re.compile(r"\s*(?:case\b|default\s*:|[\w$]+\s*:\s*\Z)")


def js_body(s: str, st: int, ctx: str) -> str:
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
