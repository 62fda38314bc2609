"""Scope: which text a refactor rewrites, for a selection, a cursor, or nothing."""

from __future__ import annotations

import pytest

from lsp_server.regions import (
    Region,
    choose_region,
    enclosing_block,
    find_instruction_comment,
    is_instruction_comment,
    line_span,
    selection_lines,
    split_lines,
)


def region_at(text: str, needle: str, mode: str = "auto") -> tuple[str, str]:
    """(kind, rewritten text) for a cursor placed at the start of `needle`."""
    offset = text.index(needle)
    region = choose_region(text, offset, offset, mode)  # type: ignore[arg-type]
    return region.kind, text[region.start : region.end]


PYTHON = '''import os


class Greeter:
    """Says hello."""

    greeting = "hi"

    @staticmethod
    @cache
    def hello(name):
        if name:
            return f"hello {name}"
        return "hello"

    def bye(self):
        return "bye"


def main():
    print(Greeter.hello("x"))
'''

HELLO = """    @staticmethod
    @cache
    def hello(name):
        if name:
            return f"hello {name}"
        return "hello"
"""

GREETER = PYTHON[PYTHON.index("class Greeter") : PYTHON.index("\n\n\ndef main")] + "\n"


def test_split_lines_keeps_every_terminator() -> None:
    assert split_lines("a\nb\r\nc\rd") == ["a\n", "b\r\n", "c\r", "d"]
    assert split_lines("") == []
    assert split_lines("\n\n") == ["\n", "\n"]


# -- selections ----------------------------------------------------------------------------------


def test_selection_is_widened_to_whole_lines() -> None:
    text = "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n"
    start = text.index("ta = 2")  # inside "beta"
    end = text.index("mma")  # inside "gamma"
    region = choose_region(text, start, end)
    assert region.kind == "selection"
    assert text[region.start : region.end] == "beta = 2\ngamma = 3\n"


def test_selection_ending_at_column_zero_leaves_that_line_out() -> None:
    text = "alpha = 1\nbeta = 2\ngamma = 3\n"
    start = text.index("beta")
    end = text.index("gamma")  # column 0 of the next line: editors select whole lines like this
    region = choose_region(text, start, end)
    assert text[region.start : region.end] == "beta = 2\n"
    assert selection_lines(text, start, end) == (1, 1)


def test_selection_of_the_last_line_without_newline() -> None:
    text = "a = 1\nb = 2"
    region = choose_region(text, text.index("b"), len(text))
    assert text[region.start : region.end] == "b = 2"


def test_selection_keeps_crlf_terminators() -> None:
    text = "a = 1\r\nb = 2\r\nc = 3\r\n"
    region = choose_region(text, text.index("b"), text.index("b") + 1)
    assert text[region.start : region.end] == "b = 2\r\n"


def test_line_span_clamps_to_the_file() -> None:
    text = "one\ntwo\nthree\n"
    assert line_span(text, 1, 1) == (4, 8)
    assert line_span(text, 1, 99) == (4, len(text))
    assert line_span("", 0, 3) == (0, 0)


def test_selection_mode_with_a_cursor_takes_the_cursor_line() -> None:
    assert region_at(PYTHON, "return f", "selection") == ("selection", '            return f"hello {name}"\n')


def test_file_mode_always_takes_everything() -> None:
    assert region_at(PYTHON, "return f", "file") == ("file", PYTHON)
    assert choose_region("", 0, 0) == Region(0, 0, "file")


# -- a cursor: the enclosing definition ------------------------------------------------------------


def test_cursor_in_python_method_takes_the_method_with_its_decorators() -> None:
    assert region_at(PYTHON, "return f") == ("block", HELLO)
    assert region_at(PYTHON, 'return "hello"') == ("block", HELLO)


def test_cursor_on_a_method_header() -> None:
    assert region_at(PYTHON, "def bye") == ("block", '    def bye(self):\n        return "bye"\n')


def test_cursor_in_class_body_outside_methods_takes_the_class() -> None:
    assert region_at(PYTHON, "greeting =") == ("block", GREETER)
    assert region_at(PYTHON, "class Greeter") == ("block", GREETER)


def test_cursor_in_top_level_function() -> None:
    assert region_at(PYTHON, "print(Greeter") == ("block", 'def main():\n    print(Greeter.hello("x"))\n')


def test_cursor_on_top_level_statement_takes_the_file() -> None:
    assert region_at(PYTHON, "import os") == ("file", PYTHON)
    assert enclosing_block(PYTHON, 0) is None


def test_cursor_on_blank_line_between_definitions_takes_the_next_one() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    assert region_at(text, "\ndef b") == ("block", "def b():\n    return 2\n")


def test_nested_function_takes_the_innermost_definition() -> None:
    text = "def outer():\n    def inner(x):\n        return x * 2\n    return inner\n"
    assert region_at(text, "return x") == ("block", "    def inner(x):\n        return x * 2\n")
    # The outer function is the whole file: that is what the region says.
    assert region_at(text, "return inner") == ("file", text)


JAVASCRIPT = """import x from "y";

export function add(a, b) {
  const c = a + b;
  return c;
}

const mul = (a, b) => {
  return a * b;
};
"""

TYPESCRIPT = """interface Props {
  name: string;
}

export default async function load(props: Props): Promise<string> {
  const r = await fetch(props.name);
  return r.text();
}
"""

GO = """package main

import "fmt"

func (s *Server) Sum(xs []int) int {
\ttotal := 0
\tfor _, x := range xs {
\t\ttotal += x
\t}
\treturn total
}

func main() {
\tfmt.Println("hi")
}
"""

RUST = """use std::fmt;

#[derive(Debug, Clone)]
pub struct Point {
    x: i32,
    y: i32,
}

impl Point {
    /// Makes one.
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }
}
"""


@pytest.mark.parametrize(
    ("text", "cursor", "expected"),
    [
        (JAVASCRIPT, "const c", "export function add(a, b) {\n  const c = a + b;\n  return c;\n}\n"),
        (JAVASCRIPT, "return a * b", "const mul = (a, b) => {\n  return a * b;\n};\n"),
        (TYPESCRIPT, "await fetch", TYPESCRIPT[TYPESCRIPT.index("export default") :]),
        (TYPESCRIPT, "name: string", "interface Props {\n  name: string;\n}\n"),
        (GO, "total += x", GO[GO.index("func (s") : GO.index("\nfunc main")]),
        (GO, "fmt.Println", 'func main() {\n\tfmt.Println("hi")\n}\n'),
        (RUST, "y: i32", "#[derive(Debug, Clone)]\npub struct Point {\n    x: i32,\n    y: i32,\n}\n"),
        (
            RUST,
            "Point { x, y }",
            "    /// Makes one.\n    pub fn new(x: i32, y: i32) -> Self {\n        Point { x, y }\n    }\n",
        ),
    ],
    ids=["js-function", "js-arrow", "ts-async-export", "ts-interface", "go-method", "go-func", "rust-attr", "rust-fn"],
)
def test_brace_languages_take_the_block_with_its_closing_brace(text: str, cursor: str, expected: str) -> None:
    assert region_at(text, cursor) == ("block", expected)


def test_brace_block_without_indentation_extends_to_the_matching_brace() -> None:
    text = "int main() {\n    if (x) {\nreturn 1;\n}\n    return 0;\n}\n\nint other;\n"
    kind, region = region_at(text, "if (x)")
    assert kind == "block"
    assert region == "int main() {\n    if (x) {\nreturn 1;\n}\n    return 0;\n}\n"


# -- instruction comments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "instruction"),
    [
        ("    # refactor-lsp: use a list comprehension\n", "use a list comprehension"),
        ("  // refactor-lsp: make it async\n", "make it async"),
        ("-- refactor-lsp: use a CTE\n", "use a CTE"),
        ("/* refactor-lsp: inline the helper */\n", "inline the helper"),
        ("/** refactor-lsp: add null checks */\n", "add null checks"),
        ("<!-- refactor-lsp: use semantic tags -->\n", "use semantic tags"),
        (";; refactor-lsp: use let*\n", "use let*"),
        ("% refactor-lsp: use align\n", "use align"),
        ("(* refactor-lsp: use pattern matching *)\n", "use pattern matching"),
        ("\t#refactor-lsp:rename x to y\r\n", "rename x to y"),
    ],
)
def test_instruction_comment_in_many_comment_styles(line: str, instruction: str) -> None:
    text = "first()\n" + line + "last()\n"
    comment = find_instruction_comment(text, Region(0, len(text), "file"))
    assert comment is not None
    assert comment.instruction == instruction
    assert text[comment.start : comment.end] == line  # the whole line, terminator included
    assert is_instruction_comment(line)


@pytest.mark.parametrize(
    "line",
    [
        'print("# refactor-lsp: not a comment")\n',
        "x = 1  # refactor-lsp: trailing comments do not count\n",
        "# refactor-lsp:\n",
        "# refactor lsp: missing the marker\n",
    ],
)
def test_not_an_instruction_comment(line: str) -> None:
    text = "first()\n" + line + "last()\n"
    assert find_instruction_comment(text, Region(0, len(text), "file")) is None


def test_instruction_comment_outside_the_region_is_not_found() -> None:
    text = "# refactor-lsp: rename a to b\n\ndef f():\n    return a\n"
    region = choose_region(text, text.index("return"), text.index("return"))
    assert text[region.start : region.end] == "def f():\n    return a\n"
    assert find_instruction_comment(text, region) is None
    inside = find_instruction_comment(text, Region(0, len(text), "file"))
    assert inside is not None and inside.instruction == "rename a to b"


def _block_text(source: str, needle: str) -> str:
    from lsp_server.regions import choose_region

    offset = source.index(needle)
    region = choose_region(source, offset, offset)
    return source[region.start : region.end]


def test_cursor_on_a_decorator_takes_the_decorated_method() -> None:
    source = "class A:\n    @cache\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n"
    assert _block_text(source, "@cache") == "    @cache\n    def m(self):\n        return 1\n"


def test_js_and_ts_class_methods_are_definitions() -> None:
    source = (
        "class Foo {\n  bar() {\n    if (x) {\n      return 1;\n    }\n  }\n\n"
        "  async baz(x): Promise<number> {\n    return x;\n  }\n}\n"
    )
    assert _block_text(source, "return 1") == "  bar() {\n    if (x) {\n      return 1;\n    }\n  }\n"
    assert _block_text(source, "return x") == "  async baz(x): Promise<number> {\n    return x;\n  }\n"


def test_java_package_private_method_is_a_definition_but_a_for_loop_is_not() -> None:
    source = (
        "class K {\n    int size(List<String> xs) throws IOException {\n        for (String x : xs) {\n"
        "            count++;\n        }\n        return count;\n    }\n}\n"
    )
    assert _block_text(source, "count++").startswith("    int size(")
