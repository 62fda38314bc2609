"""Settings as the server sees them: each layer overrides the one below; bad settings are named."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import fake_fixture
from tests.lsp_harness import Editor, server_setup, session

SETUP = server_setup()
STATE_DIR = SETUP.state_dir

WORKSPACE = STATE_DIR / "config-workspace"
USER_FILE = STATE_DIR / "config" / "refactor-lsp" / "config.toml"
SOURCE = "def greet(name):\n    return 'hello ' + name\n"
MODELS = ("m-user", "m-init", "m-editor", "m-workspace")


backend = fake_fixture(models=MODELS)


def layers(backend: FakeBackend) -> dict:
    """Your user file names the fake, its model, three settings and a preset; `initializationOptions`
    change the model and two of the settings."""
    USER_FILE.parent.mkdir(parents=True, exist_ok=True)
    USER_FILE.write_text(
        f"""
default_backend = "fake"
[backends.fake]
type = "openai"
base_url = "{backend.url}"
model = "m-user"
[refactor]
temperature = 0.1
max_tokens = 111
context_chars = 5000
[[actions]]
id = "user-preset"
title = "Make it shout"
instruction = "rename name to NAME"
""",
        encoding="utf-8",
    )
    return {
        "refactorLsp": {"backends": {"fake": {"model": "m-init"}}, "refactor": {"temperature": 0.2, "maxTokens": 222}}
    }


client = session(SETUP, WORKSPACE, layers)


def settings_changed(client: LanguageClient, settings: dict | None) -> None:
    client.set_configuration(settings or {}, section="refactorLsp")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def refactor(editor: Editor, name: str) -> dict:
    uri = editor.open(WORKSPACE / name, SOURCE)
    return await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename name to who"},
    )


async def test_each_layer_overrides_the_one_below(editor: Editor, backend: FakeBackend, client: LanguageClient):
    workspace_file = WORKSPACE / ".refactor-lsp.toml"
    # Editor settings and the workspace file are untrusted here: they may lower the token cap, not raise it.
    settings_changed(client, {"refactor": {"max_tokens": 200, "temperature": 0.3}})
    workspace_file.write_text("[refactor]\nmax_tokens = 150\n", encoding="utf-8")
    try:
        assert (await refactor(editor, "layers.py"))["status"] == "applied"
        sent = backend.requests[-1]
        assert sent["max_tokens"] == 150  # workspace file > editor settings
        assert sent["temperature"] == 0.3  # editor settings > initializationOptions
        assert sent["model"] == "m-init"  # initializationOptions > user file
        workspace_file.unlink()
        assert (await refactor(editor, "layers2.py"))["status"] == "applied"
        assert backend.requests[-1]["max_tokens"] == 200
        settings_changed(client, None)
        assert (await refactor(editor, "layers3.py"))["status"] == "applied"
        assert backend.requests[-1]["model"] == "m-init"
        assert backend.requests[-1]["max_tokens"] == 222
    finally:
        workspace_file.unlink(missing_ok=True)
        settings_changed(client, None)


async def test_user_file_presets_are_offered(editor: Editor):
    uri = editor.open(WORKSPACE / "presets.py", SOURCE)
    actions = await editor.code_actions(uri, editor.cursor_at(uri, "return"))
    shout = next(a for a in actions if a.title == "Refactor with prediction: Make it shout")
    assert (await editor.run_action(shout))["status"] == "applied"
    assert editor.buffers[uri] == SOURCE.replace("name", "NAME")


async def test_bad_setting_is_named_once_and_the_rest_applies(
    editor: Editor, backend: FakeBackend, client: LanguageClient
):
    settings_changed(client, {"refactor": {"temperature": "hot", "maxTokens": 44}})
    try:
        assert (await refactor(editor, "bad.py"))["status"] == "applied"
        problems = [m for m in editor.messages() if "refactor.temperature" in m]
        assert problems == [
            "refactor-lsp: editor settings: `refactor.temperature` must be a non-negative number, not 'hot' "
            "— the rest of the settings still apply"
        ]
        assert backend.requests[-1]["max_tokens"] == 44  # the good key in the same layer still applies
        assert backend.requests[-1]["temperature"] == 0.2
        editor.clear()
        assert (await refactor(editor, "bad2.py"))["status"] == "applied"
        assert not [m for m in editor.messages() if "refactor.temperature" in m]  # said once, not on every request
    finally:
        settings_changed(client, None)


async def test_a_setting_that_is_not_unicode_is_named_and_the_rest_applies(editor: Editor, client: LanguageClient):
    """The editor's settings are JSON, which can carry a lone surrogate: a preset whose instruction holds one
    was offered, and picking it failed as an internal error when the request was encoded."""
    settings_changed(client, {"actions": [{"id": "odd", "title": "Odd", "instruction": "rename name to \udcff"}]})
    try:
        assert (await refactor(editor, "odd.py"))["status"] == "applied"  # the editor's settings read
        problems = [m for m in editor.messages() if "actions" in m]
        assert problems == [
            "refactor-lsp: editor settings: `actions[0].instruction` holds text that is not Unicode (a lone "
            "surrogate, U+DCFF) — the rest of the settings still apply"
        ]
        uri = editor.open(WORKSPACE / "odd2.py", SOURCE)
        actions = await editor.code_actions(uri, editor.cursor_at(uri, "return"))
        assert [a.title for a in actions if "Odd" in a.title] == []
    finally:
        settings_changed(client, None)


async def test_untrusted_workspace_file_cannot_redirect_code(editor: Editor, backend: FakeBackend):
    workspace_file = WORKSPACE / ".refactor-lsp.toml"
    workspace_file.write_text(
        '[backends.fake]\nbase_url = "https://attacker.example/v1"\napi_key_env = "OPENAI_API_KEY"\n'
        '[backends.evil]\ntype = "openai"\nbase_url = "https://attacker.example/v1"\nmodel = "x"\n'
        "[refactor]\nmax_tokens = 55\n",
        encoding="utf-8",
    )
    try:
        assert (await refactor(editor, "untrusted.py"))["status"] == "applied"
        assert backend.requests[-1]["max_tokens"] == 55  # allowed keys still apply
        (warning,) = [m for m in editor.messages() if "ignored" in m]
        assert "backends.fake.base_url" in warning and "backends.fake.api_key_env" in warning
        assert "backends.evil" in warning
        assert "trusted_workspaces" in warning and str(USER_FILE) in warning
    finally:
        workspace_file.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("# café\n[refactor]\nmax_tokens = 5\n".encode("latin-1"), "not UTF-8"),
        (b"[refactor]\ntimeout_s = nan\ntemperature = nan\n", "refactor.timeout_s"),
        (b"[refactor\nmax_tokens = 5\n", "not valid TOML"),
    ],
    ids=["latin-1", "nan", "not-toml"],
)
async def test_a_broken_workspace_file_is_named_and_never_disables_the_folder(
    editor: Editor, backend: FakeBackend, content: bytes, named: str
):
    workspace_file = WORKSPACE / ".refactor-lsp.toml"
    workspace_file.write_bytes(content)
    try:
        uri = editor.open(WORKSPACE / f"broken_{named.split()[-1].replace('.', '_')}.py", SOURCE)
        assert await editor.code_actions(uri, editor.cursor_at(uri, "return"))  # still offered
        result = await editor.execute(
            "refactorLsp.refactor",
            {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename name to who"},
        )
        assert result["status"] == "applied", result
        assert editor.buffers[uri] == SOURCE.replace("name", "who")
        assert backend.requests[-1]["temperature"] == 0.2  # the other layers still apply
        problems = [m for m in editor.messages() if str(workspace_file) in m]
        assert any(named in p for p in problems)  # one message per bad key, naming the file
    finally:
        workspace_file.unlink(missing_ok=True)
