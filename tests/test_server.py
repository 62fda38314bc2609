"""The language server end to end: real LSP over stdio (pytest-lsp), the loopback test backend."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.fake_backend import FakeBackend
from tests.lsp_harness import SERVER_CONFIG, STATE_DIR, Editor, capabilities

WORKSPACE = STATE_DIR / "workspace"

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


@pytest.fixture(scope="module")
def backend():
    with FakeBackend("openai", step_s=0.002) as fake:
        yield fake


@pytest_lsp.fixture(config=SERVER_CONFIG, scope="module")
async def client(lsp_client: LanguageClient, backend: FakeBackend):
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    lsp_client.editor = Editor(lsp_client)  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(WORKSPACE.as_uri(), "workspace")],
            initialization_options={
                "defaultBackend": "fake",
                "backends": {"fake": {"type": "openai", "baseUrl": backend.url, "model": "fake-model"}},
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def editor(client: LanguageClient, backend: FakeBackend) -> Editor:
    ed: Editor = client.editor  # type: ignore[attr-defined]
    ed.clear()
    backend.reset()
    return ed


def _titles(actions: list[types.CodeAction]) -> list[str]:
    return [a.title for a in actions]


async def test_happy_path_rename_in_function(editor: Editor, backend: FakeBackend, client: LanguageClient):
    uri = editor.open(WORKSPACE / "happy.py", PY_SOURCE)
    await editor.code_actions(uri, editor.cursor_at(uri, "data = open"))
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
    reports = [r for token, rs in client.progress_reports.items() for r in rs]
    assert any(isinstance(r, types.WorkDoneProgressBegin) and "Refactor with prediction" in r.title for r in reports)
    assert any(isinstance(r, types.WorkDoneProgressEnd) for r in reports)
