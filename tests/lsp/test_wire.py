"""The wire contract over real LSP: typed arguments, a status enum in every reply, the live figures
as fields of `refactorLsp/progress`, and the summary texts ready-made in `refactorLsp/stats`."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.server.wire import RefactorStatus
from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import backend_settings, editor_settings, fake_fixture
from tests.lsp_harness import fresh, server_setup, session

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "wire-workspace"
# Long enough that the stream lasts several progress intervals (0.25 s) at 5 ms a pass.
SOURCE = (
    "def load(path):\n" + "".join(f"    data_{i} = open(path).read() + data\n" for i in range(60)) + "    return data\n"
)


backend = fake_fixture(step_s=0.005, draft_len=2)
# A vLLM-like server: several tokens per chunk (drafts from the prompt), counted on every chunk.
speculating = fake_fixture("vllm", step_s=0.01, draft_len=6)


def settings(backend: FakeBackend, speculating: FakeBackend) -> dict:
    # progressFields: as the VS Code extension and the Neovim plugin ask
    return editor_settings(backend, others={"spec": backend_settings(speculating)}, progressFields=True)


client = session(SETUP, WORKSPACE, settings)


async def test_progress_and_stats_carry_their_figures_as_fields(client: LanguageClient, backend: FakeBackend):
    editor = fresh(client)
    uri = editor.open(WORKSPACE / "wire.py", SOURCE)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename data to content"},
    )
    assert reply["status"] == RefactorStatus.APPLIED.value
    payloads = editor.progress_fields
    assert payloads, "no refactorLsp/progress notification"
    last = payloads[-1]
    assert last["uri"] == uri and last["token"].startswith("refactor-lsp/")
    assert last["predicted_chars"] == len(SOURCE) and 0 < last["generated_chars"] <= len(SOURCE) + 200
    assert isinstance(last["tokens_per_s"], float) and last["tokens_per_s"] > 0
    assert 0 <= last["percentage"] <= 99 and last["elapsed_s"] > 0
    # The `$/progress` report says the same in words.
    reports = [r for r in client.progress_reports[last["token"]] if isinstance(r, types.WorkDoneProgressReport)]
    assert any(r.message == last["message"] for r in reports)
    # The stats notification and the reply carry the texts plugins show, made by the server.
    (stats,) = editor.stats
    assert stats["summary"].startswith("refactor ") and "tok/s" in stats["summary"]
    assert stats["status_text"].endswith("accepted") and "tok/s" in stats["status_text"]
    assert reply["stats"]["summary"] == stats["summary"]
    (message,) = editor.messages()
    assert message.startswith("refactor-lsp: " + stats["summary"])


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ([], "Expected 1 arguments"),
        ([{"range": None}], "takes one object"),
        ([{"uri": "file:///x.py", "range": {"start": {"line": 0}}}], "must be an LSP range"),
        ([{"uri": "file:///x.py", "editFormat": "diff"}], "`editFormat` must be one of auto, region, hunks"),
    ],
)
async def test_bad_arguments_are_an_invalid_params_error(client: LanguageClient, arguments: list, problem: str):
    editor = fresh(client)
    with pytest.raises(Exception) as info:
        await editor.execute("refactorLsp.refactor", *arguments)
    assert problem in str(info.value)


async def test_snake_case_arguments_are_accepted(client: LanguageClient, backend: FakeBackend):
    editor = fresh(client)
    uri = editor.open(WORKSPACE / "snake.py", "def f(x):\n    return x\n")
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "return"), "action_id": "docstrings", "wait": True},
    )
    assert reply["status"] in (RefactorStatus.APPLIED.value, RefactorStatus.UNCHANGED.value)
    assert "docstring" in backend.requests[-1]["messages"][1]["content"]


async def live_and_final(client: LanguageClient, name: str, backend: str) -> tuple[dict, dict]:
    editor = fresh(client)
    uri = editor.open(WORKSPACE / name, SOURCE)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {
            "uri": uri,
            "range": editor.cursor_at(uri, "return"),
            "instruction": "rename data to content",
            "backend": backend,
        },
    )
    assert reply["status"] == "applied", reply
    return editor.progress_fields[-1], reply["stats"]


async def test_live_rate_is_tokens_per_second_on_a_speculating_server(client: LanguageClient):
    """Several tokens arrive per chunk: the live figure counts tokens, not chunks, as the final one does."""
    live, final = await live_and_final(client, "live_spec.py", "spec")
    assert live["tokens_estimated"] is False  # counted by the server on every chunk
    assert live["tokens_per_s"] == pytest.approx(final["tokens_per_s"], rel=0.10)


async def test_live_rate_on_a_server_that_does_not_count_per_chunk(client: LanguageClient):
    """OpenAI does not count per chunk: the estimate uses the backend's own characters per token, learnt
    from its last answer, so from the second refactor on it matches the final figure."""
    await live_and_final(client, "live_plain_1.py", "fake")
    live, final = await live_and_final(client, "live_plain_2.py", "fake")
    assert live["tokens_estimated"] is True and live["message"].count("~") == 1
    assert live["tokens_per_s"] == pytest.approx(final["tokens_per_s"], rel=0.10)


async def test_a_whole_file_region_is_named_in_the_progress_title_and_the_message(
    client: LanguageClient, backend: FakeBackend
):
    editor = fresh(client)
    text = "".join(f"value_{i} = {i}\n" for i in range(30))
    uri = editor.open(WORKSPACE / "settings_module.py", text)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "value_7"), "instruction": "rename value_7 to setting_7"},
    )
    assert reply["status"] == RefactorStatus.APPLIED.value
    assert backend.requests[-1]["prediction"]["content"] == text  # the cursor is in no definition
    token = editor.progress_fields[-1]["token"]
    (begin,) = [r for r in client.progress_reports[token] if isinstance(r, types.WorkDoneProgressBegin)]
    assert begin.title.endswith("(the whole file, 30 lines)")
    (message,) = editor.messages()
    assert "rewrote the whole file, 30 lines; select lines to rewrite less" in message


async def test_the_edit_format_argument_reaches_the_refactor(client: LanguageClient, backend: FakeBackend):
    editor = fresh(client)
    text = "def f(data):\n    return data\n"
    uri = editor.open(WORKSPACE / "hunks_arg.py", text)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {
            "uri": uri,
            "range": editor.cursor_at(uri, "return"),
            "instruction": "rename data to x",
            "editFormat": "hunks",
        },
    )
    assert reply["status"] == RefactorStatus.APPLIED.value
    assert editor.buffers[uri] == text.replace("data", "x")
    assert reply["stats"]["edit_format"] == "hunks" and reply["stats"]["format_reason"] == "set by the request"
    assert "<<<<<<< SEARCH" in backend.requests[-1]["messages"][0]["content"]
    assert "prediction" not in backend.requests[-1]  # a hunks answer gets no prediction field...
    text = editor.buffers[uri]
    reply = await editor.execute(
        "refactorLsp.refactor",
        {
            "uri": uri,
            "range": editor.cursor_at(uri, "return"),
            "instruction": "rename x to y",
            "editFormat": "hunks",
            "prediction": True,
        },
    )
    assert reply["status"] == RefactorStatus.APPLIED.value and editor.buffers[uri] == text.replace("x", "y")
    assert backend.requests[-1]["prediction"] == {"type": "content", "content": text}  # ...unless asked for
    assert reply["stats"]["prediction_via"] == "field"
