"""The server refactors the standard library's textwrap.py (19 KB) against a backend with a 4,096-token
window over real LSP: fitted when the region fits, refused before sending when it cannot."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lsprotocol import types

from lsp_server.testing.context_limit import prompt_tokens
from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import editor_settings, fake_fixture, without_probes
from tests.lsp_harness import Editor, server_setup, session, until
from tests.stdlib_targets import smallest_function_looping_over

SETUP = server_setup()
STATE_DIR = SETUP.state_dir
WORKSPACE = STATE_DIR / "workspace"
WINDOW = 4096
TARGET = smallest_function_looping_over(Path(textwrap.__file__), "line")  # by structure, in any version
SOURCE = TARGET.source
RENAMED = TARGET.renamed("line", "row")


backend = fake_fixture("vllm", context_window=WINDOW)
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend, name="small"))


async def test_the_window_is_learned_when_the_server_starts(editor: Editor) -> None:
    """Before any refactor: the server asked the backend when it read its config, and kept the answer."""
    learned = STATE_DIR / "state" / "refactor-lsp" / "backends.json"

    def known() -> bool:
        return learned.exists() and '"window": 4096' in learned.read_text()

    await until(known)


async def test_the_large_file_is_fitted_to_the_window(editor: Editor, backend: FakeBackend) -> None:
    assert len(SOURCE) > 14_000 and RENAMED != SOURCE
    uri = editor.open(WORKSPACE / "textwrap.py", SOURCE)
    cursor = types.Position(TARGET.cursor_line - 1, 0)
    result = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": types.Range(cursor, cursor), "instruction": "rename line to row"},
    )
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == RENAMED
    (request,) = without_probes(backend.requests)
    assert prompt_tokens(request) + request["max_tokens"] <= WINDOW
    notes = " ".join(editor.stats[-1]["notes"])
    assert "fitted to the backend's context window of 4,096 tokens (from /v1/models: max_model_len)" in notes


async def test_a_region_that_cannot_fit_is_refused_before_sending(editor: Editor, backend: FakeBackend) -> None:
    uri = editor.open(WORKSPACE / "whole.py", SOURCE)
    whole = types.Range(types.Position(0, 0), types.Position(SOURCE.count("\n"), 0))
    result = await editor.execute("refactorLsp.refactor", {"uri": uri, "range": whole, "instruction": "add type hints"})
    assert result["status"] == "error", result
    assert "does not fit the context window of the backend 'small', 4,096 tokens" in result["message"]
    assert "select a smaller region" in result["message"]
    assert any("4,096 tokens" in m for m in editor.messages())  # shown to the user, once
    assert backend.requests == []
    assert editor.buffers[uri] == SOURCE and editor.edits_received == []
