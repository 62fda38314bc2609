"""Text an editor shows never carries a link (text.neutralise_links): VS Code runs the command of a
`[label](command:...)` in a notification, markdown renderers also read autolinks and definitions. Text a
terminal shows carries no control a terminal obeys (text.on_terminal, the CLI's Screen)."""

from __future__ import annotations

import gc
import io
import json
import sys
import unicodedata

import pytest

from lsp_server.bench.display import ProgressDisplay
from lsp_server.text import Screen, neutralise_links, on_terminal


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "[Trust](command:workbench.action.terminal.sendSequence?x)",
            "[Trust] (command:workbench.action.terminal.sendSequence?x)",
        ),
        ("![img](https://x.example/p.png) and [a](b)", "![img] (https://x.example/p.png) and [a] (b)"),
        ("see <command:foo.bar> or <https://x.example>", "see < command:foo.bar> or < https://x.example>"),
        ("ok\n[trust]: command:foo\n   [x]:y", "ok\n[trust] : command:foo\n   [x] :y"),
    ],
)
def test_link_syntax_is_made_inert_and_stays_readable(text: str, shown: str) -> None:
    assert neutralise_links(text) == shown
    assert neutralise_links(shown) == shown  # nothing left to neutralise


@pytest.mark.parametrize(
    "text",
    [
        "add trusted_workspaces = ['/home/me/repo'] to ~/.config/refactor-lsp/config.toml",
        "refactor 0.4 s · 80 tok · 196 tok/s · prediction 88% accepted (72 accepted, 8 rejected)",
        "a[1]: b, x[0](y) is code: f(a)[b], <stdin>:3, C:\\temp, <a> <1:2>",
    ],
)
def test_our_own_messages_are_left_as_they_are(text: str) -> None:
    expected = text.replace("](", "] (")
    assert neutralise_links(text) == expected


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]8;;https://x.example\x07here\x1b]8;;\x07", r"\u001b]8;;https://x.example\u0007here\u001b]8;;\u0007"),
        ("ok\x1b[1A\x1b[2K", r"ok\u001b[1A\u001b[2K"),  # erase the line above
        ("a\rb", r"a\rb"),  # a lone carriage return writes over the line
        ("\u202eevil\u2066", r"\u202eevil\u2066"),  # bidirectional overrides
        ("\x9b2J\x7f\x00", r"\u009b2J\u007f\u0000"),  # C1's one-byte CSI, DEL, NUL
        ("a\u200bb\ufeffc\u2028d\u2029", r"a\u200bb\ufeffc\u2028d\u2029"),  # zero-width, BOM, separators (Zl, Zp)
        ("tag\U000e0041\U000e007f", r"tag\udb40\udc41\udb40\udc7f"),  # invisible tag characters, past U+FFFF
        ("not-utf8-\udcff.py", r"not-utf8-\udcff.py"),  # a lone surrogate: a file name's undecodable byte
        ("line\r\nnext\tcol — café ✓ 𝔸", "line\r\nnext\tcol — café ✓ 𝔸"),  # shown as they are
    ],
)
def test_a_terminal_is_shown_every_control_character_as_text(text: str, shown: str) -> None:
    assert on_terminal(text) == shown
    assert on_terminal(shown) == shown


def test_every_control_format_separator_and_surrogate_character_is_spelt_out() -> None:
    """Unicode's categories, as this Python's unicodedata knows them: none gets to the terminal as it is."""
    kept = {"\t", "\n"}
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs") and char not in kept:
            assert on_terminal(char) != char, f"U+{code:04X} ({unicodedata.category(char)}) reaches the terminal"


def test_json_on_a_terminal_is_still_the_same_json() -> None:
    """`--json` with stdout on a terminal: the object spelt out reads back as what was printed."""
    value = {"new_text": "x = '\x1b[2J\x9b\u202e\u2028\U000e0041\udcff'\r\nb\rc\x00", "answer": None}
    for printed in (json.dumps(value, ensure_ascii=False), json.dumps(value, ensure_ascii=False, indent=2)):
        shown = on_terminal(printed)
        assert json.loads(shown) == value
        assert "\x1b" not in shown and "\u202e" not in shown and "\udcff" not in shown


def test_the_progress_bar_redraws_with_its_own_return_and_spells_out_a_task_names_controls() -> None:
    under = io.StringIO()
    bar = ProgressDisplay(2, Screen(under), tty=True)
    bar.begin("task\x1b[2J", "prediction", 0)
    bar.close()
    drawn = under.getvalue()
    assert drawn.startswith("\r[") and drawn.endswith("\r") and "\x1b" not in drawn
    assert r"task\u001b[2J (with prediction, #1)" in drawn


def test_a_screen_collected_after_its_stream_closed_says_nothing() -> None:
    """A screen outlives the stream under it (a test's captured stderr, closed first): collecting it
    flushed that stream, "Exception ignored in: <Screen>: I/O operation on closed file"."""
    ignored: list[object] = []
    hook, sys.unraisablehook = sys.unraisablehook, ignored.append
    try:
        under = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # as a captured stderr is
        screen = Screen(under)
        screen.write("shown")
        under.close()
        del screen
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert ignored == []
