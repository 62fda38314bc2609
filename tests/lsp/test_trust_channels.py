"""Every channel a repository can fill is held to the workspace file's rule, over real LSP.

Editors fill `workspace/configuration` answers from files inside the repository (eglot's
`.dir-locals.el`, neoconf's `.neoconf.json`): such an answer may not send the code and the key to
another host. `initializationOptions` come from the user's own editor config and may.
"""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from tests.lsp_harness import Editor, capabilities, server_setup

STATE_DIR, SERVER_ENV, SERVER_CONFIG = server_setup()
WORKSPACE = STATE_DIR / "cloned-repo"
SECRET = "sk-test-trust-channels-0123456789"
SOURCE = "def greet(name):\n    return 'hello ' + name\n"
CONFIG = ClientServerConfig(server_command=SERVER_CONFIG.server_command, server_env={**SERVER_ENV, "GOOD_KEY": SECRET})


@pytest.fixture(scope="module")
def good():
    with FakeBackend("openai", step_s=0.001, models=("fake-model", "other-model")) as fake:
        yield fake


@pytest.fixture(scope="module")
def hostile():
    with FakeBackend("openai", step_s=0.001, models=("fake-model",)) as fake:
        yield fake


def init_options(good: FakeBackend, **extra: object) -> dict:
    backend = {"type": "openai", "baseUrl": good.url, "model": "fake-model", "apiKeyEnv": "GOOD_KEY"}
    return {"refactorLsp": {"defaultBackend": "fake", "backends": {"fake": backend}}, **extra}


async def start(client: LanguageClient, options: dict) -> Editor:
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    editor = Editor(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(WORKSPACE.as_uri(), "repo")],
            initialization_options=options,
        )
    )
    return editor


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


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient, good: FakeBackend, hostile: FakeBackend):
    lsp_client.editor = await start(lsp_client, init_options(good))  # type: ignore[attr-defined]
    lsp_client.set_configuration(hostile_answer(hostile), section="refactorLsp")
    yield
    await lsp_client.shutdown_session()


async def test_editor_settings_from_the_repository_cannot_redirect_code_or_key(
    client: LanguageClient, good: FakeBackend, hostile: FakeBackend
):
    editor: Editor = client.editor  # type: ignore[attr-defined]
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


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def vscode_client(lsp_client: LanguageClient, good: FakeBackend, hostile: FakeBackend):
    """VS Code's extension says its answers are the user's (Workspace Trust restricts the rest)."""
    lsp_client.editor = await start(lsp_client, init_options(good, configurationTrusted=True))  # type: ignore[attr-defined]
    lsp_client.set_configuration(
        {"backends": {"fake": {"baseUrl": hostile.url, "apiKeyEnv": "GOOD_KEY"}}}, section="refactorLsp"
    )
    yield
    await lsp_client.shutdown_session()


async def test_a_client_whose_settings_are_the_users_may_route(
    vscode_client: LanguageClient, good: FakeBackend, hostile: FakeBackend
):
    good.reset()
    hostile.reset()
    editor: Editor = vscode_client.editor  # type: ignore[attr-defined]
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
ISSUE_CONFIG = ClientServerConfig(
    server_command=SERVER_CONFIG.server_command,
    server_env={
        **SERVER_ENV,
        "REFACTOR_LSP_CONFIG": str(ISSUE_USER_FILE),
        "OPENAI_API_KEY": OPENAI_KEY,  # set for other tools
        **{name: TRAP for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")},
        "NO_PROXY": "127.0.0.1,localhost",
    },
)


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


@pytest_lsp.fixture(config=ISSUE_CONFIG, scope="module")
async def issue_client(lsp_client: LanguageClient, issue_files: None):
    lsp_client.editor = Editor(lsp_client)  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities("neovim"),
            workspace_folders=[types.WorkspaceFolder(ISSUE_REPO.as_uri(), "repo")],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_a_workspace_file_cannot_send_the_code_and_key_to_a_backend_you_never_configured(
    issue_client: LanguageClient, good: FakeBackend
):
    good.reset()
    editor: Editor = issue_client.editor  # type: ignore[attr-defined]
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
