"""Who may decide where code and keys go: the user file and a trusting editor, not a cloned repo."""

from __future__ import annotations

from pathlib import Path

from lsp_server.config import Layer, load_config

WORKSPACE_TOML = '[backends.local]\nbase_url = "https://elsewhere.example/v1"\nmodel = "big"\n'


def _workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / ".refactor-lsp.toml").write_text(WORKSPACE_TOML, encoding="utf-8")
    return folder


def test_untrusted_workspace_keeps_the_users_url_but_may_pick_the_model(tmp_path: Path):
    loaded = load_config(Layer("user.toml", {}), [], _workspace(tmp_path))
    assert loaded.config.backends["local"].base_url == "http://127.0.0.1:8000/v1"
    assert loaded.config.backends["local"].model == "big"
    assert any("backends.local.base_url" in p and "trusted_workspaces" in p for p in loaded.problems)


def test_editor_that_trusts_the_workspace(tmp_path: Path):
    loaded = load_config(Layer("user.toml", {}), [], _workspace(tmp_path), workspace_trusted_by_editor=True)
    assert loaded.config.backends["local"].base_url == "https://elsewhere.example/v1"
    assert not [p for p in loaded.problems if "ignored" in p]


def test_user_file_trusts_a_folder_and_its_subfolders(tmp_path: Path):
    folder = _workspace(tmp_path)
    user = Layer("user.toml", {"trusted_workspaces": [str(tmp_path)]})
    loaded = load_config(user, [], folder)
    assert loaded.config.backends["local"].base_url == "https://elsewhere.example/v1"


def test_only_the_user_file_can_trust(tmp_path: Path):
    folder = _workspace(tmp_path)
    editor = Layer("editor settings", {"trusted_workspaces": [str(folder)]})
    loaded = load_config(Layer("user.toml", {}), [editor], folder)
    assert loaded.config.backends["local"].base_url == "http://127.0.0.1:8000/v1"
    assert any("only user.toml can trust a folder" in p for p in loaded.problems)
    (folder / ".refactor-lsp.toml").write_text(f"trusted_workspaces = [{str(folder)!r}]\n", encoding="utf-8")
    assert "trusted_workspaces" in " ".join(load_config(Layer("user.toml", {}), [], folder).problems)


def test_plain_http_to_another_host_gets_a_warning_but_loopback_does_not(tmp_path: Path):
    user = Layer(
        "user.toml",
        {
            "backends": {
                "lan": {"type": "vllm", "base_url": "http://gpu-box.example:8000/v1", "model": "m"},
                "here": {"type": "vllm", "base_url": "http://localhost:8000/v1", "model": "m"},
                "tls": {"type": "openai", "base_url": "https://api.example/v1", "model": "m"},
            }
        },
    )
    problems = load_config(user).problems
    assert len(problems) == 1
    assert "backends.lan.base_url" in problems[0] and "unencrypted" in problems[0] and "gpu-box.example" in problems[0]


def test_tls_verification_is_on_by_default():
    from lsp_server.config import BackendConfig

    assert BackendConfig().verify_tls is True


def test_a_workspace_file_cannot_set_the_users_prices(tmp_path: Path):
    """Else a cloned repository chooses what every cost figure says."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / ".refactor-lsp.toml").write_text(
        '[backends.openai]\nprice_input_per_mtok = 0.0001\nprice_output_per_mtok = 0\nmodel = "gpt-4.1"\n',
        encoding="utf-8",
    )
    user = Layer("user.toml", {"backends": {"openai": {"price_input_per_mtok": 0.4, "price_output_per_mtok": 1.6}}})
    loaded = load_config(user, [], folder)
    openai = loaded.config.backends["openai"]
    assert (openai.price_input_per_mtok, openai.price_output_per_mtok, openai.model) == (0.4, 1.6, "gpt-4.1")
    [problem] = [p for p in loaded.problems if "ignored" in p]
    assert "backends.openai.price_input_per_mtok, backends.openai.price_output_per_mtok" in problem
    assert "or your prices" in problem
    trusted = load_config(user, [], folder, workspace_trusted_by_editor=True).config.backends["openai"]
    assert (trusted.price_input_per_mtok, trusted.price_output_per_mtok) == (0.0001, 0.0)
