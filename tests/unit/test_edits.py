"""Edits: the new region as minimal replacements, LSP positions for them, and rebasing."""

from __future__ import annotations

import itertools
import random

import pytest

from lsp_server.formats.edits import Replacement, apply_replacements, rebase, region_replacements
from lsp_server.regions import split_lines
from lsp_server.text import PositionMapper


def replace_region(document: str, start: int, end: int, new_region: str) -> str:
    """What the user should end up with."""
    return document[:start] + new_region + document[end:]


def apply_as_lsp_client(document: str, edits: list[Replacement], encoding: str = "utf-16") -> str:
    """Apply edits the way an editor does: through (line, character) positions, clamped to line ends."""
    mapper = PositionMapper(document, encoding)  # type: ignore[arg-type]
    ranges = [(mapper.position(e.start), mapper.position(e.end), e.text) for e in edits]
    out: list[str] = []
    pos = 0
    for start, end, text in sorted(ranges):
        a, b = mapper.offset(*start), mapper.offset(*end)
        out.append(document[pos:a])
        out.append(text)
        pos = b
    out.append(document[pos:])
    return "".join(out)


def check(document: str, start: int, end: int, new_region: str) -> list[Replacement]:
    edits = region_replacements(document, start, end, new_region)
    expected = replace_region(document, start, end, new_region)
    assert apply_replacements(document, edits) == expected
    for encoding in ("utf-16", "utf-8", "utf-32"):
        assert apply_as_lsp_client(document, edits, encoding) == expected
    for edit in edits:
        assert start <= edit.start <= edit.end <= end
    for a, b in itertools.pairwise(edits):
        assert a.end < b.start  # sorted, disjoint, not touching (touching ones are merged)
    return edits


def test_no_change_gives_no_edits() -> None:
    text = "a\nb\nc\n"
    assert region_replacements(text, 0, len(text), text) == []


def test_one_changed_line_in_two_thousand_is_one_small_replacement() -> None:
    lines = [f"    result_{i} = compute(value_{i}, factor={i % 7})\n" for i in range(2000)]
    document = "".join(lines)
    new_lines = list(lines)
    new_lines[1234] = new_lines[1234].replace("compute", "compute_fast")
    edits = check(document, 0, len(document), "".join(new_lines))
    assert len(edits) == 1
    (edit,) = edits
    assert edit.text == "_fast"
    assert edit.start == edit.end == document.index("compute(value_1234,") + len("compute")


def test_region_in_the_middle_of_a_document() -> None:
    document = "header\n\ndef f(x):\n    return x\n\nfooter\n"
    start, end = document.index("def f"), document.index("\n\nfooter") + 1
    edits = check(document, start, end, "def f(x: int) -> int:\n    return x\n")
    paren = document.index("):")
    assert edits == [Replacement(paren, paren + 1, ": int) -> int")]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("msg = 'hi 😀'\nok = True\n", "msg = 'hi 😀🎉'\nok = True\n"),  # astral, after an astral char
        ("a = '😀'\nb = '𝔘𝔫𝔦'\n", "a = '😀x'\nb = '𝔘𝔫𝔦𝔠𝔬𝔡𝔢'\n"),
        ("name = '東京'\nprint(name)\n", "name = '東京都'\nprint(name)\n"),  # CJK
        ("s = 'café'\n", "s = 'cafè'\n"),  # combining accents: e + U+0301 → e + U+0300
        ("s = 'e\u0301'\nt = 1\n", "s = 'e\u0300'\nt = 1\n"),
        ("\tif x:\n\t\treturn 1\n", "\tif x:\n\t\treturn 2\n\t# done\n"),  # tabs
        ("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),  # CRLF
        ("a\r\nb\r\nc\r\n", "a\r\nb\r\nc\r\nd\r\n"),
        ("a\r\nb\r\nc\r\n", "a\r\nc\r\n"),
        ("x = 1\ny = 2", "x = 1\ny = 3"),  # no trailing newline
        ("x = 1\ny = 2", "x = 1\ny = 2\nz = 3"),
        ("x = 1\ny = 2\n", "x = 1\ny = 2"),
        ("a\nb\n", "new\na\nb\n"),  # insert at the start
        ("a\nb\n", "a\nb\nnew\n"),  # insert at the end
        ("a\nb\nc\n", "b\nc\n"),  # delete at the start
        ("a\nb\nc\n", "a\nb\n"),  # delete at the end
        ("a\nb\n", ""),
        ("", "a\nb\n"),
        ("a\nb\nc\r\nd\n", "a\nb\nC\nd\n"),  # a line whose ending changes too
    ],
)
def test_replacements_give_the_new_text(old: str, new: str) -> None:
    document = "before 😀\n" + old + "\nafter\n"
    start = len("before 😀\n")
    check(document, start, start + len(old), new)


def test_unchanged_lines_keep_their_own_line_endings() -> None:
    document = "one\r\ntwo\nthree\rfour\r\nfive\n"
    # The model answers with \n everywhere; only `three` really changed.
    new_region = "one\ntwo\nTHREE\nfour\nfive\n"
    edits = region_replacements(document, 0, len(document), new_region)
    assert apply_replacements(document, edits) == "one\r\ntwo\nTHREE\nfour\r\nfive\n"
    assert apply_as_lsp_client(document, edits) == "one\r\ntwo\nTHREE\nfour\r\nfive\n"


def test_edits_never_split_a_crlf_pair() -> None:
    document = "a\nb\nc\r\nd\n"
    for new_region in ("a\nb\nC\nd\n", "a\nb\nc\rX\n\nd\n", "a\r\nb\nc\r\nd\n"):
        for edit in region_replacements(document, 0, len(document), new_region):
            for offset in (edit.start, edit.end):
                assert not (document[offset - 1 : offset] == "\r" and document[offset : offset + 1] == "\n")


# -- positions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "emoji_units", "euro_units"),
    [("utf-16", 2, 1), ("utf-8", 4, 3), ("utf-32", 1, 1)],
)
def test_position_units_per_encoding(encoding: str, emoji_units: int, euro_units: int) -> None:
    text = "a😀b\n€x\n"
    mapper = PositionMapper(text, encoding)  # type: ignore[arg-type]
    assert mapper.position(text.index("b")) == (0, 1 + emoji_units)
    assert mapper.position(text.index("x")) == (1, euro_units)
    assert mapper.offset(0, 1 + emoji_units) == text.index("b")
    assert mapper.offset(1, euro_units) == text.index("x")
    assert mapper.position(len(text)) == (2, 0)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_positions_and_offsets_round_trip(encoding: str) -> None:
    text = "def f():\r\n    s = '😀 東京 café e\u0301'\n\treturn s  # ✓ 𝔘\rlast line 🎉"
    mapper = PositionMapper(text, encoding)  # type: ignore[arg-type]
    for offset in range(len(text) + 1):
        if text[offset - 1 : offset + 1] == "\r\n":
            continue  # between \r and \n: not a position at all
        line, character = mapper.position(offset)
        assert mapper.offset(line, character) == offset
        # The line and character are the ones an editor counts.
        line_text = split_lines(text)[line] if line < len(split_lines(text)) else ""
        prefix = line_text[: offset - sum(len(x) for x in split_lines(text)[:line])]
        units = {"utf-16": len(prefix.encode("utf-16-le")) // 2, "utf-8": len(prefix.encode()), "utf-32": len(prefix)}
        assert character == units[encoding]


def test_position_past_the_end_of_a_line_clamps_to_it() -> None:
    text = "ab😀\r\ncd\n"
    mapper = PositionMapper(text)
    assert mapper.offset(0, 100) == text.index("\r")
    assert mapper.offset(1, 100) == text.index("d") + 1
    assert mapper.offset(9, 0) == len(text)
    assert mapper.offset(-1, 0) == 0


# -- rebasing onto what the user typed meanwhile ------------------------------------------------------

SNAPSHOT = "import os\n\ndef f(x):\n    return x\n\nprint(f(1))\n"
REGION = (SNAPSHOT.index("def f"), SNAPSHOT.index("\nprint"))
NEW_REGION = "def f(x: int) -> int:\n    return x\n"


def rebased_result(current: str) -> str | None:
    edits = region_replacements(SNAPSHOT, *REGION, NEW_REGION)
    moved = rebase(SNAPSHOT, current, REGION, edits).edits
    return None if moved is None else apply_replacements(current, moved)


def test_rebase_without_user_changes_keeps_the_edits() -> None:
    assert rebased_result(SNAPSHOT) == SNAPSHOT.replace("def f(x):", "def f(x: int) -> int:")


def test_rebase_shifts_edits_after_a_user_edit_above_the_region() -> None:
    current = SNAPSHOT.replace("import os\n", "import os\nimport sys  # 😀 added meanwhile\n")
    assert rebased_result(current) == current.replace("def f(x):", "def f(x: int) -> int:")
    current = SNAPSHOT.replace("import os\n\n", "")  # everything above, up to the region's start
    assert rebased_result(current) == current.replace("def f(x):", "def f(x: int) -> int:")


def test_rebase_shifts_edits_after_a_line_inserted_right_before_the_region() -> None:
    current = SNAPSHOT.replace("\ndef f", "\n# a note typed meanwhile\ndef f")
    assert rebased_result(current) == current.replace("def f(x):", "def f(x: int) -> int:")


def test_rebase_with_user_edits_above_and_below_the_region() -> None:
    current = SNAPSHOT.replace("import os", "import os, sys").replace("print(f(1))", "print(f(2))")
    assert rebased_result(current) == current.replace("def f(x):", "def f(x: int) -> int:")


def test_rebase_keeps_edits_after_a_user_edit_below_the_region() -> None:
    current = SNAPSHOT.replace("print(f(1))", "print(f(2))\nprint('more')")
    assert rebased_result(current) == current.replace("def f(x):", "def f(x: int) -> int:")


@pytest.mark.parametrize(
    "current",
    [
        SNAPSHOT.replace("return x", "return x + 1"),  # inside the region
        SNAPSHOT.replace("def f(x):", "def g(x):"),  # on the line the edit changes
        SNAPSHOT.replace("def f(x):", "async def f(x):"),  # typed at the very start of the region
        SNAPSHOT.replace("os\n\ndef", "OS\n\nDef"),  # one change from above into the region
    ],
)
def test_rebase_refuses_when_the_user_edited_the_region(current: str) -> None:
    edits = region_replacements(SNAPSHOT, *REGION, NEW_REGION)
    assert rebase(SNAPSHOT, current, REGION, edits).edits is None


# -- randomized: many line edits, every one applied exactly -------------------------------------------

_PIECES = ["x", "value", "😀", "東京", "e\u0301", "\t", "    ", "=", "(", ")", "𝔘", " ", "#", "é"]
_ENDINGS = ["\n", "\n", "\n", "\r\n", "\r"]


def _line(rng: random.Random, unique: str = "") -> str:
    return unique + "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6)))


@pytest.mark.parametrize("seed", range(40))
def test_randomized_line_edits(seed: int) -> None:
    rng = random.Random(seed)
    mixed = seed % 2 == 0
    endings = _ENDINGS if mixed else [rng.choice(_ENDINGS)]
    # With mixed endings, equal lines that end differently are ambiguous (either may be "the one kept"),
    # so there every line is unique; with one style, repeated and empty lines are part of the test.
    lines = [_line(rng, f"L{i}" if mixed else "") + rng.choice(endings) for i in range(rng.randint(0, 60))]
    if lines and rng.random() < 0.3:
        lines[-1] = lines[-1].rstrip("\r\n")  # no final newline
    document = "".join(lines)
    first = rng.randint(0, len(lines))
    last = rng.randint(first, len(lines))
    start = sum(map(len, lines[:first]))
    end = start + sum(map(len, lines[first:last]))

    region_lines = list(lines[first:last])
    for k in range(rng.randint(0, 8)):
        op = rng.choice(["replace", "insert", "delete", "edit-chars"])
        i = rng.randint(0, max(len(region_lines) - 1, 0))
        fresh = _line(rng, f"new{k}") + rng.choice(endings)  # a line the region does not have
        if op == "insert" or not region_lines:
            region_lines.insert(rng.randint(0, len(region_lines)), fresh)
        elif op == "delete":
            del region_lines[i]
        elif op == "replace":
            region_lines[i] = fresh
        else:
            content = region_lines[i].rstrip("\r\n")
            ending = region_lines[i][len(content) :]
            cut = rng.randint(0, len(content))
            region_lines[i] = content[:cut] + f"<{k}>" + content[cut:] + ending
    new_region = "".join(region_lines)
    if last == len(lines) and new_region and rng.random() < 0.2:
        new_region = new_region.rstrip("\r\n")

    check(document, start, end, new_region)
