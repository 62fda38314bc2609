"""The language server end to end: real LSP over stdio (pytest-lsp), the loopback test backend."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, server_setup, session, until

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "workspace"

PY_SOURCE = """import os


def load(path):
    data = open(path).read()
    return parse(data)


def parse(text):
    return text.split()


class Store:
    def get(self, key):
        return self.items[key]
"""


backend = fake_fixture(step_s=0.002)
# "always": these tests read the prediction sent, and the module's refactors share one history, from which
# the cost guard (pipeline/prediction_guard.py) would soon stop sending it.
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend, keys={"prediction": "always"}))


def _titles(actions: list[types.CodeAction]) -> list[str]:
    return [a.title for a in actions]


async def test_an_editor_that_did_not_ask_gets_progress_without_the_plugins_notification(
    editor: Editor, backend: FakeBackend, client: LanguageClient
):
    """`refactorLsp/progress` goes only to a plugin that asked for it (`progressFields`); any editor
    gets the `$/progress` bar with the same figures in its message."""
    uri = editor.open(WORKSPACE / "plain_editor.py", PY_SOURCE)
    known = set(client.progress_reports)
    answer = "def load(path):\n    content = open(path).read()\n    return parse(content)\n"
    backend.enqueue(Reply(text=answer, delay_headers_s=0.3))  # long enough to show its progress
    reply = await editor.execute(
        "refactorLsp.refactor", {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename"}
    )
    assert reply["status"] == "applied", reply
    (token,) = set(client.progress_reports) - known
    reports = [r for r in client.progress_reports[token] if isinstance(r, types.WorkDoneProgressReport)]
    assert any("chars" in (r.message or "") for r in reports), client.progress_reports[token]
    await asyncio.sleep(0.05)  # anything sent with the reports has arrived by now
    assert editor.progress_fields == []


async def test_happy_path_rename_in_function(editor: Editor, backend: FakeBackend, client: LanguageClient):
    uri = editor.open(WORKSPACE / "happy.py", PY_SOURCE)
    await editor.code_actions(uri, editor.cursor_at(uri, "data = open"))
    known = set(client.progress_reports)
    backend.enqueue(Reply(delay_headers_s=0.3))  # the model's answer, late enough to show progress (from 0.1 s)
    result = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"},
    )
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == PY_SOURCE.replace("data", "content")
    # Only the enclosing function was sent as the prediction.
    sent = backend.requests[-1]
    assert sent["prediction"]["content"] == "def load(path):\n    data = open(path).read()\n    return parse(data)\n"
    assert sent["temperature"] == 0.0
    # One summary message, and the stats notification with the honest figures.
    summaries = [m for m in editor.messages() if "refactor " in m and "tok" in m]
    assert len(summaries) == 1
    stats = editor.stats[-1]
    assert stats["uri"] == uri and stats["applied"] is True and stats["scope"] == "block"
    assert stats["accepted_prediction_tokens"] > 0
    for key in (
        "backend",
        "model",
        "prediction",
        "latency_ms",
        "ttft_ms",
        "completion_tokens",
        "rejected_prediction_tokens",
        "acceptance_rate",
        "tokens_per_s",
    ):
        assert key in stats
    # Progress began, reported a percentage, and ended.
    (token,) = set(client.progress_reports) - known
    reports = client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and "Refactor with prediction" in reports[0].title
    assert any(isinstance(r, types.WorkDoneProgressReport) and r.percentage for r in reports), reports
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_code_actions_listed_without_calling_a_model(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "list.py", PY_SOURCE)
    actions = await editor.code_actions(uri, editor.cursor_at(uri, "return text"))
    titles = _titles(actions)
    assert titles[:3] == [
        "Refactor with prediction: Add type annotations",
        "Refactor with prediction: Add docstrings",
        "Refactor with prediction: Simplify",
    ]
    assert all(a.kind == "refactor.rewrite.prediction" for a in actions)
    # VS Code resolves code actions: the command is attached only on resolve, keyed on data, not title.
    assert all(a.command is None and a.data["actionId"] for a in actions)
    assert backend.requests == []
    # context.only is honoured: a parent kind matches, another kind does not.
    assert await editor.code_actions(uri, editor.cursor_at(uri, "return text"), only=["refactor"])
    assert await editor.code_actions(uri, editor.cursor_at(uri, "return text"), only=["quickfix"]) == []


@pytest.mark.parametrize(
    ("action_id", "answer"),
    [
        ("type-hints", "def parse(text: str) -> list[str]:\n    return text.split()\n"),
        ("docstrings", 'def parse(text):\n    """Split text into words."""\n    return text.split()\n'),
        ("simplify", "def parse(text):\n    return str.split(text)\n"),
    ],
)
async def test_each_builtin_action(editor: Editor, backend: FakeBackend, action_id: str, answer: str):
    uri = editor.open(WORKSPACE / f"builtin_{action_id}.py", PY_SOURCE)
    actions = await editor.code_actions(uri, editor.cursor_at(uri, "return text"))
    action = next(a for a in actions if a.data["actionId"] == action_id)
    backend.enqueue(Reply(text=answer))
    result = await editor.run_action(action)
    assert result["status"] == "applied"
    old_function = "def parse(text):\n    return text.split()\n"
    assert editor.buffers[uri] == PY_SOURCE.replace(old_function, answer)
    from lsp_server.config.schema import BUILTIN_ACTIONS

    instruction = next(p.instruction for p in BUILTIN_ACTIONS if p.id == action_id)
    assert f"Instruction: {instruction}" in backend.requests[-1]["messages"][1]["content"]


async def test_instruction_comment_action(editor: Editor, backend: FakeBackend):
    source = PY_SOURCE.replace(
        "    data = open(path).read()\n", "    # refactor-lsp: rename data to payload\n    data = open(path).read()\n"
    )
    uri = editor.open(WORKSPACE / "comment.py", source)
    actions = await editor.code_actions(uri, editor.cursor_at(uri, "return parse"))
    assert _titles(actions)[0] == "Refactor with prediction: rename data to payload"
    result = await editor.run_action(actions[0])
    assert result["status"] == "applied"
    # The comment line is gone and the instruction was carried out.
    assert editor.buffers[uri] == PY_SOURCE.replace("data", "payload")
    assert "refactor-lsp:" not in backend.requests[-1]["prediction"]["content"]


async def test_fix_diagnostics_action(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "diag.py", PY_SOURCE)
    diagnostic = types.Diagnostic(
        range=editor.range_of(uri, "self.items"), message="Instance of 'Store' has no 'items' member", source="pylint"
    )
    actions = await editor.code_actions(uri, editor.cursor_at(uri, "self.items"), diagnostics=[diagnostic])
    fix = next(a for a in actions if a.title == "Refactor with prediction: fix diagnostics")
    fixed = "    def get(self, key):\n        return self.__dict__.get('items', {})[key]\n"
    backend.enqueue(Reply(text=fixed))
    result = await editor.run_action(fix)
    assert result["status"] == "applied"
    prompt = backend.requests[-1]["messages"][1]["content"]
    assert "Instance of 'Store' has no 'items' member" in prompt
    assert editor.buffers[uri].endswith(fixed)


async def test_stale_buffer_is_refused(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "stale.py", PY_SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=1.0))
    task = editor.start_refactor(uri, "data = open", "rename data to content")
    await until(lambda: backend.requests)
    typed = PY_SOURCE.replace("read()", "read().strip()")  # the user edits inside the rewritten function
    editor.change(uri, typed)
    result = await task
    assert result["status"] == "stale"
    assert editor.buffers[uri] == typed
    assert any("the buffer changed while the refactor ran; nothing was applied" in m for m in editor.messages())


async def test_cancel_from_progress_notification(editor: Editor, backend: FakeBackend, client: LanguageClient):
    uri = editor.open(WORKSPACE / "cancel_progress.py", PY_SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=10.0))
    known = set(client.progress_reports)
    task = editor.start_refactor(uri, "data = open", "rename data to content")
    await until(lambda: set(client.progress_reports) - known and backend.requests)
    (token,) = set(client.progress_reports) - known
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(task, 5)
    assert result["status"] == "cancelled"
    assert editor.buffers[uri] == PY_SOURCE
    assert editor.edits_received == []
    assert any("cancelled" in m for m in editor.messages())
    # The HTTP stream was closed at once, not left to run.
    for _ in range(100):
        if backend.disconnects:
            break
        await asyncio.sleep(0.01)
    assert backend.disconnects >= 1
    assert isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd)


async def test_cancel_command(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "cancel_command.py", PY_SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=10.0))
    task = editor.start_refactor(uri, "data = open", "rename data to content")
    await until(lambda: backend.requests)
    assert await editor.execute("refactorLsp.cancel", {"uri": uri}) == {"cancelled": 1, "tooLate": 0}
    result = await asyncio.wait_for(task, 5)
    assert result["status"] == "cancelled"
    assert editor.buffers[uri] == PY_SOURCE


async def test_second_refactor_on_same_document_is_refused(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "busy.py", PY_SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=0.5))
    args = {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"}
    first = asyncio.create_task(editor.execute("refactorLsp.refactor", args))
    await until(lambda: backend.requests)
    second = await editor.execute("refactorLsp.refactor", args)
    assert second["status"] == "busy"
    assert any("already running on this file" in m for m in editor.messages())
    assert (await first)["status"] == "applied"
    assert editor.buffers[uri] == PY_SOURCE.replace("data", "content")


async def test_two_documents_at_once(editor: Editor, backend: FakeBackend):
    a = editor.open(WORKSPACE / "two_a.py", PY_SOURCE)
    b = editor.open(WORKSPACE / "two_b.py", PY_SOURCE.replace("text", "words"))
    results = await asyncio.gather(
        editor.execute(
            "refactorLsp.refactor",
            {"uri": a, "range": editor.cursor_at(a, "data = open"), "instruction": "rename path to p"},
        ),
        editor.execute(
            "refactorLsp.refactor",
            {"uri": b, "range": editor.cursor_at(b, "return words"), "instruction": "rename words to w"},
        ),
    )
    assert [r["status"] for r in results] == ["applied", "applied"]
    assert editor.buffers[a] == PY_SOURCE.replace("load(path)", "load(p)").replace("open(path)", "open(p)")
    assert editor.buffers[b] == PY_SOURCE.replace("text", "words").replace(
        "def parse(words):\n    return words.split()", "def parse(w):\n    return w.split()"
    )


async def test_preview_sends_annotated_edit(editor: Editor, backend: FakeBackend, client: LanguageClient):
    client.set_configuration({"refactor": {"preview": True}}, section="refactorLsp")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    try:
        uri = editor.open(WORKSPACE / "preview.py", PY_SOURCE)
        result = await editor.execute(
            "refactorLsp.refactor",
            {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"},
        )
        assert result["status"] == "applied"
        edit = editor.edits_received[-1].edit
        assert edit.change_annotations is not None
        (annotation,) = edit.change_annotations.values()
        assert annotation.needs_confirmation is True
        assert all(isinstance(e, types.AnnotatedTextEdit) for e in edit.document_changes[0].edits)
    finally:
        client.set_configuration({}, section="refactorLsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def test_a_preview_applied_with_nothing_ticked_is_not_called_applied(
    editor: Editor, backend: FakeBackend, client: LanguageClient
):
    client.set_configuration({"refactor": {"preview": True}}, section="refactorLsp")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    editor.preview_keeps = lambda label: False  # the user presses Apply with the change unticked
    try:
        uri = editor.open(WORKSPACE / "preview-none.py", PY_SOURCE)
        result = await editor.execute(
            "refactorLsp.refactor",
            {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"},
        )
        assert result["status"] == "rejected", result
        assert editor.buffers[uri] == PY_SOURCE
        assert any("nothing was kept in the preview" in m for m in editor.messages())
        assert editor.stats[-1]["applied"] is False
    finally:
        editor.preview_keeps = None
        client.set_configuration({}, section="refactorLsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def test_rejected_edit_is_reported_calmly(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "rejected.py", PY_SOURCE)
    editor.reject_next_edit = "the user said no"
    result = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"},
    )
    assert result["status"] == "rejected"
    assert editor.buffers[uri] == PY_SOURCE
    assert any("did not apply the edit (the user said no)" in m for m in editor.messages())
    assert editor.stats[-1]["applied"] is False


@pytest.mark.parametrize("wait", [True, False])
async def test_an_edit_the_editor_refuses_with_an_error_is_reported_as_rejected(
    editor: Editor, backend: FakeBackend, wait: bool
):
    """An editor may refuse `workspace/applyEdit` with a JSON-RPC error rather than `applied: false`: the
    same one calm message, the buffer as it was; also when no reply waits for the outcome (`wait: false`)."""
    uri = editor.open(WORKSPACE / f"refused_with_error_{wait}.py", PY_SOURCE)
    editor.error_next_edit = "the file is read-only"
    arguments = {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"}
    result = await editor.execute("refactorLsp.refactor", {**arguments, "wait": wait})
    assert result["status"] == ("rejected" if wait else "started"), result
    await until(lambda: editor.stats)
    told = [m for m in editor.messages() if "did not apply the edit" in m]
    assert told == [m for m in told if "(it answered with an error: the file is read-only); nothing changed" in m]
    assert len(told) == 1, editor.messages()
    assert editor.buffers[uri] == PY_SOURCE
    assert editor.stats[-1]["applied"] is False


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "it answered null"),
        ({}, "its answer does not say whether it applied it"),
        ({"applied": "yes"}, "its answer does not say whether it applied it"),
        ({"applied": "false"}, "its answer does not say whether it applied it"),
        ({"applied": 1, "failureReason": 5}, "its answer does not say whether it applied it"),
        ([], "its answer does not say whether it applied it"),
    ],
    ids=["null", "no-applied", "applied-yes", "applied-false-string", "applied-1", "array"],
)
async def test_an_edit_the_editor_answers_without_applied_true_or_false_is_reported_as_rejected(
    editor: Editor, backend: FakeBackend, answer: object, reason: str
):
    """An editor's answer to `workspace/applyEdit` that is no ApplyWorkspaceEditResult (`null`, no `applied`,
    `applied: "yes"`) is read as a refusal, the same one calm message as `applied: false`: the job raised
    on `null`, waited for the reply timeout on `{}`, and took `"false"` for true (an edit reported applied)."""
    uri = editor.open(WORKSPACE / f"answered_{len(editor.edits_received)}_{reason[:6]}.py", PY_SOURCE)
    for wait in (True, False):
        editor.clear()
        editor.answer_next_edit = answer
        arguments = {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"}
        result = await editor.execute("refactorLsp.refactor", {**arguments, "wait": wait})
        assert result["status"] == ("rejected" if wait else "started"), result
        await until(lambda: editor.stats)
        told = [m for m in editor.messages() if "did not apply the edit" in m]
        assert len(told) == 1 and f"the editor did not apply the edit ({reason}); nothing changed" in told[0], told
        assert editor.buffers[uri] == PY_SOURCE
        assert editor.stats[-1]["applied"] is False


async def test_show_stats_compares_with_and_without_prediction(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "stats.py", PY_SOURCE)
    for prediction in (True, False):
        editor.change(uri, PY_SOURCE)
        await editor.execute(
            "refactorLsp.refactor",
            {
                "uri": uri,
                "range": editor.cursor_at(uri, "data = open"),
                "instruction": "rename data to content",
                "prediction": prediction,
            },
        )
    assert "prediction" not in backend.requests[-1]
    summary = await editor.execute("refactorLsp.showStats")
    fake = next(b for b in summary["backends"] if b["backend"] == "fake")
    assert {m["prediction"] for m in fake["modes"]} == {True, False}
    assert fake["speedup"] is not None
    assert any("with prediction" in m and "without" in m for m in editor.messages())


async def test_cancel_sent_right_after_the_request(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "cancel_at_once.py", PY_SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=10.0))
    task = editor.start_refactor(uri, "data = open", "rename data to content")
    await asyncio.sleep(0)  # the request is on its way; do not wait for the server to act on it
    cancelled = await editor.execute("refactorLsp.cancel", {"uri": uri})
    assert cancelled == {"cancelled": 1, "tooLate": 0}
    result = await asyncio.wait_for(task, 5)
    assert result["status"] == "cancelled"
    assert editor.buffers[uri] == PY_SOURCE


async def test_the_editors_reason_for_a_refusal_is_quoted_bounded_on_one_line_its_controls_spelt_out(
    editor: Editor, backend: FakeBackend
):
    """A `failureReason` is the editor's own text: a 300 KB one was a 300 KB message and reply, its escape
    sequences, line breaks and NUL sent to be shown as they were. `applied: true` with keys of its own is
    still applied."""
    uri = editor.open(WORKSPACE / "refused_reason.py", PY_SOURCE)
    arguments = {"uri": uri, "range": editor.cursor_at(uri, "data = open"), "instruction": "rename data to content"}
    editor.answer_next_edit = {
        "applied": False,
        "failureReason": "\x1b[2J\r\nread-only\u202e\x00 [fix](command:x.y)\n" + "a" * 300_000,
        "failedChange": 0,
    }
    result = await editor.execute("refactorLsp.refactor", {**arguments, "wait": True})
    assert result["status"] == "rejected"
    told = [m for m in editor.messages() if "did not apply the edit" in m]
    for message in (result["message"], *told):
        assert len(message) < 600, len(message)
        assert "(\\u001b[2J read-only\\u202e\\u0000 [fix] (command:x.y) aaa" in message, message
        assert "…); nothing changed" in message and not any(ord(c) < 32 for c in message), message
    assert len(told) == 1 and editor.buffers[uri] == PY_SOURCE
    editor.clear()
    editor.answer_next_edit = {"applied": True, "failedChange": 0, "failureReason": "x", "more": [1] * 1000}
    result = await editor.execute("refactorLsp.refactor", {**arguments, "wait": True})
    assert result["status"] == "applied", result
