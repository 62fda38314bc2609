"""The check before an edit never costs a correct answer (issue 36 item 2): valid code that an older
reading refused passes, and the same code broken is still caught."""

from __future__ import annotations

from lsp_server.scope.syntax import SyntaxProblem, syntax_check

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
