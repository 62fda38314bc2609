"""Stacking the layers: each layer converted once, every bad key in it reported, the rest kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server.config import load as config_module
from lsp_server.config.convert import convert
from lsp_server.config.layers import Layer, editor_layer
from lsp_server.config.load import build_config, load_config
from lsp_server.config.schema import BUILTIN_BACKENDS, WORKSPACE_FILE, RefactorSettings

USER = Layer(
    "user.toml",
    {
        "default_backend": "mine",
        "backends": {"mine": {"type": "vllm", "base_url": "http://127.0.0.1:9001/v1", "model": "coder-7b"}},
    },
)


def test_three_bad_keys_give_three_messages_and_the_good_keys_still_apply() -> None:
    layer = editor_layer(
        {
            "logLevel": "loud",
            "refactor": {"maxRetries": "many", "timeoutS": 9},
            "backends": {"mine": {"model": "coder-32b", "prediction": "sometimes"}},
        }
    )
    loaded = load_config(USER, [layer])
    assert loaded.problems == [
        "editor settings: `backends.mine.prediction` must be one of 'auto', 'always', 'never', not 'sometimes'",
        "editor settings: `refactor.max_retries` must be a non-negative whole number, not 'many'",
        "editor settings: `log_level` must be one of 'error', 'warning', 'info', 'debug', not 'loud'",
    ]
    config = loaded.config
    assert config.backends["mine"].model == "coder-32b"
    assert config.backends["mine"].prediction == "auto"
    assert config.refactor.timeout_s == 9.0
    assert config.refactor.max_retries == RefactorSettings().max_retries
    assert config.log_level == "info"


def test_each_layer_is_converted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def counting(below: Any, layer: Any, source: Any) -> Any:
        calls.append(layer)
        return convert(below, layer, source)

    monkeypatch.setattr(config_module, "convert", counting)
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / WORKSPACE_FILE).write_text("[refactor]\ntimeout_s = -1\nmax_tokens = -1\nbogus = 1\n", encoding="utf-8")
    init = editor_layer({"refactor": {"temperature": "hot", "scope": "nowhere"}}, "initializationOptions")
    settings = editor_layer({"refactor": {"preview": "yes"}}, "workspace/configuration")

    loaded = load_config(USER, [init, settings], folder)

    assert len(loaded.problems) == 6
    assert calls == [USER.data, init.data, settings.data, {"refactor": {"timeout_s": -1, "max_tokens": -1, "bogus": 1}}]

    calls.clear()
    build_config([USER, Layer("more", {"refactor": {"temperature": 0.5}})])
    assert len(calls) == 2


def test_a_new_backend_missing_a_key_is_dropped_and_names_pointing_at_it_follow() -> None:
    layer = Layer(
        "workspace.toml",
        {
            "default_backend": "gpu",
            "backends": {
                "gpu": {"type": "vllm", "base_url": "ftp://gpu-box/v1"},
                "mine": {"fallback": ["gpu"], "model": "coder-32b"},
            },
        },
    )
    loaded = load_config(USER, [layer])
    assert loaded.problems == [
        "workspace.toml: `backends.gpu.base_url` must be an http:// or https:// URL, not 'ftp://gpu-box/v1'",
        "workspace.toml: `backends.gpu.base_url` is required (for example http://127.0.0.1:8000/v1)",
        "workspace.toml: `default_backend` names the unknown backend 'gpu' (configured: local, local-plain, "
        "local-router, mine, openai)",
        "workspace.toml: `backends.mine.fallback` names 'gpu', which is not another configured backend",
    ]
    config = loaded.config
    assert "gpu" not in config.backends
    assert config.default_backend == "mine"  # the value below the dropped one
    assert config.backends["mine"].fallback == []
    assert config.backends["mine"].model == "coder-32b"


def test_a_bad_key_in_a_backend_whose_name_has_a_dot_drops_only_that_key() -> None:
    layer = Layer(
        "user.toml",
        {
            "backends": {
                "gpu.box": {"base_url": "https://gpu.example/v1", "model": "m", "prediction": "sometimes"},
                "other": {"base_url": "https://other.example/v1", "model": "m"},
            }
        },
    )
    loaded = load_config(layer)
    assert [p.split(" must")[0] for p in loaded.problems] == ["user.toml: `backends.gpu.box.prediction`"]
    assert loaded.config.backends["gpu.box"].base_url == "https://gpu.example/v1"
    assert "other" in loaded.config.backends


def test_many_bad_keys_are_all_reported() -> None:
    refactor: dict[str, Any] = {f"unknown_{i}": 1 for i in range(60)}
    refactor["timeout_s"] = 7
    loaded = load_config(Layer("user.toml", {"refactor": refactor}))
    assert len(loaded.problems) == 60
    assert loaded.config.refactor.timeout_s == 7.0


def test_the_kept_layer_converts_cleanly_to_the_same_config() -> None:
    below = {"backends": {k: dict(v) for k, v in BUILTIN_BACKENDS.items()}}
    layer = {
        "bogus": 1,
        "backends": {"new": {"base_url": "https://n.example/v1"}, "local": {"model": "big", "headers": {"A": 1}}},
        "refactor": "fast",
        "actions": [{"id": "x"}],
        "default_backend": "new",
    }
    first = convert(below, layer, lambda key: "layer")
    assert len(first.problems) == 6
    assert layer["bogus"] == 1  # the caller's data is left as it was
    again = convert(below, first.kept, lambda key: "layer")
    assert again.problems == []
    assert again.config == first.config
    assert again.config.backends["local"].model == "big"


def test_an_untrusted_layer_is_measured_against_the_users_own_values(tmp_path: Path) -> None:
    """Not against an untrusted layer below it: the workspace file may undo what editor settings lowered,
    up to the user's value, and no further."""
    user = Layer("user.toml", {**USER.data, "refactor": {"max_tokens": 300, "max_retries": 2}})
    init = editor_layer(
        {"backends": {"spare": {"baseUrl": "http://127.0.0.1:9002/v1", "model": "m"}}}, "initializationOptions"
    )
    settings = editor_layer({"refactor": {"maxTokens": 100, "maxRetries": 0}}, trusted=False)
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / WORKSPACE_FILE).write_text(
        'default_backend = "spare"\n[refactor]\nmax_tokens = 200\nmax_retries = 3\n', encoding="utf-8"
    )
    loaded = load_config(user, [init, settings], folder)
    assert loaded.config.default_backend == "spare"  # named by the user's initializationOptions
    assert (loaded.config.refactor.max_tokens, loaded.config.refactor.max_retries) == (200, 0)
    (problem,) = loaded.problems
    assert problem.startswith(f"{folder / WORKSPACE_FILE}: ignored refactor.max_retries (3, yours is 2): ")
