"""The slips models make in code, made on purpose: a closing bracket dropped, a line indented one step
off, a string left unterminated, the last line cut short, an `else` written twice. The loopback
backend slips with them (`responders.SlippingResponder`), and `bench-hygiene` makes its broken
answers with them from real regions (benchmarks/hygiene.py).

Each slip takes a region, its languageId and a seeded `random.Random`, and returns the region with
the slip, or None when the region offers no place for it (no string, no `else`). A slip does not
always break the code (an indentation change can still be valid Python; an `else if` written twice
is valid C): what is broken is for a parser to say.
"""

from __future__ import annotations

import io
import random
import re
import textwrap
import tokenize
from collections.abc import Callable

from ..text import split_lines

Slip = Callable[[str, str, random.Random], "str | None"]
_CLOSERS = ")]}"
_ELSE = re.compile(r"^[ \t]*(?:\}[ \t]*)?else\b", re.M)


def _code_spans(region: str, language: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Offsets of the closing brackets in code, and (start, end) of the one-line strings, as the
    language's lexer reads them (Python's tokenizer; the block scan's lexers)."""
    if language == "python":
        return _python_spans(region)
    from ..regions.table import LANGUAGE_OF_ID

    found = LANGUAGE_OF_ID.get(language)
    if found is None:
        return [i for i, ch in enumerate(region) if ch in _CLOSERS], []
    closers, strings, position = [], [], 0
    for m in found.lexer.mask.finditer(region):
        closers += [i for i in range(position, m.start()) if region[i] in _CLOSERS]
        token = m.group()
        if token[:1] in "'\"`" and len(token) >= 2 and token[-1] == token[0] and "\n" not in token:
            strings.append((m.start(), m.end()))
        position = m.end()
    closers += [i for i in range(position, len(region)) if region[i] in _CLOSERS]
    return closers, strings


def _python_spans(region: str) -> tuple[list[int], list[tuple[int, int]]]:
    lines = split_lines(region)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    dedented = textwrap.dedent(region)
    shift = [len(line) - len(d) for line, d in zip(lines, split_lines(dedented), strict=False)]
    closers, strings = [], []
    try:
        for token in tokenize.generate_tokens(io.StringIO(dedented).readline):
            (row, col), (end_row, end_col) = token.start, token.end
            if row > len(shift):
                break
            at = starts[row - 1] + shift[row - 1] + col
            if token.type == tokenize.OP and token.string in _CLOSERS:
                closers.append(at)
            elif token.type == tokenize.STRING and row == end_row and token.string[-1] in "'\"":
                strings.append((at, starts[row - 1] + shift[row - 1] + end_col))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # what was read before the tokenizer gave up
    return closers, strings


def drop_closing_bracket(region: str, language: str, rng: random.Random) -> str | None:
    closers, _ = _code_spans(region, language)
    if not closers:
        return None
    at = rng.choice(closers)
    return region[:at] + region[at + 1 :]


def unterminate_string(region: str, language: str, rng: random.Random) -> str | None:
    _, strings = _code_spans(region, language)
    if not strings:
        return None
    _, end = rng.choice(strings)
    return region[: end - 1] + region[end:]


def indent_off(region: str, language: str, rng: random.Random) -> str | None:
    """One line (not the first) one indentation step deeper or shallower."""
    lines = split_lines(region)
    candidates = [i for i in range(1, len(lines)) if lines[i].strip()]
    if not candidates:
        return None
    i = rng.choice(candidates)
    line = lines[i]
    step = "\t" if line.startswith("\t") else "    " if language == "python" else "  "
    if line.startswith(step) and rng.random() < 0.5:
        lines[i] = line[len(step) :]
    else:
        lines[i] = step + line
    return "".join(lines)


def truncate_last_line(region: str, language: str, rng: random.Random) -> str | None:
    """The last line with code cut short, as an answer that stopped mid-line."""
    lines = split_lines(region)
    last = max((i for i, line in enumerate(lines) if line.strip()), default=None)
    if last is None:
        return None
    content = lines[last].rstrip("\r\n")
    indent = len(content) - len(content.lstrip())
    cut = rng.randrange(indent, len(content))
    return "".join(lines[:last]) + content[:cut] + "\n"


def duplicate_else(region: str, language: str, rng: random.Random) -> str | None:
    """A line that starts with `else` (or `} else`) written twice."""
    found = list(_ELSE.finditer(region))
    if not found:
        return None
    start = rng.choice(found).start()
    end = region.find("\n", start)
    end = len(region) if end < 0 else end + 1
    line = region[start:end]
    return region[:end] + (line if line.endswith("\n") else "\n" + line) + region[end:]


SLIPS: dict[str, Slip] = {
    "dropped closing bracket": drop_closing_bracket,
    "line indented one step off": indent_off,
    "unterminated string": unterminate_string,
    "truncated last line": truncate_last_line,
    "duplicated else": duplicate_else,
}
