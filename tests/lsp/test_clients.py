"""Clients differ: Neovim negotiates UTF-8 positions and takes plain `changes`; Emacs eglot does not
resolve code actions (the command comes on the action, and the reply comes at once)."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import editor_settings
from tests.lsp_harness import fresh, server_setup, session

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "clients-workspace"
SOURCE = "# Grüße 👋 — 日本語\ndef greet(name):\n    label = '🎉 héllo ' + name  # e\u0301moji\n    return label\n"


neovim = session(SETUP, WORKSPACE, lambda fake_backend: editor_settings(fake_backend), client_name="neovim")
eglot = session(SETUP, WORKSPACE, lambda fake_backend: editor_settings(fake_backend), client_name="emacs")


async def test_neovim_utf8_positions_and_plain_changes(neovim: LanguageClient):
    editor = fresh(neovim)
    assert editor.encoding == "utf-8"
    uri = editor.open(WORKSPACE / "nvim.py", SOURCE)
    result = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "return label"), "instruction": "rename label to message"},
    )
    assert result["status"] == "applied"
    assert editor.buffers[uri] == SOURCE.replace("label", "message")
    edit = editor.edits_received[-1].edit
    assert edit.document_changes is None and uri in edit.changes  # Neovim's capabilities: no documentChanges


async def test_neovim_selection_with_multibyte_text(neovim: LanguageClient):
    editor = fresh(neovim)
    # Plain text: the uppercased lines are no Python (`RETURN LABEL`), which the check before an edit refuses.
    uri = editor.open(WORKSPACE / "nvim_sel.txt", SOURCE, language_id="plaintext")
    # Select from inside the emoji line's text to the end of the next line: whole lines are rewritten.
    rng = types.Range(editor.range_of(uri, "héllo").start, editor.range_of(uri, "return label").end)
    result = await editor.execute("refactorLsp.refactor", {"uri": uri, "range": rng, "instruction": "uppercase"})
    assert result["status"] == "applied"
    lines = SOURCE.splitlines(keepends=True)
    assert editor.buffers[uri] == "".join(lines[:2] + [line.upper() for line in lines[2:]])


async def test_eglot_gets_the_command_on_the_action_and_an_early_reply(eglot: LanguageClient):
    editor = fresh(eglot)
    source = SOURCE.replace("    return label\n", "    # refactor-lsp: rename label to text\n    return label\n")
    uri = editor.open(WORKSPACE / "eglot.py", source)
    actions = await editor.code_actions(uri, editor.cursor_at(uri, "return label"))
    assert actions[0].title == "Refactor with prediction: rename label to text"
    assert all(a.command is not None and a.command.command == "refactorLsp.refactor" for a in actions)
    reply = await editor.execute(actions[0].command.command, *actions[0].command.arguments)
    assert reply == {"status": "started"}
    await asyncio.wait_for(editor.edit_event.wait(), 10)
    for _ in range(200):
        if editor.stats:
            break
        await asyncio.sleep(0.01)
    assert editor.buffers[uri] == SOURCE.replace("label", "text")
    assert editor.stats[-1]["applied"] is True
