"""Clients differ: Neovim negotiates UTF-8 positions and takes plain `changes`; Emacs eglot does not
resolve code actions (the command comes on the action, and the reply comes at once)."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from tests.lsp_harness import Editor, capabilities, server_setup

STATE_DIR, SERVER_ENV, SERVER_CONFIG = server_setup()

WORKSPACE = STATE_DIR / "clients-workspace"
SOURCE = "# Grüße 👋 — 日本語\ndef greet(name):\n    label = '🎉 héllo ' + name  # e\u0301moji\n    return label\n"


@pytest.fixture(scope="module")
def backend():
    with FakeBackend("openai", step_s=0.001) as fake:
        yield fake


def _init(backend: FakeBackend, client_name: str) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=capabilities(client_name),
        workspace_folders=[types.WorkspaceFolder(WORKSPACE.as_uri(), "workspace")],
        initialization_options={
            "defaultBackend": "fake",
            "backends": {"fake": {"type": "openai", "baseUrl": backend.url, "model": "fake-model"}},
        },
    )


@pytest_lsp.fixture(config=SERVER_CONFIG, scope="module")
async def neovim(lsp_client: LanguageClient, backend: FakeBackend):
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    result = await lsp_client.initialize_session(_init(backend, "neovim"))
    lsp_client.editor = Editor(lsp_client, encoding=result.capabilities.position_encoding)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER_CONFIG, scope="module")
async def eglot(lsp_client: LanguageClient, backend: FakeBackend):
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    lsp_client.editor = Editor(lsp_client)  # type: ignore[attr-defined]
    await lsp_client.initialize_session(_init(backend, "emacs"))
    yield
    await lsp_client.shutdown_session()


async def test_neovim_utf8_positions_and_plain_changes(neovim: LanguageClient, backend: FakeBackend):
    editor: Editor = neovim.editor  # type: ignore[attr-defined]
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


async def test_neovim_selection_with_multibyte_text(neovim: LanguageClient, backend: FakeBackend):
    editor: Editor = neovim.editor  # type: ignore[attr-defined]
    # Plain text: the uppercased lines are no Python (`RETURN LABEL`), which the check before an edit refuses.
    uri = editor.open(WORKSPACE / "nvim_sel.txt", SOURCE, language_id="plaintext")
    # Select from inside the emoji line's text to the end of the next line: whole lines are rewritten.
    rng = types.Range(editor.range_of(uri, "héllo").start, editor.range_of(uri, "return label").end)
    result = await editor.execute("refactorLsp.refactor", {"uri": uri, "range": rng, "instruction": "uppercase"})
    assert result["status"] == "applied"
    lines = SOURCE.splitlines(keepends=True)
    assert editor.buffers[uri] == "".join(lines[:2] + [line.upper() for line in lines[2:]])


async def test_eglot_gets_the_command_on_the_action_and_an_early_reply(eglot: LanguageClient, backend: FakeBackend):
    editor: Editor = eglot.editor  # type: ignore[attr-defined]
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
