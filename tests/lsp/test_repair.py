"""Verified edits over real LSP, the backend on 127.0.0.1: an answer that would break the buffer is
repaired (one more request, the broken answer as its prediction) or refused with the error's line
and the parser's words, the buffer untouched; a batch repairs or refuses each definition alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import SlippingResponder, region_of, rule_responder
from tests.conftest import editor_settings, fake_fixture, write_config
from tests.lsp_harness import Editor, fresh, server_setup, session, start_session

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "repair-workspace"
FUNCTION = "def load(path):\n    data = open(path).read()\n    return len(data)\n"
SOURCE = f"import os\n\n\n{FUNCTION}\n\ndef main():\n    return load('x')\n"
RENAMED = SOURCE.replace("data", "content")
RENAME = "rename data to content"

backend = fake_fixture(step_s=0.001)
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend, refactor={"concurrency": 3}))


@pytest.fixture
def editor(client: LanguageClient, backend: FakeBackend) -> Editor:
    backend.responder = rule_responder  # as a test may have left it
    return fresh(client)


async def rename(
    editor: Editor, name: str, text: str = SOURCE, workspace: Path = WORKSPACE
) -> tuple[str, dict[str, Any]]:
    uri = editor.open(workspace / name, text)
    args = {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": RENAME}
    return uri, await editor.execute("refactorLsp.refactor", args)


def prediction_of(sent: dict[str, Any]) -> str | None:
    return (sent.get("prediction") or {}).get("content")


async def test_an_answer_that_breaks_the_code_is_repaired_and_the_editor_is_told(
    editor: Editor, backend: FakeBackend
) -> None:
    backend.responder = SlippingResponder(slip="dropped closing bracket", seed=5)
    uri, reply = await rename(editor, "repaired.py")
    assert reply["status"] == "applied", reply
    assert editor.buffers[uri] == RENAMED
    first, repair = backend.requests
    broken = region_of(repair["messages"])
    assert prediction_of(first) == FUNCTION and prediction_of(repair) == broken != FUNCTION.replace("data", "content")
    (notified,) = editor.stats
    problem = notified["repair_problem"]
    assert notified["repaired"] is True and notified["checked"] == "python" and " at line " in problem
    assert notified["status_text"].endswith(" · repaired")  # what VS Code's status bar and Neovim's statusline show
    assert f"repaired: {problem} · +" in editor.messages()[-1]  # the line the user reads


async def test_a_repair_that_does_not_mend_it_leaves_the_buffer_and_names_the_error(
    editor: Editor, backend: FakeBackend
) -> None:
    backend.responder = SlippingResponder(slip="unterminated string", fixes=False, seed=1)
    text = SOURCE.replace("open(path)", "open(path, 'r')")
    uri, reply = await rename(editor, "refused.py", text)
    assert reply["status"] == "error"
    assert editor.buffers[uri] == text and editor.edits_received == []
    (message,) = [m for m in editor.messages() if "nothing was applied" in m]
    assert message == "refactor-lsp: " + reply["message"]
    assert message.startswith("refactor-lsp: the model's answer had a syntax error that the code did not have (")
    assert "still has one: unterminated string literal (detected at line 5); nothing was applied" in message
    kept = Path(message.rsplit("(the model's answer: ", 1)[1].rstrip(")"))
    assert kept.read_text(encoding="utf-8") == region_of(backend.requests[1]["messages"])  # where refused answers go
    (notified,) = editor.stats
    assert notified["repaired"] is False and notified["applied"] is False
    assert len(backend.requests) == 2


async def test_a_valid_answer_in_a_file_already_broken_is_applied_with_one_request(
    editor: Editor, backend: FakeBackend
) -> None:
    text = SOURCE.replace("    return load('x')", "    return load('x'")  # the user is mid-edit below
    uri, reply = await rename(editor, "midedit.py", text)
    assert reply["status"] == "applied"
    assert editor.buffers[uri] == text.replace("data", "content")
    assert len(backend.requests) == 1
    (notified,) = editor.stats
    assert notified["repaired"] is None and "repair" not in notified["summary"]


async def test_a_valid_answer_is_applied_with_one_request_and_no_repair(editor: Editor, backend: FakeBackend) -> None:
    uri, reply = await rename(editor, "valid.py")
    assert reply["status"] == "applied" and editor.buffers[uri] == RENAMED
    assert len(backend.requests) == 1
    (notified,) = editor.stats
    assert notified["checked"] == "python" and notified["repaired"] is None and notified["repair_ms"] is None
    assert "repair" not in notified["summary"]


async def test_repairs_0_refuses_a_broken_answer_at_once(backend: FakeBackend) -> None:
    backend.reset()
    backend.responder = SlippingResponder(slip="dropped closing bracket", seed=5)
    workspace = SETUP.state_dir / "no-repairs"
    editor = await start_session(SETUP, workspace, editor_settings(backend, refactor={"repairs": 0}))
    try:
        uri, reply = await rename(editor, "norepair.py", workspace=workspace)
        assert reply["status"] == "error" and editor.buffers[uri] == SOURCE and editor.edits_received == []
        assert "syntax error that the code did not have: '(' was never closed at line 5" in reply["message"]
        assert "nothing was applied" in reply["message"]
        assert len(backend.requests) == 1  # no repair asked
        assert editor.stats[-1]["repaired"] is None and editor.stats[-1]["applied"] is False
    finally:
        await editor.client.shutdown_session()


# The user's checker says "no `content`" (exit 1, a line number in its output), as a linter would.
NO_CONTENT = (
    "import sys; bad = 'content' in sys.stdin.read(); print('stdin:5: content is not allowed' * bad); sys.exit(bad)"
)


async def test_a_checker_runs_from_the_user_file_only(backend: FakeBackend, tmp_path: Path) -> None:
    """A command in editor settings or in the repository's file is never run, and a message names each;
    the user file's checker reads the answer, and what it reports is repaired or refused."""
    backend.reset()
    backend.responder = rule_responder
    ran = tmp_path / "ran"
    workspace = tmp_path / "checkers-workspace"
    workspace.mkdir()
    (workspace / ".refactor-lsp.toml").write_text(f'[refactor.checkers]\npython = ["touch", "{ran}"]\n')
    user = write_config(tmp_path, fake=backend, refactor={"checkers": {"python": [sys.executable, "-c", NO_CONTENT]}})
    settings = editor_settings(backend, refactor={"checkers": {"python": ["touch", str(ran)]}})
    editor = await start_session(SETUP, workspace, settings, env={"REFACTOR_LSP_CONFIG": str(user)})
    try:
        uri, reply = await rename(editor, "checked.py", workspace=workspace)
        assert reply["status"] == "error" and editor.buffers[uri] == SOURCE
        checker = Path(sys.executable).name
        assert reply["message"].startswith(
            f"the model's answer had a problem {checker} reports that the code did not have (stdin:5: content is not "
            "allowed at line 5), and asked to fix it, it still has one: stdin:5: content is not allowed at line 5; "
            "nothing was applied"
        )
        assert len(backend.requests) == 2  # the answer, and one repair of what the checker found
        assert editor.stats[-1]["checked"] == f"python, {checker}"  # the parser, then the user's checker
        ignored = sorted(m for m in editor.messages() if "refactor.checkers" in m)
        assert len(ignored) == 2  # the editor's and the repository's, each named
        assert ignored[0].startswith(f"refactor-lsp: {workspace / '.refactor-lsp.toml'}: ignored refactor.checkers")
        assert ignored[1].startswith("refactor-lsp: initializationOptions: ignored refactor.checkers")
        assert all(f"it runs a command, which only {user} may name" in m for m in ignored)
    finally:
        await editor.client.shutdown_session()
    assert not ran.exists()  # neither the editor's command nor the repository's ran


async def test_a_repository_cannot_turn_the_check_off_nor_raise_repairs(backend: FakeBackend, tmp_path: Path) -> None:
    backend.reset()
    backend.responder = SlippingResponder(slip="dropped closing bracket", fixes=False, seed=5)
    workspace = tmp_path / "lax-workspace"
    workspace.mkdir()
    (workspace / ".refactor-lsp.toml").write_text('[refactor]\nverify = "off"\nrepairs = 3\n')
    user = write_config(tmp_path, fake=backend, refactor={"repairs": 1})
    editor = await start_session(SETUP, workspace, None, env={"REFACTOR_LSP_CONFIG": str(user)})
    try:
        uri, reply = await rename(editor, "lax.py", workspace=workspace)
        assert reply["status"] == "error" and editor.buffers[uri] == SOURCE  # still checked: nothing applied
        assert len(backend.requests) == 2  # one repair, as the user said, not three
        (ignored,) = [m for m in editor.messages() if "refactor.verify" in m]
        assert "refactor.repairs" in ignored
    finally:
        await editor.client.shutdown_session()


# -- a batch: each definition repaired or refused alone -----------------------------------------------

BATCH = "".join(f"def f{n}(data):\n    return len(data) + {n}\n\n\n" for n in range(4))


def batch_responder(request: dict[str, Any]) -> str:
    """f1's answer drops a bracket and its repair mends it; f2's does too, and its repair does not."""
    region = region_of(request.get("messages", []))
    if region.startswith("def f1") and region.count("(") > region.count(")"):
        return rule_responder(request).replace("len(content + 1", "len(content) + 1")
    answer = rule_responder(request)
    if region.startswith(("def f1", "def f2")):
        return answer.replace("len(content)", "len(content")
    return answer


async def test_a_batch_repairs_or_refuses_each_definition_alone_and_applies_the_rest(
    editor: Editor, backend: FakeBackend
) -> None:
    backend.responder = batch_responder
    uri = editor.open(WORKSPACE / "batch.py", BATCH)
    reply = await editor.execute("refactorLsp.refactorEach", {"uri": uri, "instruction": RENAME, "targets": "file"})
    assert reply["status"] == "partial", reply
    expected = BATCH.replace("data", "content").replace(
        "def f2(content):\n    return len(content) + 2", "def f2(data):\n    return len(data) + 2"
    )
    assert editor.buffers[uri] == expected  # f0, f1 (repaired) and f3 applied; f2 untouched
    outcomes = {t["definition"]: t for t in reply["stats"]["batch"]["targets"]}
    assert {name: t["outcome"] for name, t in outcomes.items()} == {
        "f0": "applied",
        "f1": "applied",
        "f2": "refused",
        "f3": "applied",
    }
    assert outcomes["f1"]["stats"]["repaired"] is True and outcomes["f2"]["stats"]["repaired"] is False
    assert "'(' was never closed at line 10" in outcomes["f2"]["reason"]
    assert "4 definitions: 3 applied, 1 refused (1 repaired)" in reply["message"]
    assert len(backend.requests) == 6  # four answers, two repairs
