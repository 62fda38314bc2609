"""The check before an edit (check/syntax.py, check/brackets.py, check/verify.py): a syntax error an
answer brings is found, with its line and the parser's words; one the document had already is not
the answer's; a language nothing reads is said to be unchecked."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lsp_server.check.syntax import SyntaxProblem, syntax_check
from lsp_server.check.verify import Problem, Verification, refused_message, repair_instruction, verify_answer
from lsp_server.config.schema import RefactorSettings

SOURCE = Path(textwrap.__file__).read_text(encoding="utf-8")  # code no one here wrote


def region_of(text: str, first: str, last: str) -> tuple[int, int]:
    """[start, end) from the line holding `first` through the line holding `last`."""
    start = text.rfind("\n", 0, text.index(first)) + 1
    end = text.index("\n", text.index(last, start)) + 1
    return start, end


METHOD = region_of(SOURCE, "    def _munge_whitespace(", "        return text\n\n\n    def _split(")


def check(text: str, span: tuple[int, int], new: str, language: str = "python") -> SyntaxProblem | None:
    return syntax_check(text, span[0], span[1], new, language).problem


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_a_method_of_the_stdlib_unchanged_or_validly_changed_passes() -> None:
    old = SOURCE[METHOD[0] : METHOD[1]]
    assert syntax_check(SOURCE, *METHOD, old, "python").checked == "python"
    assert check(SOURCE, METHOD, old) is None
    assert check(SOURCE, METHOD, old.replace("text", "content")) is None


def test_an_unclosed_parenthesis_is_found_at_its_line_in_the_parsers_words() -> None:
    old = SOURCE[METHOD[0] : METHOD[1]]
    call = "text = text.expandtabs(self.tabsize)"
    assert call in old
    problem = check(SOURCE, METHOD, old.replace(call, "text = text.expandtabs(self.tabsize"))
    assert problem == SyntaxProblem(line_of(SOURCE, call), "'(' was never closed")


def test_a_line_indented_one_step_off_is_found() -> None:
    old = SOURCE[METHOD[0] : METHOD[1]]
    line = "            text = text.expandtabs(self.tabsize)\n"
    problem = check(SOURCE, METHOD, old.replace(line, line[4:]))
    assert problem == SyntaxProblem(
        line_of(SOURCE, line), f"expected an indented block after 'if' statement on line {line_of(SOURCE, line) - 1}"
    )


def test_line_numbers_in_the_message_are_the_documents() -> None:
    old = SOURCE[METHOD[0] : METHOD[1]]
    problem = check(SOURCE, METHOD, old.replace('        """\n        if self.expand', "        if self.expand"))
    assert problem is not None
    assert problem.line == line_of(SOURCE, "    def _munge_whitespace(") + 1  # where the docstring opens
    # Detected at the region's last line, one line up in the document the answer leaves (it lost a line).
    detected = line_of(SOURCE, "        return text\n\n\n    def _split(") - 1
    assert problem.message == f"unterminated triple-quoted string literal (detected at line {detected})"


def test_a_broken_file_takes_a_valid_answer_and_refuses_a_broken_one() -> None:
    broken = SOURCE.replace("import re\n", "import re(\n", 1)  # the user is in the middle of an edit, far above
    span = region_of(broken, "    def _munge_whitespace(", "        return text\n\n\n    def _split(")
    old = broken[span[0] : span[1]]
    assert check(broken, span, old.replace("text", "content")) is None
    assert check(broken, span, old.replace("self.tabsize)", "self.tabsize")) is not None


def test_a_region_broken_before_is_not_the_answers_fault() -> None:
    text = "def f(x):\n    return g(x\n\n\ndef h():\n    pass\n"
    span = region_of(text, "def f", "return g")
    assert check(text, span, "def f(y):\n    return g(y\n") is None  # still broken: it was
    assert check(text, span, "def f(y):\n    return g(y)\n") is None  # mended


def test_a_selection_that_is_no_whole_statement_is_read_in_its_top_level_statement() -> None:
    text = "def f(items):\n    for item in items:\n        if item:\n            print(item)\n    return items\n"
    span = region_of(text, "        if item", "            print")  # an `if` and its body, at depth 2
    assert check(text, span, "        if item:\n            print(item, end='')\n") is None
    problem = check(text, span, "        if item\n            print(item)\n")
    assert problem is not None and problem.line == 3


def test_when_the_file_does_not_parse_around_the_region_errors_are_compared_by_where_they_stop() -> None:
    # The statement around the selection is broken after it (by the user): an answer that leaves the
    # parser stopping at the same place brings nothing; one that stops it inside the new text does.
    text = "def f(items):\n    x = 1\n    y = 2\n    z = (\n"
    span = region_of(text, "    x = 1", "    x = 1")
    assert check(text, span, "    x = 10\n") is None
    problem = check(text, span, "    x = [1\n")
    assert problem is not None and problem.line == 2


def test_python_errors_without_a_line_still_count() -> None:
    text = "def f():\n    return 1\n"
    problem = check(text, (0, len(text)), "def f():\n    return '\0'\n")
    assert problem is not None


# -- the brace languages and the `end` ones ----------------------------------------------------------

JS = (
    "function total(items) {\n  if (items.length) {\n    return sum(items, `${x}`);\n"
    "  } else {\n    return 0;\n  }\n}\n"
)


@pytest.mark.parametrize(
    ("new", "line", "message"),
    [
        (JS.replace("sum(items, `${x}`)", "sum(items, `${x}`"), 3, "'(' is never closed"),
        (JS.replace("return 0;", "return '0;"), 5, "unterminated string"),
        (JS.replace("`${x}`", "`${x}"), 3, "unterminated template literal"),
        (JS.replace("  } else {\n", "  } else {\n  } else {\n"), 5, "'else' follows an 'else' block"),
        (JS[: -len("}\n")], 1, "'{' is never closed"),
        (JS.replace("  }\n}", "  }\n}\n}"), 8, "unmatched '}'"),
        (JS.replace("return 0;", "return 0; /* gone"), 5, "unterminated comment"),
    ],
)
def test_a_javascript_answer_that_breaks_its_brackets_strings_or_else_is_found(
    new: str, line: int, message: str
) -> None:
    assert check(JS, (0, len(JS)), new, "javascript") == SyntaxProblem(line, message)


def test_brackets_in_strings_comments_templates_and_regexes_do_not_count() -> None:
    new = JS.replace("return 0;", "return /[(]/.test('{') ? `}` : 0; // )")
    assert syntax_check(JS, 0, len(JS), new, "javascript").checked == "brackets"
    assert check(JS, (0, len(JS)), new, "javascript") is None


def test_a_selection_that_cuts_a_block_must_leave_it_open_as_it_was() -> None:
    head = JS[: JS.index("    return sum")]  # `function total(items) {` and `if (...) {`: two left open
    assert check(JS, (0, len(head)), head.replace("items", "values"), "javascript") is None
    problem = check(JS, (0, len(head)), head + "  }\n", "javascript")
    assert problem is not None and "the region left '{' open for the code after it" in problem.message


def test_other_brace_languages_use_their_own_lexers() -> None:
    rust = "fn f<'a>(x: &'a str) -> usize {\n    let s = r#\"{\"#;\n    x.len()\n}\n"
    assert check(rust, (0, len(rust)), rust, "rust") is None
    assert check(rust, (0, len(rust)), rust.replace("x.len()", "x.len("), "rust") is not None
    go = "func f() string {\n\treturn `{`\n}\n"
    assert check(go, (0, len(go)), go.replace("\n}\n", "\n"), "go") == SyntaxProblem(1, "'{' is never closed")


def test_ruby_blocks_must_close_as_before() -> None:
    ruby = "def total(items)\n  items.each do |item|\n    puts item\n  end\nend\n"
    assert syntax_check(ruby, 0, len(ruby), ruby, "ruby").checked == "blocks"
    problem = check(ruby, (0, len(ruby)), ruby.replace("  end\n", ""), "ruby")
    assert problem is not None and problem.message == "'def' is never closed by an 'end'"


def test_a_language_nothing_reads_is_not_checked() -> None:
    found = syntax_check("a: 1\n", 0, 5, "a: [\n", "yaml")
    assert (found.checked, found.problem) == ("", None)


# -- the verification as the engine runs it ---------------------------------------------------------


def verify(text: str, new: str, language: str, **settings: Any) -> Verification:
    return asyncio.run(verify_answer(text, 0, len(text), new, language, RefactorSettings(**settings)))


def test_the_stats_say_what_read_the_answer() -> None:
    assert verify(JS, JS, "javascript").checked == "brackets"
    assert verify("a\n", "b\n", "yaml").checked == "not checked"
    assert verify("x = 1\n", "x = (\n", "python", verify="off").problem is None


CHECKER = [
    sys.executable,
    "-c",
    "import sys; t = sys.stdin.read(); print('x.cfg:2: no TODO allowed') if 'TODO' in t else 0; sys.exit('TODO' in t)",
]


def test_your_checker_reads_the_new_document_and_its_first_lines_are_the_problem() -> None:
    found = verify("a = 1\nb = 2\n", "a = 1\nb = 2  # TODO\n", "ini", checkers={"ini": CHECKER})
    assert found.checked == Path(sys.executable).name  # what read it: nothing but your checker
    assert found.problem == Problem(2, "x.cfg:2: no TODO allowed", f"problem {Path(sys.executable).name} reports")


def test_your_checker_failing_on_the_code_as_it_was_does_not_refuse_the_answer() -> None:
    found = verify("a = 1  # TODO\n", "a = 2  # TODO\n", "ini", checkers={"ini": CHECKER})
    assert found.problem is None and "fails on the code as it was too" in found.notes[0]


def test_a_checker_that_cannot_run_says_so_and_refuses_nothing() -> None:
    found = verify("a\n", "b\n", "ini", checkers={"ini": ["/nonexistent/checker"]})
    assert (found.checked, found.problem) == ("not checked", None)
    assert "could not run /nonexistent/checker" in found.notes[0]


def test_the_repair_instruction_quotes_the_error_and_the_lines_around_it() -> None:
    answer = "def f(x):\n    y = g(x\n    return y\n"
    text = repair_instruction(Problem(12, "'(' was never closed"), "rename a to b", answer, 11)
    assert "your answer to this instruction: rename a to b" in text
    assert "syntax error that the code did not have before at line 2 of the region: '(' was never closed" in text
    assert ">    2 |     y = g(x\n" in text and "     1 | def f(x):\n" in text
    assert text.endswith("Write the region again with that fixed, and change nothing else.")


def test_the_refusal_names_the_line_and_the_parsers_words() -> None:
    first, last = Problem(12, "'(' was never closed"), Problem(14, "expected ':'")
    assert "'(' was never closed at line 12; nothing was applied" in refused_message(first, None, 1)
    assert "refactor.repairs" in refused_message(first, None, 0)
    again = refused_message(last, first, 1)
    assert "('(' was never closed at line 12)" in again and "still has one: expected ':' at line 14" in again
