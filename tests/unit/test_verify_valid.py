"""The check before an edit never costs a correct answer (issue 36 item 2): valid code that an older
reading refused passes, and the same code broken is still caught."""

from __future__ import annotations

import sys

import pytest

from lsp_server.check.syntax import SyntaxProblem, syntax_check

BOM = "\ufeff"


def check(text: str, new: str, language: str, start: int = 0, end: int | None = None) -> SyntaxProblem | None:
    return syntax_check(text, start, len(text) if end is None else end, new, language).problem


def test_a_byte_order_mark_is_the_files_not_code() -> None:
    text = BOM + "import os\n\n\ndef f(x):\n    return g(x)\n"
    assert check(text, text.replace("g(x)", "g(x"), "python") is not None  # the whole file
    first = text.index("def f")
    assert check(text, "def f(x):\n    return g(x\n", "python", start=first) is not None  # a region after the mark
    head = text.index("\n") + 1
    assert check(text, BOM + "import os, (\n", "python", end=head) is not None  # the first line, the mark in it
    assert check(text, "import sys\n", "python", end=head) is None  # the mark dropped by the answer: no error
    ruby = BOM + "=begin\nend\n=end\ndef f\nend\n"  # `=begin` at the first column, after the mark
    assert check(ruby, ruby.replace("def f", "def g"), "ruby") is None
    assert check(ruby, ruby[: -len("end\n")], "ruby") is not None


# -- JSX/TSX text ---------------------------------------------------------------------------------------

JSX = "const Note = () => (\n  <p>\n    Hello {name}\n  </p>\n);\n"


def test_an_apostrophe_in_jsx_text_is_text_not_a_string() -> None:
    for language in ("javascriptreact", "typescriptreact", "javascript"):
        valid = JSX.replace("Hello {name}", "Don't go, {name}, it's late, isn't it")
        assert check(JSX, valid, language) is None
        assert check(JSX, valid.replace("{name}", "{name"), language) is not None  # a brace still counts
    # A keyword that takes an operand, right before a quote, still starts a string (minified code).
    minified = "function f(){return'{'}\n"
    assert check("", minified, "javascript") is None
    assert check("", "function f(){return'{}\n", "javascript") is not None


def test_a_jsx_element_closed_after_a_brace_is_no_regex() -> None:
    # `panel={<Step n={1} />} />`: the `/` after `} ` closes an element (found in blueprintjs's stories).
    elements = "      <S panel={<P n={1} />} />\n      <S a={<P n={2}/>}/>\n"
    tsx = f"function D() {{\n  return (\n    <M>\n{elements}    </M>\n  );\n}}\n"
    assert check("", tsx, "typescriptreact") is None
    assert check("", tsx.replace("n={2}", "n={2"), "typescriptreact") is not None


def test_an_apostrophe_after_a_name_is_text_only_between_letters() -> None:
    # A string misaligned by a dropped quote still opens one: `f("a, "b")` is caught.
    code = 'f("a", "b");\n'
    assert check(code, code.replace('"a"', '"a'), "javascript") is not None


def test_minified_ifs_nested_without_braces_may_take_two_elses() -> None:
    # `if(a)if(b){x()}else{y()}else z()`: the outer `if` has no braces (js-yaml.min.js).
    minified = "function f(a,b){if(a)if(b){x()}else{y()}else z()}\n"
    assert check("", minified, "javascript") is None
    # A doubled `} else {` as a model writes it is still caught (test_verify's JavaScript cases).


# -- a regular expression where an operand is expected ---------------------------------------------------

REGEX_AFTER = [
    "const isEnd = (line) => /^\\s*\\}/.test(line);\n",
    "function* g() {\n  yield /\\}/;\n}\n",
    "async function h() {\n  await /\\{/;\n}\n",
    "if (a) b();\nelse /\\}/.test(c);\n",
    "for (const m of /\\{/g.exec(s)) {}\n",
    "void /\\}/;\n",
    "x instanceof /\\}/;\n",
    "typeof /\\}/;\n",
    "switch (x) {\n  case /\\}/.source: break;\n}\n",
    "do /\\{/.test(x);\nwhile (0);\n",
    "throw /\\{/;\n",
    "export default /\\{/;\n",
    "x = a - /\\}/.source.length * 2;\n",
    "x = !/\\}/.test(y) && ~/\\{/.lastIndex;\n",
    "x = a > /\\{/.lastIndex ? 1 : 2;\n",
    "x = a ?? /\\{/;\n",
    "x = y in /\\}/;\n",
    "x = new /\\{/.constructor();\n",
    "return/\\{/.test(x);\n",
]


def test_a_regular_expression_after_any_token_that_leaves_an_operand_to_come_is_a_regex() -> None:
    for code in REGEX_AFTER:
        assert check("", code, "javascript") is None, code


def test_a_slash_after_an_operand_is_still_division() -> None:
    code = "x = a++ / 2; y = b / (c\n);\nz = arr[0] / 3 + f() / 4;\n"
    assert check("", code, "javascript") is None
    assert check("", code.replace("(c\n)", "(c\n"), "javascript") is not None


# -- Ruby interpolation ----------------------------------------------------------------------------------


def test_ruby_strings_and_braces_inside_an_interpolation_end_with_it() -> None:
    ruby = "def show(h, a)\n  puts 'x'\nend\n"
    for line in (
        '"#{h["k"]} and #{h[\'j\']}"',
        '"#{a ? "x" : "y"} end"',
        '"#{a.map { |x| "#{x["k"]}}" }.join(", ")}"',
        '"#{"}"} {"',
    ):
        new = ruby.replace("puts 'x'", f"puts {line}")
        assert check(ruby, new, "ruby") is None, line
    assert check(ruby, ruby.replace("puts 'x'", 'if "#{a ? "x" : "y"}"'), "ruby") is not None  # an `if` left open


def test_ruby_special_globals_quote_nothing() -> None:
    # `$'` and `$`` (the text after and before a match: rdoc's) once opened a string that hid an `end`.
    ruby = "def split(text)\n  if text =~ /#/ then\n    before, after = $`, $'\n  end\n  $\" << $-w.to_s\nend\n"
    assert check("", ruby, "ruby") is None
    assert check("", ruby.replace("  end\n", ""), "ruby") is not None


# -- Python newer than the server's ----------------------------------------------------------------------

PY = "import os\n\n\ndef f(x):\n    return x\n"
AT = PY.index("def f")
GRAMMAR = f"not checked (Python {sys.version_info.major}.{sys.version_info.minor}'s grammar)"
NEWER = [
    "def f[T](x: T) -> T:\n    return x\n",
    "def f[T: (int, str) = int](x: T) -> T:\n    return x\n",
    "def f(x):\n    type Pair[K] = tuple[K, K]\n    return x\n",
    "def f(x):\n    class Box[T]:\n        item: T\n    return Box\n",
    'def f(x):\n    return f"{x["k"]} {"\\n".join(x)}"\n',
    "def f(x):\n    return f'{x # the value\n    }'\n",
    "def f(x):\n    try:\n        return x\n    except KeyError, IndexError:\n        return None\n",
    "def f(x):\n    return t'{x}!'\n",
    'def f(x):\n    return fr"{x["k"]}\\d \\{{"\n',  # a raw f-string: its backslashes escape no brace
    "def f(x):\n    return f'{x:{w:{p}}}' + f'{x!r  }'\n",  # a spec nested three deep, a space after `!r`
]


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the running grammar reads them all")
def test_python_newer_than_the_servers_is_not_refused_and_the_check_says_so() -> None:
    for new in NEWER:
        found = syntax_check(PY, AT, len(PY), new, "python")
        assert found.problem is None, (new, found.problem)
        assert found.checked in (GRAMMAR, "python"), new  # "python": a construct this Python reads
    unreadable = [new for new in NEWER if not _compiles(new)]  # on 3.11 the first; on 3.13 t-strings
    assert unreadable, "every construct reads here: add one newer than this Python"
    assert syntax_check(PY, AT, len(PY), unreadable[0], "python").checked == GRAMMAR
    whole = unreadable[0] + "\n\n" + PY
    assert syntax_check(PY, 0, len(PY), whole, "python").checked == GRAMMAR  # the whole file


def _compiles(source: str) -> bool:
    try:
        compile(source, "<newer>", "exec")
    except SyntaxError:
        return False
    return True


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the running grammar reads them all")
def test_an_error_beside_or_inside_a_newer_construct_is_still_caught() -> None:
    for broken in (
        "def f[T](x: T) -> T:\n    return (x\n",  # the error is not the construct's
        "def f[T](x: T -> T:\n    return x\n",  # the construct's own signature broken
        'def f(x):\n    return f"{x["k"] +}"\n',  # an f-string field that parses in no grammar
        "def f(x):\n    try:\n        return x\n    except KeyError, IndexError as e:\n        return e\n",
        "def f(x):\n    type = = 1\n",
        "def f(x):\n    return x y\n",
    ):
        found = syntax_check(PY, AT, len(PY), broken, "python")
        assert found.problem is not None and found.checked == "python", broken


def test_code_added_at_the_end_of_a_python_document_is_checked_not_a_crash() -> None:
    # An insertion after the last line (a new definition appended) once raised IndexError in the check.
    for text in ("x = 1\n", "x = 1", ""):
        at = len(text)
        sep = "" if text.endswith("\n") or not text else "\n"
        assert check(text, sep + "def f():\n    pass\n", "python", start=at, end=at) is None
        found = check(text, sep + "def f(:\n    pass\n", "python", start=at, end=at)
        assert found is not None and found.line == text.count("\n") + 1 + (sep == "\n"), text


def test_a_line_at_column_0_inside_a_string_does_not_split_the_statements_read() -> None:
    # The statements around an insertion start at column-0 lines; ones inside triple-quoted strings
    # once cut the class in two, and a valid method added between them was refused.
    method = '    def test(self):\n        expr = """\nx = (\n    f" {test(t)}"\n)"""\n        return expr\n'
    above = 'class T:\n    def a(self):\n        s = """\n"""\n        return s\n\n'
    below = '\n    def b(self):\n        s = """\ny = 2\n"""\n        return s\n'
    text = above + below
    assert check(text, method, "python", start=len(above), end=len(above)) is None
    broken = method.replace("return expr", "return (expr")
    assert check(text, broken, "python", start=len(above), end=len(above)) is not None
