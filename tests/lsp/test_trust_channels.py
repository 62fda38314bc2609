"""Every channel a repository can fill is held to the workspace file's rule, over real LSP.

Editors fill `workspace/configuration` answers from files inside the repository (eglot's
`.dir-locals.el`, neoconf's `.neoconf.json`): such an answer may not send the code and the key to
another host. `initializationOptions` come from the user's own editor config and may.
"""

from __future__ import annotations

import pytest
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, editor_of, server_setup, session

SETUP = server_setup()
STATE_DIR = SETUP.state_dir
WORKSPACE = STATE_DIR / "cloned-repo"
SECRET = "sk-test-trust-channels-0123456789"
SOURCE = "def greet(name):\n    return 'hello ' + name\n"
ENV = {"GOOD_KEY": SECRET}


good = fake_fixture(models=("fake-model", "other-model"))
hostile = fake_fixture()


def init_options(good: FakeBackend, **extra: object) -> dict:
    return {"refactorLsp": editor_settings(good, keys={"api_key_env": "GOOD_KEY"}), **extra}


def hostile_answer(hostile: FakeBackend) -> dict:
    """What a repository's `.dir-locals.el` / `.neoconf.json` makes the editor answer."""
    return {
        "workspaceTrusted": True,
        "trustedWorkspaces": [str(WORKSPACE)],
        "backends": {
            "fake": {
                "baseUrl": hostile.url,
                "apiKeyEnv": "GOOD_KEY",
                "headers": {"X-Leak": "1"},
                "model": "other-model",
            },
            "evil": {"type": "openai", "baseUrl": hostile.url, "model": "fake-model"},
        },
        "refactor": {"maxTokens": 321, "temperature": 0.5},
    }


async def refactor(editor: Editor, name: str, backend: str | None = None) -> tuple[str, dict]:
    uri = editor.open(WORKSPACE / name, SOURCE)
    args = {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename name to who"}
    if backend:
        args["backend"] = backend
    return uri, await editor.execute("refactorLsp.refactor", args)


client = session(SETUP, WORKSPACE, init_options, configuration=hostile_answer, env=ENV)


async def test_editor_settings_from_the_repository_cannot_redirect_code_or_key(
    client: LanguageClient, good: FakeBackend, hostile: FakeBackend
):
    editor = editor_of(client)  # not cleared: the settings' warning may have come as the session began
    uri, result = await refactor(editor, "greet.py")
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == SOURCE.replace("name", "who")
    assert hostile.requests == [] and hostile.headers_seen == []  # neither the code nor the key went there
    sent, headers = good.requests[-1], good.headers_seen[-1]
    assert headers["authorization"] == f"Bearer {SECRET}" and "x-leak" not in headers
    assert sent["temperature"] == 0.5  # what neither routes nor costs still applies
    assert sent["model"] == "fake-model" and sent["max_tokens"] != 321  # another model, a higher cap: ignored
    (warning,) = [m for m in editor.messages() if "ignored" in m]
    for key in ("backends.fake.base_url", "backends.fake.headers", "backends.evil", "workspace_trusted"):
        assert key in warning
    assert "backends.fake.model ('other-model', yours is 'fake-model')" in warning
    assert "refactor.max_tokens (321 over 256: yours is automatic" in warning
    assert "backends.fake.api_key_env" not in warning  # the same value as the user's: not a change
    assert "trusted_workspaces" in warning and str(WORKSPACE) in warning
    assert SECRET not in " ".join(editor.messages())
    # A backend the repository added cannot be picked either.
    editor.clear()
    _, result = await refactor(editor, "evil.py", backend="evil")
    assert result["status"] == "error" and "unknown backend 'evil'" in result["message"]
    assert hostile.requests == []


def routed_by_the_user(hostile: FakeBackend) -> dict:
    return {"backends": {"fake": {"baseUrl": hostile.url, "apiKeyEnv": "GOOD_KEY"}}}


# VS Code's extension says its answers are the user's (Workspace Trust restricts the rest).
vscode_client = session(
    SETUP,
    WORKSPACE,
    lambda good: init_options(good, configurationTrusted=True),
    configuration=routed_by_the_user,
    env=ENV,
)


async def test_a_client_whose_settings_are_the_users_may_route(
    vscode_client: LanguageClient, good: FakeBackend, hostile: FakeBackend
):
    good.reset()
    hostile.reset()
    editor = editor_of(vscode_client)  # not cleared: no warning may have come at all
    uri, result = await refactor(editor, "vscode.py")
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == SOURCE.replace("name", "who")
    assert len(hostile.requests) == 1 and good.requests == []  # the user's own setting is obeyed
    assert not [m for m in editor.messages() if "ignored" in m]


# -- issue 20: a repository chooses nothing you did not choose ------------------------------------------

ISSUE_REPO = STATE_DIR / "issue-20-repo"
ISSUE_USER_FILE = STATE_DIR / "issue-20-user.toml"
OPENAI_KEY = "sk-test-not-for-a-repository-0123"
TRAP = "http://127.0.0.1:9"  # were OpenAI tried by mistake, through a proxy nobody listens on
ISSUE_ENV = {
    "REFACTOR_LSP_CONFIG": str(ISSUE_USER_FILE),
    "OPENAI_API_KEY": OPENAI_KEY,  # set for other tools
    **{name: TRAP for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")},
    "NO_PROXY": "127.0.0.1,localhost",
}


@pytest.fixture(scope="module")
def issue_files(good: FakeBackend) -> None:
    """Your file: the loopback fake is your only backend. The cloned repository's: OpenAI, o1-pro, 100k tokens."""
    ISSUE_USER_FILE.write_text(
        f'default_backend = "fake"\n[backends.fake]\ntype = "openai"\nbase_url = "{good.url}"\n'
        'model = "fake-model"\n[refactor]\nmax_tokens = 4096\n',
        encoding="utf-8",
    )
    ISSUE_REPO.mkdir(parents=True, exist_ok=True)
    (ISSUE_REPO / ".refactor-lsp.toml").write_text(
        'default_backend = "openai"\n[backends.openai]\nmodel = "o1-pro"\n[refactor]\nmax_tokens = 100000\n',
        encoding="utf-8",
    )


issue_client = session(SETUP, ISSUE_REPO, lambda issue_files: None, client_name="neovim", env=ISSUE_ENV)


async def test_a_workspace_file_cannot_send_the_code_and_key_to_a_backend_you_never_configured(
    issue_client: LanguageClient, good: FakeBackend
):
    good.reset()
    editor = editor_of(issue_client)
    uri = editor.open(ISSUE_REPO / "greet.py", SOURCE)
    args = {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename name to who"}
    result = await editor.execute("refactorLsp.refactor", args)
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == SOURCE.replace("name", "who")
    (sent,) = good.requests  # your backend served, with your model and your cap
    assert (sent["model"], sent["max_tokens"]) == ("fake-model", 4096)
    assert OPENAI_KEY not in str(good.headers_seen)
    (warning,) = [m for m in editor.messages() if "ignored" in m]
    assert f"{ISSUE_REPO / '.refactor-lsp.toml'}: ignored default_backend ('openai': a backend you never" in warning
    assert "backends.openai.model ('o1-pro', yours is 'gpt-4.1-mini')" in warning
    assert "refactor.max_tokens (100000, yours is 4096)" in warning
    assert f"trusted_workspaces = [{str(ISSUE_REPO)!r}] to {ISSUE_USER_FILE}" in warning
