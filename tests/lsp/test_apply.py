"""`refactorLsp.applySnippet` end to end over real LSP (issue 32): a lazy snippet merged into the
definitions it names, as ONE versioned workspace edit, with progress, stats and cancel as a refactor's;
the prediction the backend received is the named definition, never the file. On CPython's difflib.py
and on domutils' JavaScript (code we did not write)."""

from __future__ import annotations

import asyncio
import difflib
import inspect
import os
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import rule_responder
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, fresh, server_setup, session, until

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "apply-workspace"
DIFFLIB = Path(inspect.getsourcefile(difflib) or "").read_text(encoding="utf-8")
DOMUTILS = (Path(__file__).resolve().parents[2] / "benchmarks/tasks/js-domutils-batch-jsdoc-types/source.js").read_text(
    encoding="utf-8"
)

SET_SEQ2 = """class SequenceMatcher:
    # ... existing code ...

    def set_seq2(self, b):
        # ... existing docstring ...
        if b is self.b:
            return
        self.b = list(b)
        # ... existing code ...

    # ... rest of the class ...
"""
MERGED = DIFFLIB.replace("        self.b = b\n", "        self.b = list(b)\n")


def method_text(function: object) -> str:
    source, _ = inspect.getsourcelines(function)  # type: ignore[arg-type]
    return "".join(source)


backend = fake_fixture(step_s=0.002)
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend, refactor={"concurrency": 1}))


@pytest.fixture
def editor(client: LanguageClient, backend: FakeBackend) -> Editor:
    backend.responder, backend.step_s = rule_responder, 0.002  # as a test may have left them
    return fresh(client)


async def test_a_lazy_method_is_one_versioned_edit_of_that_method_with_it_as_the_prediction(
    editor: Editor, backend: FakeBackend, client: LanguageClient
) -> None:
    client.progress_reports.clear()
    backend.step_s = 0.01  # long enough for the progress to show
    uri = editor.open(WORKSPACE / "difflib.py", DIFFLIB)
    reply = await editor.execute("refactorLsp.applySnippet", {"uri": uri, "snippet": SET_SEQ2})
    assert reply["status"] == "applied", reply
    (sent,) = editor.edits_received
    (change,) = sent.edit.document_changes
    assert change.text_document.version == 1
    assert editor.buffers[uri] == MERGED  # the docstring and the lines the markers stood for, kept
    (request,) = backend.requests
    assert request["prediction"]["content"] == method_text(difflib.SequenceMatcher.set_seq2)
    assert "<<<SNIPPET" in request["messages"][1]["content"]
    (notified,) = editor.stats
    assert notified["action"] == "apply" and notified["applied"] is True and notified["scope"] == "block"
    assert reply["stats"]["summary"].startswith("apply ")
    assert any(m.startswith("refactor-lsp: apply ") for m in editor.messages())
    (reports,) = client.progress_reports.values()
    assert "apply the snippet to method `SequenceMatcher.set_seq2`" in reports[0].title
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_a_javascript_function_merges_into_domutils(editor: Editor, backend: FakeBackend) -> None:
    uri = editor.open(WORKSPACE / "traversal.js", DOMUTILS, "javascript")
    snippet = "export function getName(elem) {\n    return elem.name.toLowerCase();\n}\n"
    arguments = {"uri": uri, "snippet": snippet, "mergeWithModel": True}  # complete: spliced unless asked
    reply = await editor.execute("refactorLsp.applySnippet", arguments)
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == DOMUTILS.replace("return elem.name;\n", "return elem.name.toLowerCase();\n")
    (request,) = backend.requests
    assert request["prediction"]["content"].endswith("export function getName(elem) {\n    return elem.name;\n}\n")
    assert len(request["prediction"]["content"]) < 400


async def test_a_complete_snippet_is_spliced_as_written_without_a_request(editor: Editor, backend: FakeBackend) -> None:
    """Issue 36 item 7: a snippet with no lazy marker whose definitions are whole is the merged code: it is
    applied as one versioned edit, checked, with no request (0 tokens), and the message and the stats say
    so; `mergeWithModel` asks the model anyway."""
    uri = editor.open(WORKSPACE / "spliced.js", DOMUTILS, "javascript")
    snippet = (
        "export function getName(elem) {\n    return elem.name.toLowerCase();\n}\n\n"
        "export function getTag(elem) {\n    return elem.tagName;\n}\n"
    )
    reply = await editor.execute("refactorLsp.applySnippet", {"uri": uri, "snippet": snippet})
    assert reply["status"] == "applied", reply
    expected = DOMUTILS.replace(
        "export function getName(elem) {\n    return elem.name;\n}\n",
        "export function getName(elem) {\n    return elem.name.toLowerCase();\n}\n\n"
        "export function getTag(elem) {\n    return elem.tagName;\n}\n",
    )
    assert expected != DOMUTILS and editor.buffers[uri] == expected  # the new function after the one it follows
    assert backend.requests == []
    (sent,) = editor.edits_received
    (change,) = sent.edit.document_changes
    assert change.text_document.version == 1
    (notified,) = editor.stats
    assert notified["merged_by"] == "splice" and notified["completion_tokens"] == 0
    assert notified["prediction"] is False and notified["tokens_per_s"] is None and notified["backend"] == ""
    assert notified["checked"] == "brackets" and notified["applied"] is True
    assert "spliced as written, no model asked (0 tokens)" in notified["summary"]
    assert any("spliced as written, no model asked (0 tokens)" in m for m in editor.messages())
    assert reply["stats"]["merged_by"] == "splice"
    shown = await editor.execute("refactorLsp.showStats")  # no backend wrote it: in no backend's medians
    assert shown["spliced"] >= 1 and all(b["backend"] for b in shown["backends"])
    # The same snippet with mergeWithModel: the model merges it, its definition as the prediction.
    fresh(editor.client)
    again = editor.open(WORKSPACE / "merged.js", DOMUTILS, "javascript")
    reply = await editor.execute("refactorLsp.applySnippet", {"uri": again, "snippet": snippet, "mergeWithModel": True})
    assert reply["status"] == "applied", reply
    assert len(backend.requests) == 1 and reply["stats"]["merged_by"] == "model"


async def test_two_methods_are_one_edit_and_a_refused_part_applies_nothing(
    editor: Editor, backend: FakeBackend, client: LanguageClient
) -> None:
    two = SET_SEQ2.replace(
        "    # ... rest of the class ...\n",
        "    def real_quick_ratio(self):\n        # ... existing code ...\n"
        "        return _calculate_ratio(min(la, lb), la + lb + 1)\n\n    # ... rest of the class ...\n",
    )
    uri = editor.open(WORKSPACE / "two.py", DIFFLIB)
    reply = await editor.execute("refactorLsp.applySnippet", {"uri": uri, "snippet": two})
    assert reply["status"] == "applied", reply
    (sent,) = editor.edits_received
    (change,) = sent.edit.document_changes
    assert len(backend.requests) == 2 and change.text_document.version == 1
    assert editor.buffers[uri] == MERGED.replace("la + lb)\n", "la + lb + 1)\n")
    assert reply["stats"]["batch"]["totals"]["targets"] == 2
    # Again, on a fresh copy: the second part's answer copies a marker; nothing of the snippet is applied.
    fresh(client)
    copy = editor.open(WORKSPACE / "two-refused.py", DIFFLIB)
    quick = method_text(difflib.SequenceMatcher.real_quick_ratio)
    lazy = quick.replace("        la, lb = len(self.a), len(self.b)\n", "        # ...\n")
    backend.enqueue(Reply(), Reply(text=lazy), Reply(text=lazy))  # the merge asked again copies it again
    refused = await editor.execute("refactorLsp.applySnippet", {"uri": copy, "snippet": two})
    assert refused["status"] == "error", refused
    assert editor.edits_received == [] and editor.buffers[copy] == DIFFLIB
    assert len(backend.requests) == 3 and "copied a lazy marker" in backend.requests[-1]["messages"][-1]["content"]
    (message,) = [m for m in editor.messages() if "not applied" in m]
    assert "had a lazy marker" in message and "`# ...` copied" in message
    assert "another part of the snippet failed" in message
    # Once more: the merge asked again writes the code the marker stood for, and the snippet applies.
    fresh(client)
    mended = editor.open(WORKSPACE / "two-mended.py", DIFFLIB)
    backend.enqueue(Reply(), Reply(text=lazy))  # then the fake merges as a good model would
    reply = await editor.execute("refactorLsp.applySnippet", {"uri": mended, "snippet": two})
    assert reply["status"] == "applied", reply
    assert len(backend.requests) == 3 and "`# ...` copied" in backend.requests[-1]["messages"][-1]["content"]
    assert editor.buffers[mended] == MERGED.replace("la + lb)\n", "la + lb + 1)\n")


async def test_a_snippet_naming_nothing_goes_to_the_cursors_definition_and_without_one_is_refused(
    editor: Editor, backend: FakeBackend
) -> None:
    uri = editor.open(WORKSPACE / "cursor.py", DIFFLIB)
    snippet = "        self.b = list(b)\n"
    refused = await editor.execute("refactorLsp.applySnippet", {"uri": uri, "snippet": snippet})
    assert refused["status"] == "error" and "names no definition" in refused["message"]
    assert backend.requests == [] and editor.edits_received == []
    reply = await editor.execute(
        "refactorLsp.applySnippet", {"uri": uri, "snippet": snippet, "range": editor.cursor_at(uri, "self.b = b\n")}
    )
    assert reply["status"] == "applied", reply
    assert backend.requests[0]["prediction"]["content"] == method_text(difflib.SequenceMatcher.set_seq2)


async def test_cancel_stops_an_apply_and_leaves_the_buffer(editor: Editor, backend: FakeBackend) -> None:
    backend.step_s = 0.05
    uri = editor.open(WORKSPACE / "cancel.py", DIFFLIB)
    running = asyncio.ensure_future(editor.execute("refactorLsp.applySnippet", {"uri": uri, "snippet": SET_SEQ2}))
    await until(lambda: backend.requests)
    await editor.execute("refactorLsp.cancel", {"uri": uri})
    reply = await running
    assert reply["status"] == "cancelled" and "nothing was applied" in reply["message"]
    assert editor.edits_received == [] and editor.buffers[uri] == DIFFLIB


def cpu_s(pid: int) -> float:
    """The server process's CPU time so far (user + system), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def broken_big_class(names: int = 200, lines: int = 4000, per_line: int = 20) -> str:
    """A 4,600-line class that does not parse (a half-written signature), so that each question the
    placement asks reads the class again, whose methods are each named on 400 lines."""
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(names))
    calls = [
        f"        x = [{', '.join(f'self.m{(j * per_line + k) % names}' for k in range(per_line))}]\n"
        for j in range(lines)
    ]
    return "class Big:\n" + methods + "    def broken(self:\n        pass\n\n    def calls(self):\n" + "".join(calls)


async def test_a_cancel_while_the_snippet_is_placed_ends_the_request_and_frees_its_thread(
    editor: Editor, backend: FakeBackend, client: LanguageClient
) -> None:
    """Issue 36 item 3: placing a snippet that names 200 methods of a big class that does not parse takes
    the server's worker thread tens of seconds; a cancel then ends the request at once and stops that
    thread too (the server's CPU time stops growing), where the thread went on for seconds."""
    uri = editor.open(WORKSPACE / "big.py", broken_big_class())
    snippet = "class Big:\n    # ... existing code ...\n\n"
    snippet += "".join(f"    def m{i}(self):\n        return -{i}\n\n" for i in range(200))
    pid = client._server.pid  # type: ignore[union-attr]
    started = cpu_s(pid)
    running = asyncio.ensure_future(editor.execute("refactorLsp.applySnippet", {"uri": uri, "snippet": snippet}))
    await until(lambda: cpu_s(pid) > started + 1.0, timeout_s=30)  # the placement is at work
    asked = time.monotonic()
    await editor.execute("refactorLsp.cancel", {"uri": uri})
    reply = await asyncio.wait_for(running, 10)
    assert reply["status"] == "cancelled" and "nothing was applied" in reply["message"], reply
    assert time.monotonic() - asked < 2.0
    assert backend.requests == [] and editor.edits_received == []  # cancelled while placing: nothing was sent
    await asyncio.sleep(0.3)  # the thread's step in progress ends
    before = cpu_s(pid)
    await asyncio.sleep(1.5)
    assert cpu_s(pid) - before < 0.3  # no thread goes on placing a snippet nobody waits for


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"snippet": "x = 1\n"}, "{uri, snippet"),
        ({"uri": "file:///x.py"}, "{uri, snippet"),
        ({"uri": "file:///x.py", "snippet": "  \n"}, "`snippet` is empty"),
        ({"uri": "file:///x.py", "snippet": 3}, "`snippet` must be a string"),
        ({"uri": "file:///x.py", "snippet": "x = 1\n", "instruction": "do it"}, "`instruction` is not for"),
        ({"uri": "file:///x.py", "snippet": "x = 1\n", "mergeWithModel": "yes"}, "`mergeWithModel` must be true or"),
    ],
)
async def test_malformed_arguments_are_refused_by_name(editor: Editor, arguments: dict, problem: str) -> None:
    with pytest.raises(Exception) as refused:
        await editor.execute("refactorLsp.applySnippet", arguments)
    assert problem in str(refused.value)
