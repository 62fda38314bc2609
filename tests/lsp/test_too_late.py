"""A user's cancel once the edit is out (server/job.py, `edit_out`), over real LSP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lsprotocol import types

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, server_setup, session, start_session

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "too-late-workspace"
SOURCE = "def area(r):\n    return 3.14 * r * r\n"
ANSWER = "def area(r):\n    return 3.14159 * r * r\n"

backend = fake_fixture(step_s=0.002)
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend))


def held_edits(editor: Editor) -> tuple[asyncio.Event, asyncio.Event]:
    """The editor holds each applyEdit until `gate` is set (the user has not confirmed yet)."""
    gate, reached = asyncio.Event(), asyncio.Event()
    original = editor._on_apply_edit

    async def held(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        reached.set()
        await gate.wait()
        return await original(params)

    editor._on_apply_edit = held  # type: ignore[method-assign]
    return gate, reached


def ask(editor: Editor, uri: str) -> dict[str, Any]:
    return {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "more digits"}


async def test_a_cancel_while_the_editor_has_not_answered_is_too_late_and_never_counted_cancelled(
    editor: Editor, backend: FakeBackend
) -> None:
    """The edit waits for the user's confirmation in the editor; refactorLsp.cancel then replied
    {"cancelled": 1} and said nothing, and the edit landed: the user was told of a cancel that never
    happened. Now it replies none cancelled, one too late, and says so; the edit's outcome follows, and
    the document is free for the next refactor at once, on its new version."""
    uri = editor.open(WORKSPACE / "confirming.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    gate, reached = held_edits(editor)
    refactor = asyncio.create_task(editor.execute("refactorLsp.refactor", ask(editor, uri)))
    async with asyncio.timeout(10):
        await reached.wait()
    editor.clear()
    for _ in range(2):  # each press answered alike
        assert await editor.execute("refactorLsp.cancel", {"uri": uri}) == {"cancelled": 0, "tooLate": 1}
    told = editor.messages()
    assert (
        told
        == ["refactor-lsp: too late to cancel: the refactor's edit is already with the editor; its outcome follows"] * 2
    )
    gate.set()
    reply = await refactor
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == ANSWER
    more = ANSWER.replace("3.14159", "3.1415926")
    backend.enqueue(Reply(text=more))
    again = await editor.execute("refactorLsp.refactor", ask(editor, uri))
    assert again["status"] == "applied", again
    assert editor.buffers[uri] == more


async def test_shutdown_while_the_edit_waits_answers_at_once_and_never_says_nothing_was_applied(
    backend: FakeBackend, tmp_path: Any
) -> None:
    """The session ends while the editor holds the edit: shutdown answers within its bound, and the job
    says the edit may have been applied (it said "cancelled; nothing was applied" of an edit the
    editor went on to apply)."""
    workspace = tmp_path / "ending"
    editor = await start_session(SETUP, workspace, editor_settings(backend))
    uri = editor.open(workspace / "ending.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    gate, reached = held_edits(editor)
    refactor = asyncio.create_task(editor.execute("refactorLsp.refactor", ask(editor, uri)))
    async with asyncio.timeout(10):
        await reached.wait()
    editor.clear()
    began = time.monotonic()
    try:
        await editor.client.shutdown_session()
    finally:
        gate.set()
    assert time.monotonic() - began < 5
    reply = await asyncio.wait_for(refactor, 5)
    assert reply["status"] == "cancelled", reply
    assert "nothing was applied" not in reply["message"]
    assert "the server is shutting down; its edit had already gone to the editor" in reply["message"], reply
    assert "too late" not in " ".join(editor.messages())
