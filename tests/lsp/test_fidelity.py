"""Text fidelity end to end: the client applies our edit and gets exactly the model's text for the
region, every other byte untouched, for each position encoding a client can negotiate."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, fresh, server_setup, session, to_offset

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "fidelity-workspace"
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


backend = fake_fixture(step_s=0.0)
# "always": these tests read the prediction sent, and the module's refactors share one history, from which
# the cost guard (pipeline/prediction_guard.py) would soon stop sending it.
client = session(
    SETUP,
    WORKSPACE,
    lambda backend: editor_settings(backend, keys={"prediction": "always"}),
    encodings=["utf-16", "utf-8", "utf-32"],
)


@pytest.mark.parametrize(("name", "document", "needle", "new_region"), CASES, ids=[c[0] for c in CASES])
async def test_edit_yields_exactly_the_models_region(
    client: LanguageClient, backend: FakeBackend, name: str, document: str, needle: str, new_region: str
):
    editor = fresh(client)
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
    assert_versioned_for_the_buffer_it_was_made_for(editor, uri)
    # Minimal: the edits cover only what changed, not the whole region.
    edits = editor.edits_received[-1].edit.document_changes[0].edits
    assert sum(len(e.new_text) for e in edits) < len(new_region)


def assert_versioned_for_the_buffer_it_was_made_for(editor: Editor, uri: str) -> None:
    """The edit names the version the buffer had when it arrived: a version-less edit is what lets an
    editor apply a stale one over the user's typing."""
    (change,) = editor.edits_received[-1].edit.document_changes
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.uri == uri
    assert change.text_document.version is not None
    assert change.text_document.version == editor.versions_at_edit[-1][uri]


# Astral characters (two UTF-16 units, four UTF-8 bytes, one code point) BEFORE the edit on the same
# line: a server counting positions in the wrong unit puts the edit in the wrong place.
# (name, document, cursor needle, region as the model rewrites it, the buffer after the edit)
# The blank line keeps the comment out of the definition's span (a comment directly above belongs to it).
ASTRAL_LF = "# 😀 top\n\ndef tag(x):\n    s = '😀𝒳🇫🇷' + x + '🇫🇷' + x  # 𝒳\n    return s\n"
ASTRAL_LF_REGION = "def tag(x):\n    s = '😀𝒳🇫🇷' + x.upper() + '🇫🇷' + x  # 𝒳\n    return s\n"
ASTRAL_LF_AFTER = "# 😀 top\n\ndef tag(x):\n    s = '😀𝒳🇫🇷' + x.upper() + '🇫🇷' + x  # 𝒳\n    return s\n"
ASTRAL_CASES = [
    ("identifier after astral", ASTRAL_LF, "return s", ASTRAL_LF_REGION, ASTRAL_LF_AFTER),
    (
        "identifier after astral CRLF",
        ASTRAL_LF.replace("\n", "\r\n"),
        "return s",
        ASTRAL_LF_REGION.replace("\n", "\r\n"),
        ASTRAL_LF_AFTER.replace("\n", "\r\n"),
    ),
    (
        "renamed after astral on two lines",
        "def pick(item):\n    flag = '🇫🇷'; item_id = item  # 😀\n    return '𝒳😀' + item_id\n",
        "return",
        "def pick(item):\n    flag = '🇫🇷'; key = item  # 😀\n    return '𝒳😀' + key\n",
        "def pick(item):\n    flag = '🇫🇷'; key = item  # 😀\n    return '𝒳😀' + key\n",
    ),
    (
        "renamed after astral on two lines CRLF",
        "def pick(item):\r\n    flag = '🇫🇷'; item_id = item  # 😀\r\n    return '𝒳😀' + item_id\r\n",
        "return",
        "def pick(item):\r\n    flag = '🇫🇷'; key = item  # 😀\r\n    return '𝒳😀' + key\r\n",
        "def pick(item):\r\n    flag = '🇫🇷'; key = item  # 😀\r\n    return '𝒳😀' + key\r\n",
    ),
    (
        "between the halves of a flag",
        "def flag():\n    return '😀𝒳🇫🇷' + 'x'\n",
        "return",
        "def flag():\n    return '😀𝒳🇫🇮' + 'x'\n",
        "def flag():\n    return '😀𝒳🇫🇮' + 'x'\n",
    ),
]


@pytest.mark.parametrize(
    ("name", "document", "needle", "new_region", "after"), ASTRAL_CASES, ids=[c[0] for c in ASTRAL_CASES]
)
async def test_edit_after_astral_characters_lands_exactly(
    client: LanguageClient, backend: FakeBackend, name: str, document: str, needle: str, new_region: str, after: str
):
    editor = fresh(client)
    uri = editor.open(WORKSPACE / f"astral_{name.replace(' ', '_')}.txt", document)
    backend.enqueue(Reply(text=new_region))
    result = await editor.execute(
        "refactorLsp.refactor", {"uri": uri, "range": editor.cursor_at(uri, needle), "instruction": "rewrite"}
    )
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == after
    assert_versioned_for_the_buffer_it_was_made_for(editor, uri)
    # The case proves something: an edit starts after astral characters on its line.
    edits = editor.edits_received[-1].edit.document_changes[0].edits
    starts = [to_offset(document, e.range.start.line, e.range.start.character, editor.encoding) for e in edits]
    before_on_line = [document[document.rfind("\n", 0, start) + 1 : start] for start in starts]
    assert any(ord(ch) > 0xFFFF for text in before_on_line for ch in text), before_on_line
