"""Text fidelity end to end: the client applies our edit and gets exactly the model's text for the
region, every other byte untouched, for each position encoding a client can negotiate."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.fake_backend import FakeBackend, Reply
from tests.lsp_harness import SERVER_CONFIG, STATE_DIR, Editor, capabilities

WORKSPACE = STATE_DIR / "fidelity-workspace"
BIG = "".join(f"def f{i}(x):\n    return x + {i}  # 😀 {i}\n\n" for i in range(6_667))  # 20,001 lines

# (name, document, cursor needle, region as the model rewrites it, the region's current text)
CASES = [
    (
        "emoji and astral",
        "# 😀👍🏽 start\ndef ok(v):\n    s = '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 👍🏽' + v  # 😀\n    return s\n# tail 🎉\n",
        "return s",
        "def ok(v):\n    t = '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 👍🏽' + v  # 😀\n    return t\n",
    ),
    (
        "CJK",
        "# 日本語のコメント\ndef 名前(値):\n    結果 = 値 * 2\n    return 結果\n",
        "return",
        "def 名前(値):\n    答え = 値 * 2\n    return 答え\n",
    ),
    (
        "combining characters",
        "x = 'cafe\u0301'\ndef f(n\u0303):\n    return 'n\u0303a\u0300' + n\u0303\n",
        "return",
        "def f(n\u0303):\n    return 'n\u0303a\u0300!' + n\u0303\n",
    ),
    (
        "tabs",
        "package main\n\nfunc f(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn -x\n}\n",
        "return -x",
        "func f(y int) int {\n\tif y > 0 {\n\t\treturn y\n\t}\n\treturn -y\n}\n",
    ),
    (
        "CRLF",
        "import os\r\n\r\ndef f(a):\r\n    b = a\r\n    return b\r\n\r\nprint(1)\r\n",
        "return b",
        "def f(a):\r\n    c = a\r\n    return c\r\n",
    ),
    (
        "mixed line endings",
        "a = 1\r\ndef f(a):\n    b = a\r\n    return b\n\nz = 2\r\n",
        "return b",
        "def f(a):\n    c = a\r\n    return c\n",
    ),
    (
        "no trailing newline",
        "import os\n\ndef f(a):\n    return a 😀",
        "return a",
        "def f(a):\n    return a + 1 😀",
    ),
    (
        "20,000 lines",
        BIG,
        "return x + 6600  #",
        "def f6600(y):\n    return y + 6600  # 😀 6600\n",
    ),
]


@pytest.fixture(scope="module")
def backend():
    with FakeBackend("openai", step_s=0.0) as fake:
        yield fake


@pytest_lsp.fixture(config=SERVER_CONFIG, scope="module", params=["utf-16", "utf-8", "utf-32"])
async def client(lsp_client: LanguageClient, backend: FakeBackend, request: pytest.FixtureRequest):
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    caps = capabilities("visual-studio-code")
    caps.general = types.GeneralClientCapabilities(position_encodings=[request.param])
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            workspace_folders=[types.WorkspaceFolder(WORKSPACE.as_uri(), "workspace")],
            initialization_options={
                "defaultBackend": "fake",
                "backends": {"fake": {"type": "openai", "baseUrl": backend.url, "model": "fake-model"}},
            },
        )
    )
    assert result.capabilities.position_encoding == request.param
    lsp_client.editor = Editor(lsp_client, encoding=request.param)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.parametrize(("name", "document", "needle", "new_region"), CASES, ids=[c[0] for c in CASES])
async def test_edit_yields_exactly_the_models_region(
    client: LanguageClient, backend: FakeBackend, name: str, document: str, needle: str, new_region: str
):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    editor.clear()
    backend.reset()
    uri = editor.open(WORKSPACE / f"{name.replace(' ', '_').replace(',', '')}.txt", document)
    backend.enqueue(Reply(text=new_region))
    result = await editor.execute(
        "refactorLsp.refactor", {"uri": uri, "range": editor.cursor_at(uri, needle), "instruction": "rewrite"}
    )
    assert result["status"] == "applied", result
    old_region = backend.requests[-1]["prediction"]["content"]
    start = document.index(old_region)
    expected = document[:start] + new_region + document[start + len(old_region) :]
    assert editor.buffers[uri] == expected
    # Minimal: the edits cover only what changed, not the whole region.
    edits = editor.edits_received[-1].edit.document_changes[0].edits
    assert sum(len(e.new_text) for e in edits) < len(new_region)
