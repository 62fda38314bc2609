"""The wire contract over real LSP: typed arguments, a status enum in every reply, the live figures
as fields of `refactorLsp/progress`, and the summary texts ready-made in `refactorLsp/stats`."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.server.wire import PROGRESS_NOTIFICATION, RefactorStatus
from lsp_server.testing.fake_backend import FakeBackend
from tests.lsp_harness import Editor, capabilities, server_setup

STATE_DIR, SERVER_ENV, SERVER_CONFIG = server_setup()
WORKSPACE = STATE_DIR / "wire-workspace"
# Long enough that the stream lasts several progress intervals (0.25 s) at 5 ms a pass.
SOURCE = (
    "def load(path):\n" + "".join(f"    data_{i} = open(path).read() + data\n" for i in range(60)) + "    return data\n"
)


@pytest.fixture(scope="module")
def backend():
    with FakeBackend("openai", step_s=0.005, draft_len=2) as fake:
        yield fake


@pytest.fixture(scope="module")
def speculating():
    """A vLLM-like server: several tokens per chunk (drafts from the prompt), counted on every chunk."""
    with FakeBackend("vllm", step_s=0.01, draft_len=6) as fake:
        yield fake


@pytest_lsp.fixture(config=SERVER_CONFIG, scope="module")
async def client(lsp_client: LanguageClient, backend: FakeBackend, speculating: FakeBackend):
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    lsp_client.editor = Editor(lsp_client)  # type: ignore[attr-defined]
    lsp_client.progress_payloads = []  # type: ignore[attr-defined]

    @lsp_client.feature(PROGRESS_NOTIFICATION)
    def on_progress(params: Any) -> None:
        lsp_client.progress_payloads.append(params if isinstance(params, dict) else params._asdict())  # type: ignore[attr-defined]

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(WORKSPACE.as_uri(), "workspace")],
            initialization_options={
                "progressFields": True,  # as the VS Code extension and the Neovim plugin ask
                "defaultBackend": "fake",
                "backends": {
                    "fake": {"type": "openai", "baseUrl": backend.url, "model": "fake-model"},
                    "spec": {"type": "vllm", "baseUrl": speculating.url, "model": "fake-model"},
                },
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_progress_and_stats_carry_their_figures_as_fields(client: LanguageClient, backend: FakeBackend):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open(WORKSPACE / "wire.py", SOURCE)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename data to content"},
    )
    assert reply["status"] == RefactorStatus.APPLIED.value
    payloads = client.progress_payloads  # type: ignore[attr-defined]
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
    editor: Editor = client.editor  # type: ignore[attr-defined]
    with pytest.raises(Exception) as info:
        await editor.execute("refactorLsp.refactor", *arguments)
    assert problem in str(info.value)


async def test_snake_case_arguments_are_accepted(client: LanguageClient, backend: FakeBackend):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    editor.clear()
    uri = editor.open(WORKSPACE / "snake.py", "def f(x):\n    return x\n")
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "return"), "action_id": "docstrings", "wait": True},
    )
    assert reply["status"] in (RefactorStatus.APPLIED.value, RefactorStatus.UNCHANGED.value)
    assert "docstring" in backend.requests[-1]["messages"][1]["content"]


async def live_and_final(client: LanguageClient, name: str, backend: str) -> tuple[dict, dict]:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    editor.clear()
    client.progress_payloads.clear()  # type: ignore[attr-defined]
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
    return client.progress_payloads[-1], reply["stats"]  # type: ignore[attr-defined]


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
    editor: Editor = client.editor  # type: ignore[attr-defined]
    editor.clear()
    backend.reset()
    text = "".join(f"value_{i} = {i}\n" for i in range(30))
    uri = editor.open(WORKSPACE / "settings_module.py", text)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "value_7"), "instruction": "rename value_7 to setting_7"},
    )
    assert reply["status"] == RefactorStatus.APPLIED.value
    assert backend.requests[-1]["prediction"]["content"] == text  # the cursor is in no definition
    token = client.progress_payloads[-1]["token"]  # type: ignore[attr-defined]
    (begin,) = [r for r in client.progress_reports[token] if isinstance(r, types.WorkDoneProgressBegin)]
    assert begin.title.endswith("(the whole file, 30 lines)")
    (message,) = editor.messages()
    assert "rewrote the whole file, 30 lines; select lines to rewrite less" in message


async def test_the_edit_format_argument_reaches_the_refactor(client: LanguageClient, backend: FakeBackend):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    editor.clear()
    backend.reset()
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
