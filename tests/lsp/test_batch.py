"""Batches end to end over real LSP: one instruction for each definition of a file or a selection,
run at once against the loopback backend, applied as ONE workspace edit (issue 23)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import region_of, rule_responder
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, fresh, server_setup, session, until

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "batch-workspace"
CONCURRENCY = 4
FUNCTIONS = 12


def function(number: int) -> str:
    return f"def f{number}(value):\n    total = value + {number}\n    return total\n"


SOURCE = "import os\n\n\n" + "\n\n".join(function(n) for n in range(FUNCTIONS))
RENAMED = SOURCE.replace("total", "result")
RENAME = "rename total to result"


# Passes slow enough that the refactors overlap: a few tens of milliseconds each.
backend = fake_fixture(step_s=0.01)
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend, refactor={"concurrency": CONCURRENCY}))


@pytest.fixture
def editor(client: LanguageClient, backend: FakeBackend) -> Editor:
    backend.responder, backend.step_s = rule_responder, 0.01  # as a test may have left them
    return fresh(client)


def each(uri: str, **arguments: Any) -> dict[str, Any]:
    return {"uri": uri, "instruction": RENAME, **arguments}


def targets(stats: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["definition"]: t for t in stats["batch"]["targets"]}


def streaming_s(spans: list[tuple[float, float]]) -> float:
    """How long at least one of these (start, end) spans was running: their union, sorted by start."""
    total, reached = 0.0, float("-inf")
    for start, end in spans:
        total += max(0.0, end - max(start, reached))
        reached = max(reached, end)
    return total


async def test_each_definition_of_a_file_concurrently_as_one_edit(
    editor: Editor, backend: FakeBackend, client: LanguageClient
):
    client.progress_reports.clear()
    backend.step_s = 0.02  # each answer streams for a while: the ones in flight overlap even on a busy machine
    uri = editor.open(WORKSPACE / "twelve.py", SOURCE)
    reply = await editor.execute("refactorLsp.refactorEach", each(uri, targets="file"))
    assert reply["status"] == "applied", reply
    # One workspace edit, one document change holding every definition's edits: one undo.
    (sent,) = editor.edits_received
    (change,) = sent.edit.document_changes
    assert change.text_document.version == 1
    assert len(change.edits) >= FUNCTIONS
    assert editor.buffers[uri] == RENAMED
    # One refactor per definition, CONCURRENCY of them in flight at once, each with its own region as
    # the prediction and the file as it was in the prompt (never another target's answer).
    assert len(backend.requests) == FUNCTIONS
    assert backend.peak_active_streams == CONCURRENCY
    predictions = sorted(r["prediction"]["content"] for r in backend.requests)
    assert predictions == sorted(function(n) for n in range(FUNCTIONS))
    for request in backend.requests:
        prompt = "\n".join(m["content"] for m in request["messages"])
        assert "total = value + 11" in prompt and "result =" not in prompt
    # One message, one stats notification: every target, and the batch's totals.
    (summary,) = [m for m in editor.messages() if "definitions:" in m]
    assert f"{FUNCTIONS} definitions: {FUNCTIONS} applied" in summary
    assert f"{CONCURRENCY} at a time" in summary and "tok/s together" in summary
    (notified,) = editor.stats
    assert notified["summary"] == reply["message"] and notified["status_text"] == reply["stats"]["status_text"]
    stats = reply["stats"]  # the same record (the notification's nested objects arrive as named tuples here)
    totals = stats["batch"]["totals"]
    assert totals["targets"] == FUNCTIONS and totals["outcomes"] == {"applied": FUNCTIONS}
    assert totals["concurrency"] == CONCURRENCY
    latencies = [t["stats"]["latency_ms"] for t in targets(stats).values()]
    assert totals["latency_sum_ms"] == pytest.approx(sum(latencies))
    assert stats["latency_ms"] == totals["wall_ms"] >= max(latencies)  # the batch's wall time spans each refactor
    # They ran at once, as the fake timed its answers: some answer was streaming for well under the time
    # they took added up (4 at a time: about a quarter of it; one after another: all of it).
    spans = sorted(backend.answer_spans.values())
    assert len(spans) == FUNCTIONS
    assert streaming_s(spans) < 0.6 * sum(end - start for start, end in spans)
    assert stats["applied"] is True and stats["summary"] == reply["message"]
    assert {t["outcome"] for t in targets(stats).values()} == {"applied"}
    # Each says it ran beside others: what `auto` and the prediction guard learn of speed leaves it out.
    assert {t["stats"]["concurrency"] for t in targets(stats).values()} == {CONCURRENCY}
    assert targets(stats)["f3"]["lines"] == [19, 21]
    # One progress for the batch: begun, "k of 12 done" with what runs, ended.
    (reports,) = client.progress_reports.values()
    assert reports[0].title == f"Refactor with prediction: {RENAME}, each of 12 definitions in the file"
    assert re.fullmatch(r"0 of 12 done( · running f\d+.*)? on fake", reports[1].message)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_a_failing_target_is_listed_and_the_others_applied(editor: Editor, backend: FakeBackend):
    def responder(request: dict[str, Any]) -> str:
        region = region_of(request["messages"])
        return region * 80 if "def f3(" in region else rule_responder(request)  # f3's answer runs to the cap

    backend.responder = responder
    uri = editor.open(WORKSPACE / "one_fails.py", SOURCE)
    reply = await editor.execute("refactorLsp.refactorEach", each(uri, targets="file"))
    assert reply["status"] == "partial", reply
    assert editor.buffers[uri] == RENAMED.replace(function(3).replace("total", "result"), function(3))
    assert len(editor.edits_received) == 1
    (message,) = [m for m in editor.messages() if "definitions:" in m]
    assert f"{FUNCTIONS} definitions: {FUNCTIONS - 1} applied, 1 refused" in message
    assert "not applied: function `f3` (lines 19-21): the model's answer was cut off" in message
    failed = targets(reply["stats"])["f3"]
    assert failed["outcome"] == "refused" and "cut off" in failed["reason"]
    assert failed["stats"]["applied"] is False


async def test_typing_inside_one_region_refuses_only_that_one(editor: Editor, backend: FakeBackend):
    backend.step_s = 0.03
    uri = editor.open(WORKSPACE / "typed.py", SOURCE)
    task = asyncio.create_task(editor.execute("refactorLsp.refactorEach", each(uri, targets="file")))
    await until(lambda: len(backend.requests) >= 1)
    typed = SOURCE.replace("total = value + 5", "total = value + 5  # mine").replace("import os", "import os, re")
    editor.change(uri, typed)
    reply = await asyncio.wait_for(task, 20)
    assert reply["status"] == "partial", reply
    # f5 is as the user typed it; every other definition is renamed, on top of the typing above them.
    expected = RENAMED.replace("import os", "import os, re").replace(
        function(5).replace("total", "result"), function(5).replace("value + 5", "value + 5  # mine")
    )
    assert editor.buffers[uri] == expected
    stale = targets(reply["stats"])["f5"]
    assert stale["outcome"] == "stale" and "typed inside it" in stale["reason"]
    assert "applied on top of the changes you made meanwhile" in reply["message"]
    assert reply["message"].endswith("not applied: function `f5` (lines 29-31): " + stale["reason"])


async def test_a_rejected_edit_changes_nothing_and_is_said_once(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "rejected.py", SOURCE)
    editor.reject_next_edit = "the user said no"
    reply = await editor.execute("refactorLsp.refactorEach", each(uri, targets="file"))
    assert reply["status"] == "rejected" and editor.buffers[uri] == SOURCE
    assert reply["message"].count("the user said no") == 1
    assert {t["outcome"] for t in targets(reply["stats"]).values()} == {"rejected"}
    assert reply["stats"]["applied"] is False


async def test_cancel_applies_nothing(editor: Editor, backend: FakeBackend):
    backend.step_s = 0.05
    uri = editor.open(WORKSPACE / "cancelled.py", SOURCE)
    task = asyncio.create_task(editor.execute("refactorLsp.refactorEach", each(uri, targets="file")))
    await until(lambda: backend.active_streams >= 2)
    assert await editor.execute("refactorLsp.cancel", {"uri": uri}) == {"cancelled": 1, "tooLate": 0}
    reply = await asyncio.wait_for(task, 10)
    assert reply["status"] == "cancelled"
    assert reply["message"] == "the batch was cancelled; nothing was applied, the document is as it was"
    assert editor.edits_received == [] and editor.buffers[uri] == SOURCE
    await until(lambda: backend.active_streams == 0)  # the streams in flight were closed
    assert len(backend.requests) < FUNCTIONS  # the ones not started never were


async def test_the_selection_action_appears_for_two_definitions_or_more(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "selection.py", SOURCE)
    inside_one = types.Range(editor.range_of(uri, "def f2").start, editor.range_of(uri, "return total", 2).end)
    over_two = types.Range(editor.range_of(uri, "total = value + 2").start, editor.range_of(uri, "value + 3").end)
    batch_titles = [a.title for a in await editor.code_actions(uri, over_two) if "each of" in a.title]
    assert "Refactor with prediction: Add type annotations, each of the 2 definitions in the selection" in batch_titles
    for rng in (inside_one, editor.cursor_at(uri, "total = value + 2")):
        assert not [a for a in await editor.code_actions(uri, rng) if "each of" in a.title]
    # Picked, it rewrites those two definitions and nothing else.
    backend.responder = lambda request: region_of(request["messages"]).replace("total", "result")
    action = next(a for a in await editor.code_actions(uri, over_two) if a.title == batch_titles[0])
    reply = await editor.run_action(action)
    assert reply["status"] == "applied", reply
    expected = SOURCE
    for number in (2, 3):
        expected = expected.replace(function(number), function(number).replace("total", "result"))
    assert editor.buffers[uri] == expected
    assert len(backend.requests) == 2


async def test_preview_asks_for_each_definition(editor: Editor, backend: FakeBackend, client: LanguageClient):
    client.set_configuration({"refactor": {"preview": True}}, section="refactorLsp")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    try:
        source = "\n\n".join(function(n) for n in range(3))
        uri = editor.open(WORKSPACE / "preview.py", source)
        reply = await editor.execute("refactorLsp.refactorEach", each(uri, targets="file"))
        assert reply["status"] == "applied", reply
        (sent,) = editor.edits_received
        annotations = sent.edit.change_annotations
        assert annotations is not None
        # One annotation a change, its label the change's words and its description the definition.
        assert [(a.label, a.description) for a in annotations.values()] == [
            (f"lines {5 * n + 2}-{5 * n + 3}: `total` → `result`", f"function `f{n}` (lines {5 * n + 1}-{5 * n + 3})")
            for n in range(3)
        ]
        assert all(a.needs_confirmation for a in annotations.values())
        edits = sent.edit.document_changes[0].edits
        assert all(isinstance(e, types.AnnotatedTextEdit) for e in edits)
        assert {e.annotation_id for e in edits} == set(annotations)
    finally:
        client.set_configuration({}, section="refactorLsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def test_a_definition_left_out_of_the_preview_is_reported_so(
    editor: Editor, backend: FakeBackend, client: LanguageClient
):
    """VS Code answers `applied` for a previewed edit whatever the user ticked: the server reads the
    document to say which definitions it kept."""
    client.set_configuration({"refactor": {"preview": True}}, section="refactorLsp")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    editor.preview_keeps = lambda label: "`f1`" not in label  # the user ticks f0 and f2, not f1
    try:
        source = "\n\n".join(function(n) for n in range(3))
        uri = editor.open(WORKSPACE / "preview-some.py", source)
        reply = await editor.execute("refactorLsp.refactorEach", each(uri, targets="file"))
        assert reply["status"] == "partial", reply
        expected = source.replace(function(0), function(0).replace("total", "result"))
        expected = expected.replace(function(2), function(2).replace("total", "result"))
        assert editor.buffers[uri] == expected
        assert "1 of 3 left out in the preview" in reply["message"]
        kept = list(targets(reply["stats"]).values())
        assert [t["outcome"] for t in kept] == ["applied", "rejected", "applied"]
        assert kept[1]["reason"] == "left out in the preview"
    finally:
        editor.preview_keeps = None
        client.set_configuration({}, section="refactorLsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def test_bad_arguments_are_invalid_params(editor: Editor):
    uri = editor.open(WORKSPACE / "bad.py", SOURCE)
    cases = [
        ({"uri": uri, "targets": "file"}, "say what to do"),
        ({"uri": uri, "targets": "everything", "instruction": RENAME}, "`targets` must be one of selection, file"),
        ({"uri": uri, "targets": "selection", "instruction": RENAME}, "needs a `range`"),
        ({"uri": uri, "targets": "file", "actionId": "fix-diagnostics"}, "belongs to one region"),
    ]
    for arguments, problem in cases:
        with pytest.raises(Exception, match=re.escape(problem)):
            await editor.execute("refactorLsp.refactorEach", arguments)
