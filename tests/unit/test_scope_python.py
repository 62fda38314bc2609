"""Scope in Python: the exact definition around the cursor, from the syntax tree or, when the buffer
does not parse, from the scan. Each case is a pattern that used to send the whole class."""

from __future__ import annotations

import pytest

from lsp_server.regions import choose_region
from lsp_server.regions.python import find_python_definition

BLACK = '''import pytest


class Client:
    """A client."""

    timeout = 10

    def send(
        self,
        request: Request,
        *,
        retries: int = 3,
    ) -> Response:
        for _ in range(retries):
            response = self._send(request)
        return response

    # Kept for callers of 1.x.
    @pytest.mark.parametrize(
        "value",
        [
            1,
            2,
        ],
    )
    @staticmethod
    def check(value):
        assert value

    async def fetch(self, url):
        async with self.session.get(url) as response:
            return await response.text()

    class Options:
        def merged(self, other):
            def pick(a, b):
                return b if b is not None else a

            return pick(self, other)

    def render(self):
        template = """
def not_a_function():
    {braces} and 'quotes
"""
        # a comment with def inside: def nope():
        return template.format(braces="{}")


if __name__ == "__main__":
    main()
    print("done")
'''


def lines_of(needle: str, text: str = BLACK) -> int:
    return text[: text.index(needle)].count("\n")


def span(needle: str, text: str = BLACK) -> tuple[int, int, str, str | None]:
    found = find_python_definition(text, lines_of(needle, text))
    assert found is not None
    return found.first_line, found.last_line, found.kind, found.name


def line(needle: str, text: str = BLACK) -> int:
    return lines_of(needle, text)


SEND = (line("    def send("), line("        return response"), "method", "Client.send")
CHECK = (line("    # Kept for"), line("        assert value"), "method", "Client.check")


@pytest.mark.parametrize(
    ("cursor", "expected"),
    [
        ("    def send(", SEND),  # the signature's first line
        ("        request: Request,", SEND),  # inside a signature black split over several lines
        ("    ) -> Response:", SEND),
        ("        for _ in range", SEND),  # the first body line
        ("        return response", SEND),  # the last line
        ('        "value",', CHECK),  # inside a multi-line decorator
        ("    @staticmethod", CHECK),  # on a decorator line
        ("        assert value", CHECK),  # the body: decorators and the comment above still included
        ("    # Kept for", CHECK),  # the leading comment block belongs to the definition
    ],
)
def test_black_formatted_methods_are_found_exactly(cursor: str, expected: tuple) -> None:
    assert span(cursor) == expected


def test_async_methods_nested_classes_and_nested_functions() -> None:
    fetch = (line("    async def fetch"), line("            return await"), "method", "Client.fetch")
    assert span("            return await") == fetch
    merged = (line("        def merged"), line("            return pick(self"), "method", "Client.Options.merged")
    assert span("            return pick(self") == merged
    assert span("            def pick") == (
        line("            def pick"),
        line("                return b if"),
        "function",
        "Client.Options.merged.pick",
    )
    options = (line("    class Options"), line("            return pick(self"), "class", "Client.Options")
    assert span("    class Options") == options


def test_code_after_a_long_string_holding_def_and_braces_stays_in_its_method() -> None:
    render = (line("    def render"), line("        return template.format"), "method", "Client.render")
    assert span("        return template.format") == render
    assert span("# a comment with def") == render
    assert span("    {braces}") == render  # inside the string


def test_a_blank_line_between_methods_belongs_to_the_class() -> None:
    blank = line("    async def fetch") - 1
    found = find_python_definition(BLACK, blank)
    assert found is not None and (found.kind, found.name) == ("class", "Client")


def test_a_top_level_block_is_its_statement_and_a_lone_line_is_nothing() -> None:
    found = find_python_definition(BLACK, line("    main()"))
    assert found is not None and found.kind == "block"
    assert (found.first_line, found.last_line) == (line("if __name__"), line('    print("done")'))
    assert find_python_definition(BLACK, line("import pytest")) is None


UNFINISHED = [
    # (where the half-written line goes, the line it is written after)
    ("after the method, in the same class", "        return response\n", "    broken = call(\n"),
    ("before the method, in the same class", "    timeout = 10\n", "    broken = call(\n"),
    ("an unclosed string above", "    timeout = 10\n", "    label = 'oops\n"),
    ("an unfinished def header above", "    timeout = 10\n", "    def half(self, x\n"),
    ("a missing colon above", "    timeout = 10\n", "    if ready\n"),
]


@pytest.mark.parametrize(("where", "after", "broken"), UNFINISHED, ids=[u[0] for u in UNFINISHED])
def test_a_buffer_in_the_middle_of_an_edit_still_gives_the_method(where: str, after: str, broken: str) -> None:
    at = BLACK.index(after) + len(after)
    text = BLACK[:at] + broken + BLACK[at:]
    with pytest.raises(SyntaxError):
        compile(text, "x.py", "exec")
    for cursor in ("        request: Request,", "        for _ in range", "        return response"):
        first, last, kind, name = span(cursor, text)
        assert (text.splitlines()[first], text.splitlines()[last]) == ("    def send(", "        return response")
        assert (kind, name) == ("method", "Client.send")
    first, last, _, name = span("    @staticmethod", text)
    assert (text.splitlines()[first], text.splitlines()[last], name) == (
        "    # Kept for callers of 1.x.",
        "        assert value",
        "Client.check",
    )


def test_never_the_whole_file_inside_a_definition_of_a_parseable_file() -> None:
    for number, text_line in enumerate(BLACK.splitlines()):
        if not text_line.strip() or number < line("class Client"):
            continue
        offset = sum(len(x) + 1 for x in BLACK.splitlines()[:number])
        region = choose_region(BLACK, offset, offset, "auto", "python")
        if number < line("if __name__"):
            assert region.kind == "block" and region.definition is not None, text_line


def test_the_region_names_what_it_rewrites_when_it_is_the_whole_file() -> None:
    text = "".join(f"value_{i} = {i}\n" for i in range(30))
    offset = text.index("value_7")
    region = choose_region(text, offset, offset, "auto", "python")
    assert region.kind == "file"
    assert region.oversized_note() == "rewrote the whole file, 30 lines; select lines to rewrite less"
    offset = BLACK.index("        assert value")
    region = choose_region(BLACK, offset, offset, "auto", "python")
    assert region.describe() == "method `Client.check`, 11 lines" and region.oversized_note() is None
    whole = choose_region(BLACK, offset, offset, "file", "python")
    assert (
        whole.oversized_note()
        == f"rewrote the whole file, {len(BLACK.splitlines())} lines; select lines to rewrite less"
    )


def test_block_mode_takes_the_definition_even_with_a_selection() -> None:
    start, end = BLACK.index("        for _ in range"), BLACK.index("        return response")
    region = choose_region(BLACK, start, end, "block", "python")
    assert region.kind == "block" and BLACK[region.start : region.end].startswith("    def send(")
