"""Text an editor shows never carries a link (text.neutralise_links): VS Code runs the command of a
`[label](command:...)` in a notification, markdown renderers also read autolinks and definitions."""

from __future__ import annotations

import pytest

from lsp_server.text import neutralise_links


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
