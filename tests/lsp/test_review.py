"""Each change of an answer yours to keep or drop, over real LSP against the loopback backend (issue 38):
one annotated edit per change where the editor takes annotations, a plugin's review (`review:
"changes"`, then `refactorLsp.applyChanges`), the editor's preview (`review: "preview"`), what is kept
checked, a review held open on its document."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings, fake_fixture, write_config
from tests.lsp_harness import Editor, server_setup, session, start_session, until

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "review-workspace"

SOURCE = """import os


def fetch(url, retries):

    data = None

    for attempt in range(retries):
        data = get(url)

    if not data:
        raise ValueError(url)

    total = len(data)

    return total
"""
REGION = SOURCE[SOURCE.index("def fetch") :]
# Five changes, a blank line between each: the signature, the start value, the call, the error, the size.
ANSWER = (
    REGION.replace("def fetch(url, retries):", "def fetch(url, retries, timeout=10):")
    .replace("data = None", "data = {}")
    .replace("data = get(url)", "data = get(url, timeout=timeout)")
    .replace("raise ValueError(url)", "raise LookupError(url)")
    .replace("total = len(data)", "total = len(data or [])")
)
LABELS = [
    "line 4: `def fetch(url, retries):` → `def fetch(url, retries, timeout=10):`",
    "line 6: `data = None` → `data = {}`",
    "line 9: `data = get(url)` → `data = get(url, timeout=timeout)`",
    "line 12: `ValueError` → `LookupError`",
    "line 14: `total = len(data)` → `total = len(data or [])`",
]

backend = fake_fixture(step_s=0.002)
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend, keys={"prediction": "always"}))


def ask(editor: Editor, uri: str, **more: Any) -> dict[str, Any]:
    return {"uri": uri, "range": editor.cursor_at(uri, "data = None"), "instruction": "harden it", **more}


def keeping(*numbers: int) -> str:
    """The answer with only the changes numbered (1-5, as LABELS) made."""
    pairs = [
        ("def fetch(url, retries):", "def fetch(url, retries, timeout=10):"),
        ("data = None", "data = {}"),
        ("data = get(url)", "data = get(url, timeout=timeout)"),
        ("raise ValueError(url)", "raise LookupError(url)"),
        ("total = len(data)", "total = len(data or [])"),
    ]
    text = SOURCE
    for number in numbers:
        old, new = pairs[number - 1]
        text = text.replace(old, new)
    return text


async def test_each_change_is_one_annotated_edit_with_its_label(editor: Editor, backend: FakeBackend) -> None:
    uri = editor.open(WORKSPACE / "annotated.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    reply = await editor.execute("refactorLsp.refactor", ask(editor, uri))
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == SOURCE.replace(REGION, ANSWER)
    (sent,) = editor.edits_received
    annotations = sent.edit.change_annotations
    assert annotations is not None and [a.label for a in annotations.values()] == LABELS
    assert not any(a.needs_confirmation for a in annotations.values())  # applied at once: no review asked
    edits = sent.edit.document_changes[0].edits
    assert all(isinstance(e, types.AnnotatedTextEdit) for e in edits)
    assert [annotations[e.annotation_id].label for e in edits] == LABELS  # one edit a change, in order


async def test_a_plugin_reviews_the_changes_and_what_it_keeps_is_applied_as_one_edit(
    editor: Editor, backend: FakeBackend
) -> None:
    uri = editor.open(WORKSPACE / "review.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    assert offer["status"] == "review", offer
    assert editor.edits_received == [] and editor.buffers[uri] == SOURCE  # nothing applied yet
    changes = offer["review"]["changes"]
    assert [c["label"] for c in changes] == LABELS and [c["id"] for c in changes] == [1, 2, 3, 4, 5]
    assert changes[3]["range"]["start"]["line"] == 11 and changes[3]["definition"].startswith("function `fetch`")
    # Another refactor of the document waits for the review.
    busy = await editor.execute("refactorLsp.refactor", ask(editor, uri))
    assert busy["status"] == "busy" and "a review is open on this file" in busy["message"]
    reply = await editor.execute(
        "refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [1, 2, 4]}
    )
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == keeping(1, 2, 4)
    assert len(editor.edits_received) == 1  # one edit: one undo
    assert "kept 3 of 5 changes" in editor.stats[-1]["summary"]
    assert (editor.stats[-1]["changes"], editor.stats[-1]["changes_kept"]) == (5, 3)
    # The review is over: the document is free, and the same review cannot be applied twice.
    again = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": []})
    assert again["status"] == "error" and "no review is open" in again["message"]


async def test_a_kept_subset_that_breaks_the_code_is_refused_and_names_the_missing_change(
    editor: Editor, backend: FakeBackend
) -> None:
    source = "def build(items):\n    data = None\n\n    size = 1\n    return data, size\n"
    answer = "def build(items):\n    data = dict(\n\n    size=1)\n    return data, size\n"
    uri = editor.open(WORKSPACE / "broken-subset.py", source)
    backend.enqueue(Reply(text=answer))
    offer = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "data = None"), "instruction": "x", "review": "changes"},
    )
    assert [c["id"] for c in offer["review"]["changes"]] == [1, 2]
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [1]})
    assert reply["status"] == "error", reply
    assert "keeping change 1 without change 2 leaves an error: '(' was never closed" in reply["message"]
    assert editor.buffers[uri] == source and editor.edits_received == []


async def test_the_document_changed_inside_the_region_while_reviewing_applies_nothing(
    editor: Editor, backend: FakeBackend
) -> None:
    uri = editor.open(WORKSPACE / "stale-review.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    typed = SOURCE.replace("return total", "return total  # checked")
    editor.change(uri, typed)
    reply = await editor.execute(
        "refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [1, 2]}
    )
    assert reply["status"] == "stale", reply
    assert editor.buffers[uri] == typed and editor.edits_received == []


async def test_typing_outside_the_region_while_reviewing_is_kept_and_the_changes_applied_on_top(
    editor: Editor, backend: FakeBackend
) -> None:
    uri = editor.open(WORKSPACE / "rebased-review.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    editor.change(uri, SOURCE.replace("import os\n", "import os\nimport sys\n"))
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [5]})
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == keeping(5).replace("import os\n", "import os\nimport sys\n")


async def test_cancel_drops_an_open_review_and_frees_the_document(editor: Editor, backend: FakeBackend) -> None:
    uri = editor.open(WORKSPACE / "cancel-review.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    assert (await editor.execute("refactorLsp.cancel", {"uri": uri})) == {"cancelled": 1, "tooLate": 0}
    assert any("nothing was applied" in m for m in editor.messages())
    dropped = await editor.execute(
        "refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [1]}
    )
    assert dropped["status"] == "error" and editor.buffers[uri] == SOURCE
    backend.enqueue(Reply(text=ANSWER))
    assert (await editor.execute("refactorLsp.refactor", ask(editor, uri)))["status"] == "applied"


async def test_closing_the_file_drops_its_review_and_says_so(editor: Editor, backend: FakeBackend) -> None:
    uri = editor.open(WORKSPACE / "close-review.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    editor.clear()
    editor.close(uri)
    await until(lambda: editor.messages())
    assert editor.messages() == ["refactor-lsp: the document was closed with its review open; nothing was applied"]
    late = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [1]})
    assert late["status"] == "error" and "no review is open" in late["message"]


async def test_each_definition_reviewed_at_once_names_each_change_by_its_definition(
    editor: Editor, backend: FakeBackend
) -> None:
    source = (
        "def f(value):\n    total = value\n    return total\n\n\ndef g(value):\n    total = value\n    return total\n"
    )
    uri = editor.open(WORKSPACE / "each-review.py", source)
    offer = await editor.execute(
        "refactorLsp.refactorEach",
        {"uri": uri, "targets": "file", "instruction": "rename total to result", "review": "changes"},
    )
    assert offer["status"] == "review", offer
    changes = offer["review"]["changes"]
    assert [c["definition"].split(" (")[0] for c in changes] == ["function `f`", "function `g`"]
    assert [c["label"] for c in changes] == ["lines 2-3: `total` → `result`", "lines 7-8: `total` → `result`"]
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [2]})
    assert reply["status"] == "partial", reply
    assert editor.buffers[uri] == source.replace("    total = value\n    return total\n\n\n", "XX", 1).replace(
        "total", "result"
    ).replace("XX", "    total = value\n    return total\n\n\n")
    outcomes = [t["outcome"] for t in reply["stats"]["batch"]["targets"]]
    assert outcomes == ["rejected", "applied"]
    # The request's record counts the changes kept, as one refactor's does.
    assert "kept 1 of 2 changes" in reply["message"]
    assert (reply["stats"]["changes"], reply["stats"]["changes_kept"]) == (2, 1)


async def test_the_editors_preview_keeps_the_ticked_changes_and_undoes_a_subset_that_breaks_the_code(
    editor: Editor, backend: FakeBackend
) -> None:
    uri = editor.open(WORKSPACE / "preview-review.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    editor.preview_keeps = lambda label: not label.startswith("line 12:")  # the user unticks the error change
    try:
        reply = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="preview"))
        assert reply["status"] == "applied", reply
        assert editor.buffers[uri] == keeping(1, 2, 3, 5)
        annotations = editor.edits_received[0].edit.change_annotations
        assert annotations is not None and all(a.needs_confirmation for a in annotations.values())
        assert "kept 4 of 5 changes" in editor.stats[-1]["summary"]
        # A subset that leaves a bracket open: what the preview applied is undone, nothing stays.
        source = "def build(items):\n    data = None\n\n    size = 1\n    return data, size\n"
        broken = editor.open(WORKSPACE / "preview-broken.py", source)
        backend.enqueue(Reply(text="def build(items):\n    data = dict(\n\n    size=1)\n    return data, size\n"))
        editor.preview_keeps = lambda label: label.startswith("line 2:")
        reply = await editor.execute(
            "refactorLsp.refactor",
            {"uri": broken, "range": editor.cursor_at(broken, "data = None"), "instruction": "x", "review": "preview"},
        )
        assert reply["status"] == "rejected", reply
        assert "keeping change 1 without change 2 leaves an error" in reply["message"]
        assert "what the preview applied was undone" in reply["message"]
        assert editor.buffers[broken] == source
    finally:
        editor.preview_keeps = None


@pytest.mark.parametrize("review", ["sometimes", 1])
async def test_a_review_that_is_no_mode_is_invalid_params(editor: Editor, review: Any) -> None:
    uri = editor.open(WORKSPACE / "bad-review.py", SOURCE)
    with pytest.raises(Exception, match="review"):
        await editor.execute("refactorLsp.refactor", ask(editor, uri, review=review))


async def test_an_editor_without_annotations_gets_todays_edit(backend: FakeBackend, tmp_path: Any) -> None:
    editor = await start_session(
        SETUP, tmp_path / "emacs", editor_settings(backend, keys={"prediction": "always"}), client_name="emacs"
    )
    client: LanguageClient = editor.client
    try:
        uri = editor.open(tmp_path / "emacs" / "plain.py", SOURCE)
        backend.enqueue(Reply(text=ANSWER))
        reply = await editor.execute("refactorLsp.refactor", ask(editor, uri))
        assert reply["status"] == "applied", reply
        (sent,) = editor.edits_received
        assert sent.edit.change_annotations is None
        assert not any(isinstance(e, types.AnnotatedTextEdit) for e in sent.edit.document_changes[0].edits)
        assert editor.buffers[uri] == SOURCE.replace(REGION, ANSWER)
    finally:
        await client.shutdown_session()


async def test_an_apply_that_names_another_review_or_no_change_of_it_leaves_the_review_open(
    editor: Editor, backend: FakeBackend
) -> None:
    """Two reviews open on two documents; answers sent to the wrong one, or naming a change the review
    lacks, are refused and end nothing (before: the review they reached was dropped, its model answer lost)."""
    first = editor.open(WORKSPACE / "two-reviews-a.py", SOURCE)
    second = editor.open(WORKSPACE / "two-reviews-b.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer_a = await editor.execute("refactorLsp.refactor", ask(editor, first, review="changes"))
    backend.enqueue(Reply(text=ANSWER))
    offer_b = await editor.execute("refactorLsp.refactor", ask(editor, second, review="changes"))
    id_a, id_b = offer_a["review"]["id"], offer_b["review"]["id"]
    assert id_a != id_b
    crossed = await editor.execute("refactorLsp.applyChanges", {"uri": first, "review": id_b, "keep": [1]})
    assert crossed["status"] == "error" and "no such review" in crossed["message"], crossed
    unknown = await editor.execute("refactorLsp.applyChanges", {"uri": first, "review": id_a, "keep": [1, 9]})
    assert unknown["status"] == "error" and "the review has no change 9" in unknown["message"], unknown
    assert "the review is still open" in unknown["message"]
    assert editor.edits_received == [] and editor.buffers[first] == SOURCE == editor.buffers[second]
    # Both reviews are still open and each applies what is kept of it, once.
    reply_a = await editor.execute("refactorLsp.applyChanges", {"uri": first, "review": id_a, "keep": [2]})
    reply_b = await editor.execute("refactorLsp.applyChanges", {"uri": second, "review": id_b, "keep": [5]})
    assert (reply_a["status"], reply_b["status"]) == ("applied", "applied"), (reply_a, reply_b)
    assert (editor.buffers[first], editor.buffers[second]) == (keeping(2), keeping(5))


async def test_two_answers_to_one_review_at_once_apply_one_and_hold_the_document_until_it_lands(
    editor: Editor, backend: FakeBackend
) -> None:
    """The second answer is refused; while the first's edit is with the editor, another refactor of the
    document is busy (before: the refused answer freed the document while the first was still applying)."""
    uri = editor.open(WORKSPACE / "two-answers.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    review = offer["review"]["id"]
    APPLY = "refactorLsp.applyChanges"
    gate, reached = asyncio.Event(), asyncio.Event()
    original = editor._on_apply_edit

    async def held(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        reached.set()
        await gate.wait()  # the user has not confirmed yet
        return await original(params)

    editor._on_apply_edit = held  # type: ignore[method-assign]
    try:
        one = asyncio.create_task(editor.execute(APPLY, {"uri": uri, "review": review, "keep": [1]}))
        two = asyncio.create_task(editor.execute(APPLY, {"uri": uri, "review": review, "keep": [3]}))
        async with asyncio.timeout(10):
            await reached.wait()
            refused = await two
        assert refused["status"] == "error", refused
        busy = await editor.execute("refactorLsp.refactor", ask(editor, uri))
        assert busy["status"] == "busy", busy
        gate.set()
        assert (await one)["status"] == "applied"
    finally:
        gate.set()
        editor._on_apply_edit = original  # type: ignore[method-assign]
    assert editor.buffers[uri] == keeping(1) and len(editor.edits_received) == 1


# A checker that finds an error only in a subset keeping `step_one(` without `step_two(`, and takes its
# time there (a file beside it says it started), so the user types while it runs.
SLOW_CHECKER = (
    "import sys, time, pathlib; text = sys.stdin.read(); bad = 'step_one(' in text and 'step_two(' not in text\n"
    "if bad: pathlib.Path(sys.argv[1]).touch(); time.sleep(1.5); print('stdin:2: step_one needs step_two')\n"
    "sys.exit(bad)"
)


async def test_undoing_a_previewed_subset_keeps_what_the_user_typed_meanwhile(
    backend: FakeBackend, tmp_path: Any
) -> None:
    """The preview kept a subset the checker refuses; the user typed above the function while it checked:
    the undo takes back the kept change alone (before: the whole document was set back to what it was
    when the edit went, and the typed line was lost)."""
    started = tmp_path / "checker-started"
    user = write_config(
        tmp_path, fake=backend, refactor={"checkers": {"python": [sys.executable, "-c", SLOW_CHECKER, str(started)]}}
    )
    workspace = tmp_path / "undo-workspace"
    settings = editor_settings(backend, keys={"prediction": "always"})
    editor = await start_session(SETUP, workspace, settings, env={"REFACTOR_LSP_CONFIG": str(user)})
    source = "import os\n\n\ndef f():\n    a = 1\n\n    b = 2\n    return a + b\n"
    try:
        uri = editor.open(workspace / "undo.py", source)
        backend.enqueue(Reply(text="def f():\n    a = step_one(1)\n\n    b = step_two(2)\n    return a + b\n"))
        editor.preview_keeps = lambda label: label.startswith("line 5:")  # step_one kept, step_two unticked
        typed = "import os\nimport sys\n"

        async def type_while_checking() -> None:
            await until(started.exists, 30)
            editor.change(uri, editor.buffers[uri].replace("import os\n", typed, 1))

        typing = asyncio.create_task(type_while_checking())
        try:
            reply = await editor.execute(
                "refactorLsp.refactor",
                {"uri": uri, "range": editor.cursor_at(uri, "a = 1"), "instruction": "x", "review": "preview"},
            )
        finally:
            typing.cancel()
        assert started.exists(), reply  # the checker was still running when the user typed
        assert reply["status"] == "rejected", reply
        assert "keeping change 1 without change 2 leaves an error" in reply["message"]
        assert "what the preview applied was undone" in reply["message"]
        assert editor.buffers[uri] == source.replace("import os\n", typed, 1)
    finally:
        await editor.client.shutdown_session()


async def test_a_cancel_while_a_previewed_subset_is_checked_comes_too_late_and_says_what_happened(
    backend: FakeBackend, tmp_path: Any
) -> None:
    """The preview's edit is in the document when its kept subset is checked: a cancel then cannot
    unsay it. The check ends as ever (here: the subset is refused and undone) and the reply says so
    (before: "cancelled; nothing was applied", with the kept change left in the document)."""
    started = tmp_path / "checker-started"
    user = write_config(
        tmp_path, fake=backend, refactor={"checkers": {"python": [sys.executable, "-c", SLOW_CHECKER, str(started)]}}
    )
    workspace = tmp_path / "cancel-workspace"
    settings = editor_settings(backend, keys={"prediction": "always"})
    editor = await start_session(SETUP, workspace, settings, env={"REFACTOR_LSP_CONFIG": str(user)})
    source = "def f():\n    a = 1\n\n    b = 2\n    return a + b\n"
    try:
        uri = editor.open(workspace / "cancel.py", source)
        backend.enqueue(Reply(text="def f():\n    a = step_one(1)\n\n    b = step_two(2)\n    return a + b\n"))
        editor.preview_keeps = lambda label: label.startswith("line 2:")  # step_one kept, step_two unticked

        async def cancel_while_checking() -> None:
            await until(started.exists, 30)
            await editor.execute("refactorLsp.cancel", {"uri": uri})
            await editor.execute("refactorLsp.cancel", {"uri": uri})  # twice: still too late

        cancelling = asyncio.create_task(cancel_while_checking())
        try:
            reply = await editor.execute(
                "refactorLsp.refactor",
                {"uri": uri, "range": editor.cursor_at(uri, "a = 1"), "instruction": "x", "review": "preview"},
            )
        finally:
            await cancelling
        assert reply["status"] == "rejected", reply
        assert "what the preview applied was undone" in reply["message"], reply
        assert "cancelled" not in reply["message"]
        assert editor.buffers[uri] == source
    finally:
        await editor.client.shutdown_session()


async def test_changes_of_a_crlf_document_with_astral_characters_have_utf16_ranges_and_apply_exactly(
    editor: Editor, backend: FakeBackend
) -> None:
    """Offsets count code points, ranges UTF-16 units: an emoji (two units) before a change on its line and
    CRLF line ends move neither the range the plugin shows nor the text applied."""
    source = 'def greet(name):\r\n    note = "🎉🎉"; data = None\r\n\r\n    return note, data\r\n'
    answer = 'def greet(name):\r\n    note = "🎉🎉"; data = {}\r\n\r\n    return note, data or name\r\n'
    uri = editor.open(WORKSPACE / "astral-crlf.py", source)
    backend.enqueue(Reply(text=answer))
    offer = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "data = None"), "instruction": "x", "review": "changes"},
    )
    assert offer["status"] == "review", offer
    first, second = offer["review"]["changes"]
    units = len('    note = "🎉🎉"; data = '.encode("utf-16-le")) // 2
    assert first["range"]["start"] == {"line": 1, "character": units}, first
    assert source[first["edits"][0]["start"] : first["edits"][0]["end"]] == "None"  # code points
    assert second["range"]["start"]["line"] == 3
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [1]})
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == source.replace("data = None", "data = {}")


async def test_dropping_every_change_says_so_calmly_and_applies_nothing(editor: Editor, backend: FakeBackend) -> None:
    """`keep: []` on one refactor and on a batch: `rejected`, the message says every change was dropped
    (before: one refactor said `no changes: the model's answer equals the current text`, `unchanged`;
    a batch said it as an error)."""
    uri = editor.open(WORKSPACE / "drop-all.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    editor.clear()
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": []})
    assert reply["status"] == "rejected", reply
    assert "every change dropped in the review" in reply["message"]
    (shown,) = editor.client.messages
    assert "every change dropped in the review" in shown.message and "equals the current text" not in shown.message
    assert shown.type == types.MessageType.Info
    assert editor.buffers[uri] == SOURCE and editor.edits_received == []
    source = "def f(value):\n    total = value\n    return total\n\n\n" * 2
    batch = editor.open(WORKSPACE / "drop-all-each.py", source.replace("def f", "def g", 1))
    source = editor.buffers[batch]
    offer = await editor.execute(
        "refactorLsp.refactorEach",
        {"uri": batch, "targets": "file", "instruction": "rename total to result", "review": "changes"},
    )
    editor.clear()
    answer = {"uri": batch, "review": offer["review"]["id"], "keep": []}
    reply = await editor.execute("refactorLsp.applyChanges", answer)
    assert reply["status"] == "rejected", reply
    (shown,) = editor.client.messages
    assert shown.type == types.MessageType.Info, shown
    assert editor.buffers[batch] == source and editor.edits_received == []


async def test_an_editor_without_a_preview_is_not_said_to_have_reviewed(backend: FakeBackend, tmp_path: Any) -> None:
    """An editor that takes no change annotations: `review: "preview"` is refused before the model is
    asked, and the `refactor.preview` setting applies the edit as ever without counting changes as kept
    (before: everything applied unasked, `kept 5 of 5 changes` in the stats and the history)."""
    folder = tmp_path / "no-preview"
    settings = editor_settings(backend, keys={"prediction": "always"}, refactor={"preview": True})
    editor = await start_session(SETUP, folder, settings, client_name="emacs")
    try:
        uri = editor.open(folder / "plain.py", SOURCE)
        backend.reset()
        reply = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="preview"))
        assert reply["status"] == "error" and "this editor cannot preview each change" in reply["message"], reply
        assert backend.requests == [] and editor.buffers[uri] == SOURCE and editor.edits_received == []
        backend.enqueue(Reply(text=ANSWER))
        reply = await editor.execute("refactorLsp.refactor", ask(editor, uri))
        assert reply["status"] == "applied", reply
        assert editor.buffers[uri] == SOURCE.replace(REGION, ANSWER)
        assert "kept" not in editor.stats[-1]["summary"] and editor.stats[-1]["changes_kept"] is None
    finally:
        await editor.client.shutdown_session()


async def test_an_answer_without_keep_is_invalid_and_leaves_the_review_open(
    editor: Editor, backend: FakeBackend
) -> None:
    """`keep` left out is a plugin's mistake, not "drop them all" (before: read as `[]`, the review ended)."""
    uri = editor.open(WORKSPACE / "no-keep.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    with pytest.raises(Exception, match=r"\{uri, review, keep\}"):
        await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"]})
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [4]})
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == keeping(4)


@pytest.mark.parametrize("keep", [None, {}, [-1], [1, 1], ["1"], [10**9], [1.5], [True]], ids=repr)
async def test_an_answer_whose_keep_is_no_list_of_change_ids_is_invalid_and_leaves_the_review_open(
    editor: Editor, backend: FakeBackend, keep: object
) -> None:
    """`keep: null` is `keep` left out, not "drop them all" (before: read as `[]`, every change dropped and
    the review ended); each other bad `keep` is refused by name, the review still open for the right one."""
    uri = editor.open(WORKSPACE / f"bad-keep-{abs(hash(repr(keep)))}.py", SOURCE)
    backend.enqueue(Reply(text=ANSWER))
    offer = await editor.execute("refactorLsp.refactor", ask(editor, uri, review="changes"))
    with pytest.raises(Exception, match="`keep`"):
        await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": keep})
    assert editor.edits_received == [] and editor.buffers[uri] == SOURCE
    reply = await editor.execute("refactorLsp.applyChanges", {"uri": uri, "review": offer["review"]["id"], "keep": [4]})
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == keeping(4)
