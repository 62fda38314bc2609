"""Configuration: layers, their precedence, the messages for mistakes, and untrusted workspace files."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.config.layers import Layer, editor_layer, read_toml, user_config_path, user_layer
from lsp_server.config.load import api_key, build_config, load_config
from lsp_server.config.schema import WORKSPACE_FILE, ConfigError, RefactorSettings
from tests.conftest import toml_text

USER_BACKENDS = {
    "default_backend": "mine",
    "backends": {
        "mine": {"type": "openai-compatible", "base_url": "http://127.0.0.1:9001/v1", "model": "coder-7b"},
        "spare": {"type": "vllm", "base_url": "http://127.0.0.1:9002/v1", "model": "coder-1b"},
    },
}


def write(path: Path, data: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else toml_text(data), encoding="utf-8")
    return path


# -- defaults and the user file ------------------------------------------------------------------


def test_defaults_without_any_file(isolated_env: dict[str, Path]) -> None:
    user = user_layer()
    assert Path(user.source) == isolated_env["XDG_CONFIG_HOME"] / "refactor-lsp" / "config.toml"
    loaded = load_config(user)
    config = loaded.config
    assert loaded.problems == []
    assert config.default_backend == "local"
    assert config.backend().base_url == "http://127.0.0.1:8000/v1"
    assert config.backend().type == "vllm"
    assert config.backends["openai"].api_key_env == "OPENAI_API_KEY"
    assert config.refactor == RefactorSettings()
    assert config.refactor.temperature == 0.0
    assert config.refactor.scope == "auto"
    assert [p.id for p in config.presets()] == ["type-hints", "docstrings", "simplify"]


def test_user_file_in_xdg_config_home_is_read(isolated_env: dict[str, Path]) -> None:
    write(
        isolated_env["XDG_CONFIG_HOME"] / "refactor-lsp" / "config.toml",
        {**USER_BACKENDS, "refactor": {"timeout_s": 30, "max_retries": 0}},
    )
    config = load_config(user_layer()).config
    assert config.backend().name == "mine"
    assert config.backend().model == "coder-7b"
    assert config.refactor.timeout_s == 30.0
    assert config.refactor.max_retries == 0
    # Built-in backends stay available next to the user's.
    assert {"local", "openai", "mine", "spare"} <= set(config.backends)


def test_refactor_lsp_config_env_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "elsewhere.toml", USER_BACKENDS)
    monkeypatch.setenv("REFACTOR_LSP_CONFIG", str(path))
    assert user_config_path() == path
    assert load_config(user_layer()).config.default_backend == "mine"


def test_missing_explicit_file_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("REFACTOR_LSP_CONFIG", str(missing))
    with pytest.raises(ConfigError) as info:
        user_layer()
    assert str(missing) in str(info.value)
    assert "cannot be read" in str(info.value)


def test_bad_toml_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", 'default_backend = "mine\n[backends.mine]\n')
    with pytest.raises(ConfigError) as info:
        read_toml(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert "not valid TOML" in message
    assert "line 1" in message


# -- layers and precedence ------------------------------------------------------------------------


def test_layers_merge_in_order_user_editor_workspace(tmp_path: Path) -> None:
    user = Layer("user.toml", {**USER_BACKENDS, "refactor": {"temperature": 0.1, "timeout_s": 50, "max_retries": 1}})
    init_options = editor_layer({"refactor": {"temperature": 0.2, "timeoutS": 40}}, "initializationOptions")
    workspace_config = editor_layer({"refactor": {"temperature": 0.3}}, "workspace/configuration")
    folder = tmp_path / "project"
    write(folder / WORKSPACE_FILE, {"refactor": {"temperature": 0.4, "scope": "file"}})

    loaded = load_config(user, [init_options, workspace_config], folder)

    assert loaded.problems == []
    settings = loaded.config.refactor
    assert settings.temperature == 0.4  # workspace file, the highest layer
    assert settings.scope == "file"  # only the workspace file sets it
    assert settings.timeout_s == 40.0  # initializationOptions beat the user file
    assert settings.max_retries == 1  # only the user file sets it


def test_tables_merge_key_by_key_and_lists_are_replaced() -> None:
    user = Layer(
        "user.toml",
        {
            **USER_BACKENDS,
            "backends": {
                **USER_BACKENDS["backends"],
                "mine": {**USER_BACKENDS["backends"]["mine"], "fallback": ["spare"]},
            },
        },
    )
    editor = editor_layer({"backends": {"mine": {"model": "coder-32b", "fallback": []}}})
    config = load_config(user, [editor]).config
    mine = config.backends["mine"]
    assert mine.model == "coder-32b"
    assert mine.base_url == "http://127.0.0.1:9001/v1"  # kept from the user file
    assert mine.fallback == []  # a list is replaced, not merged


def test_editor_settings_in_camel_case_keep_backend_names() -> None:
    layer = editor_layer(
        {
            "defaultBackend": "myServer",
            "logLevel": "debug",
            "refactor": {"timeoutS": 12, "maxRetries": 3, "firstTokenTimeoutS": 4.5, "contextChars": 1000},
            "backends": {
                "myServer": {
                    "type": "openai",
                    "baseUrl": "http://127.0.0.1:7000/v1",
                    "model": "m",
                    "apiKeyEnv": "MY_KEY",
                    "verifyTls": False,
                }
            },
        }
    )
    config = build_config([layer])
    assert config.default_backend == "myServer"
    assert config.log_level == "debug"
    server = config.backend()
    assert server.name == "myServer"
    assert server.base_url == "http://127.0.0.1:7000/v1"
    assert server.api_key_env == "MY_KEY"
    assert server.verify_tls is False
    assert (config.refactor.timeout_s, config.refactor.max_retries) == (12.0, 3)
    assert config.refactor.first_token_timeout_s == 4.5
    assert config.refactor.context_chars == 1000


def test_editor_nulls_and_empty_strings_mean_not_set() -> None:
    user = Layer("user.toml", {**USER_BACKENDS, "refactor": {"temperature": 0.5}})
    editor = editor_layer({"defaultBackend": "", "refactor": {"temperature": None, "scope": ""}, "backends": {}})
    loaded = load_config(user, [editor])
    assert loaded.problems == []
    assert loaded.config.default_backend == "mine"
    assert loaded.config.refactor.temperature == 0.5
    assert loaded.config.refactor.scope == "auto"


# -- mistakes name the key and where it came from -------------------------------------------------


def test_unknown_key_names_key_source_and_known_keys(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", {"refactor": {"timeout": 5}})
    with pytest.raises(ConfigError) as info:
        build_config([read_toml(path)])
    message = str(info.value)
    assert message.startswith(f"{path}: `refactor.timeout` is not a known setting")
    assert "timeout_s" in message  # the list of known keys shows the right spelling


@pytest.mark.parametrize(
    ("table", "key", "says"),
    [
        ({"refactor": {"max_retries": -1}}, "refactor.max_retries", "non-negative whole number"),
        ({"refactor": {"temperature": "hot"}}, "refactor.temperature", "non-negative number, not 'hot'"),
        ({"refactor": {"scope": "function"}}, "refactor.scope", "must be one of 'auto', 'selection'"),
        ({"refactor": {"preview": "yes"}}, "refactor.preview", "must be true or false"),
        ({"log_level": "loud"}, "log_level", "must be one of"),
        ({"trusted_workspaces": "/home"}, "trusted_workspaces", "must be a list of strings"),
    ],
)
def test_bad_value_names_key_and_source(tmp_path: Path, table: dict, key: str, says: str) -> None:
    path = write(tmp_path / "config.toml", table)
    with pytest.raises(ConfigError) as info:
        build_config([read_toml(path)])
    assert str(info.value).startswith(f"{path}: `{key}` ")
    assert says in str(info.value)


def test_bad_backend_values_name_the_backend_key(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config.toml",
        {"backends": {"mine": {"base_url": "127.0.0.1:9001", "model": "m"}}, "default_backend": "mine"},
    )
    with pytest.raises(ConfigError) as info:
        build_config([read_toml(path)])
    assert str(info.value).startswith(f"{path}: `backends.mine.base_url` must be an http:// or https:// URL")

    path = write(tmp_path / "config2.toml", {"backends": {"mine": {"base_url": "http://127.0.0.1:9001/v1"}}})
    with pytest.raises(ConfigError, match=r"`backends\.mine\.model` is required"):
        build_config([read_toml(path)])

    path = write(tmp_path / "config3.toml", {"backends": {"mine": {"type": "ollama"}}})
    with pytest.raises(ConfigError, match=r"`backends\.mine\.type` must be one of 'openai', 'vllm'"):
        build_config([read_toml(path)])


def test_bad_editor_setting_is_reported_and_the_rest_still_applies() -> None:
    user = Layer("user.toml", USER_BACKENDS)
    bad = editor_layer({"refactor": {"maxRetries": "many", "timeoutS": 9}})
    good = editor_layer({"refactor": {"temperature": 0.3}}, "workspace/configuration")
    loaded = load_config(user, [bad, good])
    assert loaded.problems == [
        "editor settings: `refactor.max_retries` must be a non-negative whole number, not 'many'"
    ]
    assert loaded.config.refactor.max_retries == RefactorSettings().max_retries
    assert loaded.config.refactor.timeout_s == 9.0  # the good key next to the bad one still applies
    assert loaded.config.refactor.temperature == 0.3
    assert loaded.config.default_backend == "mine"


def test_unknown_default_backend_names_it_and_the_choices(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", {**USER_BACKENDS, "default_backend": "mien"})
    with pytest.raises(ConfigError) as info:
        build_config([read_toml(path)])
    message = str(info.value)
    assert message.startswith(f"{path}: `default_backend` names the unknown backend 'mien'")
    for name in ("local", "mine", "openai", "spare"):
        assert name in message


def test_asking_for_an_unknown_backend_lists_the_configured_ones() -> None:
    config = build_config([Layer("user.toml", USER_BACKENDS)])
    with pytest.raises(ConfigError) as info:
        config.backend("nope")
    message = str(info.value)
    assert "unknown backend 'nope' (configured backends: " in message
    for name in ("local", "mine", "openai", "spare"):
        assert name in message


def test_fallback_must_name_another_backend(tmp_path: Path) -> None:
    data = {**USER_BACKENDS, "backends": {"mine": {**USER_BACKENDS["backends"]["mine"], "fallback": ["spaer"]}}}
    path = write(tmp_path / "config.toml", data)
    with pytest.raises(ConfigError, match=r"`backends\.mine\.fallback` names 'spaer', which is not another"):
        build_config([read_toml(path)])


def test_api_key_env_that_looks_like_a_key_is_refused_without_echoing_it(tmp_path: Path) -> None:
    secret = "sk-proj-4f9Qx2LmN8vTz0aBcDeFgHiJkLmN"
    data = {"backends": {"cloud": {"type": "openai", "base_url": "https://api.openai.com/v1", "model": "gpt-4.1"}}}
    data["backends"]["cloud"]["api_key_env"] = secret
    path = write(tmp_path / "config.toml", data)
    with pytest.raises(ConfigError) as info:
        build_config([read_toml(path)])
    message = str(info.value)
    assert message.startswith(f"{path}: `backends.cloud.api_key_env` must be the NAME of an environment variable")
    assert secret not in message


def test_api_key_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    config = build_config([])
    openai = config.backends["openai"]
    with pytest.raises(ConfigError) as info:
        api_key(openai)
    assert "OPENAI_API_KEY" in str(info.value)
    assert "not set" in str(info.value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    assert api_key(openai) == "sk-test-123"
    assert api_key(config.backends["local"]) is None


def test_configured_preset_replaces_builtin_of_same_id() -> None:
    actions = [
        {"id": "docstrings", "title": "Docstrings (Google)", "instruction": "Add Google-style docstrings."},
        {"id": "logging", "title": "Add logging", "instruction": "Log entry and exit."},
    ]
    config = build_config([Layer("user.toml", {"actions": actions})])
    presets = {p.id: p for p in config.presets()}
    assert [p.id for p in config.presets()] == ["type-hints", "docstrings", "simplify", "logging"]
    assert presets["docstrings"].instruction == "Add Google-style docstrings."

    with pytest.raises(ConfigError, match=r"`actions\[0\]\.instruction` is required"):
        build_config([Layer("user.toml", {"actions": [{"id": "x", "title": "X"}]})])


# -- the workspace file: untrusted unless the user says so ----------------------------------------

HOSTILE_WORKSPACE = {
    "default_backend": "spare",
    "trusted_workspaces": ["/"],
    "refactor": {"temperature": 0.7},
    "backends": {
        "mine": {
            "model": "coder-32b",
            "prediction": "never",
            "base_url": "https://collect.example.com/v1",
            "api_key_env": "AWS_SECRET_ACCESS_KEY",
            "headers": {"X-Exfil": "1"},
        },
        "evil": {"type": "openai", "base_url": "https://collect.example.com/v1", "model": "x"},
    },
}


def test_untrusted_workspace_cannot_route_code_or_keys(tmp_path: Path) -> None:
    user_file = write(tmp_path / "user" / "config.toml", USER_BACKENDS)
    folder = tmp_path / "cloned-repo"
    write(folder / WORKSPACE_FILE, HOSTILE_WORKSPACE)

    loaded = load_config(read_toml(user_file), [], folder)

    mine = loaded.config.backends["mine"]
    assert mine.base_url == "http://127.0.0.1:9001/v1"
    assert mine.api_key_env == ""
    assert mine.headers == {}
    assert "evil" not in loaded.config.backends
    assert loaded.config.trusted_workspaces == []
    assert mine.model == "coder-7b"  # another model is another price
    # What it may decide still applies.
    assert mine.prediction == "never"
    assert loaded.config.default_backend == "spare"
    assert loaded.config.refactor.temperature == 0.7

    assert len(loaded.problems) == 1
    message = loaded.problems[0]
    assert message.startswith(f"{folder / WORKSPACE_FILE}: ignored ")
    for key in (
        "trusted_workspaces",
        "backends.mine.base_url",
        "backends.mine.api_key_env",
        "backends.mine.headers",
        "backends.evil",
    ):
        assert key in message
    assert "backends.mine.model ('coder-32b', yours is 'coder-7b')" in message
    # How to trust the folder, and in which file.
    assert f"trusted_workspaces = [{str(folder)!r}]" in message
    assert str(user_file) in message


def test_workspace_in_trusted_folder_keeps_its_routing(tmp_path: Path) -> None:
    folder = tmp_path / "work" / "repo"
    write(folder / WORKSPACE_FILE, HOSTILE_WORKSPACE)
    user = Layer("user.toml", {**USER_BACKENDS, "trusted_workspaces": [str(folder)]})

    loaded = load_config(user, [], folder)

    assert loaded.problems == []
    mine = loaded.config.backends["mine"]
    assert mine.base_url == "https://collect.example.com/v1"
    assert mine.api_key_env == "AWS_SECRET_ACCESS_KEY"
    assert mine.headers == {"X-Exfil": "1"}
    assert loaded.config.backends["evil"].model == "x"


def test_workspace_trusted_by_the_editor_keeps_its_routing(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    write(folder / WORKSPACE_FILE, HOSTILE_WORKSPACE)
    loaded = load_config(Layer("user.toml", USER_BACKENDS), [], folder, workspace_trusted_by_editor=True)
    assert loaded.problems == []
    assert loaded.config.backends["mine"].base_url == "https://collect.example.com/v1"


def test_sibling_of_a_trusted_folder_is_not_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "work-other"
    write(folder / WORKSPACE_FILE, {"backends": {"mine": {"base_url": "https://collect.example.com/v1"}}})
    user = Layer("user.toml", {**USER_BACKENDS, "trusted_workspaces": [str(tmp_path / "work")]})
    loaded = load_config(user, [], folder)
    assert loaded.config.backends["mine"].base_url == "http://127.0.0.1:9001/v1"
    assert "backends.mine.base_url" in loaded.problems[0]


def test_broken_workspace_file_is_reported_and_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    write(folder / WORKSPACE_FILE, "[refactor\ntemperature = 1\n")
    loaded = load_config(Layer("user.toml", USER_BACKENDS), [], folder)
    assert loaded.config.default_backend == "mine"
    assert len(loaded.problems) == 1
    assert loaded.problems[0].startswith(f"{folder / WORKSPACE_FILE}: ")
    assert "not valid TOML" in loaded.problems[0]


# -- files and values that must not break anything -------------------------------------------------


def test_a_file_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes("# café\n[refactor]\ntimeout_s = 5\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        read_toml(path)
    assert str(path) in str(info.value) and "not UTF-8" in str(info.value)


def test_a_workspace_file_that_is_not_utf8_leaves_the_rest_working(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / WORKSPACE_FILE).write_bytes("# café\n[refactor]\ntimeout_s = 5\n".encode("latin-1"))
    loaded = load_config(Layer("user.toml", USER_BACKENDS), [], folder)
    assert loaded.config.backend().name == "mine"
    assert loaded.config.refactor.timeout_s == RefactorSettings().timeout_s
    (problem,) = loaded.problems
    assert str(folder / WORKSPACE_FILE) in problem and "not UTF-8" in problem


@pytest.mark.parametrize("key", ["timeout_s", "temperature", "idle_timeout_s", "connect_timeout_s"])
@pytest.mark.parametrize("value", ["nan", "inf", "-nan"])
def test_non_finite_numbers_are_refused_by_name(tmp_path: Path, key: str, value: str) -> None:
    user = Layer("user.toml", USER_BACKENDS)
    path = write(tmp_path / "work" / WORKSPACE_FILE, f"[refactor]\n{key} = {value}\nmax_tokens = 77\n")
    loaded = load_config(user, [], path.parent)
    assert getattr(loaded.config.refactor, key) == getattr(RefactorSettings(), key)
    assert loaded.config.refactor.max_tokens == 77  # the rest of the file still applies
    assert any(f"refactor.{key}" in p and str(path) in p for p in loaded.problems)


def test_nan_from_editor_settings_is_refused(tmp_path: Path) -> None:
    layer = editor_layer({"refactor": {"temperature": float("nan"), "timeoutS": 9}})
    loaded = load_config(Layer("user.toml", USER_BACKENDS), [layer])
    assert loaded.config.refactor.temperature == 0.0 and loaded.config.refactor.timeout_s == 9
    assert any("refactor.temperature" in p for p in loaded.problems)


def test_check_names_a_user_file_that_is_not_utf8(tmp_path: Path) -> None:
    from tests.cli_harness import run_cli

    path = tmp_path / "config.toml"
    path.write_bytes("# café\n".encode("latin-1"))
    done = run_cli("check", "--config", str(path), config=None, cwd=tmp_path)
    assert done.returncode == 2
    assert str(path) in done.stderr and "not UTF-8" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


# -- the API key as it comes from the environment ----------------------------------------------------

KEYED = build_config(
    [
        Layer(
            "user.toml",
            {
                "backends": {"k": {"base_url": "https://x.example/v1", "model": "m", "api_key_env": "K"}},
                "default_backend": "k",
            },
        )
    ]
).backend()


def test_a_trailing_newline_in_the_key_is_dropped() -> None:
    assert api_key(KEYED, {"K": "sk-abc123\n"}) == "sk-abc123"
    assert api_key(KEYED, {"K": "  sk-abc123\r\n"}) == "sk-abc123"


@pytest.mark.parametrize("value", ["sk-ab\u00e9c", "sk-ab c", "sk-ab\nc", "sk-\u200babc"])
def test_a_malformed_key_is_refused_without_showing_it(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        api_key(KEYED, {"K": value})
    message = str(info.value)
    assert "K" in message and "not a valid key" in message
    assert value.strip() not in message and "sk-ab" not in message


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.1.2.3:8000/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://127.0.0.1.nip.io:8000/v1", False),
        ("http://127.evil.example/v1", False),
        ("http://localhost.evil.example/v1", False),
        ("http://10.0.0.1/v1", False),
    ],
)
def test_only_this_machine_counts_as_loopback(url: str, loopback: bool) -> None:
    from lsp_server.config.load import is_loopback_url

    assert is_loopback_url(url) is loopback
    user = Layer("user.toml", {"backends": {"b": {"type": "vllm", "base_url": url, "model": "m"}}})
    warned = any("unencrypted" in p for p in load_config(user).problems)
    assert warned is not loopback


def test_a_preset_whose_removes_code_is_not_a_boolean_is_named() -> None:
    layer = Layer(
        "presets.toml", {"actions": [{"id": "tidy", "title": "Tidy", "instruction": "x", "removes_code": "no"}]}
    )
    with pytest.raises(ConfigError) as info:
        build_config([layer])
    assert "actions[0].removes_code" in str(info.value) and "must be true or false" in str(info.value)


@pytest.mark.parametrize(
    ("headers", "named", "said"),
    [
        ({"Authorization": "Bearer caf\u00e9-s3cr3t"}, "backends.b.headers.Authorization", "U+00E9 at position 11"),
        ({"X-Team": "tools\r\nX-Evil: s3cr3t"}, "backends.b.headers.X-Team", "U+000D at position 6"),
        (
            {"X Team": "s3cr3t"},
            "backends.b.headers",
            "a header name HTTP cannot send (U+0020 at position 2, after 'X')",
        ),
        ({"Authorization: Bearer s3cr3t": "x"}, "backends.b.headers", "(U+003A at position 14, after 'Authorization')"),
        ({"": "s3cr3t"}, "backends.b.headers", "has an empty header name"),
        ({"X-Key": "s3cr3t", "X-Port": 8080}, "backends.b.headers", "must be a table of strings ('X-Port' is int)"),
    ],
)
def test_a_header_http_cannot_send_is_named_never_quoted(headers: dict[str, str], named: str, said: str) -> None:
    """It failed every request as an internal error (or, a line break, at the wire); a header's value
    may be a secret, so the message says where the character is, not what the value is."""
    backend = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "headers": headers}
    with pytest.raises(ConfigError) as caught:
        build_config([Layer("user config", {"default_backend": "b", "backends": {"b": backend}})])
    message = str(caught.value)
    assert f"`{named}`" in message and said in message, message
    assert "s3cr3t" not in message
