"""Configuration layers and who may decide what; the schema and its converter are in `config_schema`.

Layers, lowest to highest: built-in defaults, the user file, the editor's settings
(``initializationOptions`` then ``workspace/configuration``), and the workspace's own
``.refactor-lsp.toml``. The workspace file arrives with a cloned repository, so it is
untrusted: unless the user trusted the folder, it may not decide where code and keys go.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .config_schema import (
    BUILTIN_ACTIONS,
    BUILTIN_BACKENDS,
    FIX_DIAGNOSTICS_ID,
    INSTRUCTION_COMMENT_ID,
    PRICE_KEYS,
    ROUTING_KEYS,
    WORKSPACE_FILE,
    ActionPreset,
    BackendConfig,
    BackendType,
    Config,
    ConfigError,
    EditFormat,
    LogLevel,
    PredictionMode,
    RefactorSettings,
    ScopeMode,
    convert,
    merge,
)

__all__ = [
    "BUILTIN_ACTIONS",
    "BUILTIN_BACKENDS",
    "EDITOR_SOURCE",
    "FIX_DIAGNOSTICS_ID",
    "INSTRUCTION_COMMENT_ID",
    "PRICE_KEYS",
    "ROUTING_KEYS",
    "TRUST_KEYS",
    "WORKSPACE_FILE",
    "ActionPreset",
    "BackendConfig",
    "BackendType",
    "Config",
    "ConfigError",
    "EditFormat",
    "Layer",
    "LoadedConfig",
    "LogLevel",
    "PredictionMode",
    "RefactorSettings",
    "ScopeMode",
    "WorkspaceFilter",
    "api_key",
    "build_config",
    "editor_layer",
    "is_loopback_url",
    "is_trusted",
    "load_config",
    "read_toml",
    "restrict_untrusted",
    "user_config_path",
    "user_layer",
]

EDITOR_SOURCE = "editor settings"


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_")


def _snake_keys(value: Any) -> Any:
    """Editors send camelCase (VS Code) or snake_case (Neovim); backend names are kept as written."""
    if isinstance(value, Mapping):
        return {
            _snake(k): (
                {name: _snake_keys(b) for name, b in v.items()}
                if _snake(k) == "backends" and isinstance(v, Mapping)
                else _snake_keys(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


@dataclass(frozen=True)
class Layer:
    """One source of settings: plain data, already snake_cased, plus where it came from.

    `trusted`: only the user can write this source (the user file, `initializationOptions`). A
    source a repository can fill (its workspace file, editor settings read from project files)
    may not decide where code and keys are sent unless the user trusted the folder.
    """

    source: str
    data: Mapping[str, Any]
    trusted: bool = True


def read_toml(path: Path, *, trusted: bool = True) -> Layer:
    try:
        text = path.read_bytes().decode("utf-8")
        return Layer(str(path), tomllib.loads(text), trusted)
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), "(file)", f"is not UTF-8 text (byte {exc.start}); save it as UTF-8 (TOML files must be)"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "(file)", f"is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(str(path), "(file)", f"cannot be read: {exc.strerror}") from None


def editor_layer(settings: Any, source: str = EDITOR_SOURCE, *, trusted: bool = True) -> Layer:
    if settings is None:
        return Layer(source, {}, trusted)
    if not isinstance(settings, Mapping):
        raise ConfigError(source, "refactorLsp", f"must be an object, not {settings!r}")
    data = _snake_keys(settings)
    # VS Code sends every contributed setting, unset ones as null or "": those mean "not set".
    return Layer(source, _drop_unset(data), trusted)


def _drop_unset(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            value = _drop_unset(value)
        if value is None or value == "" or value == {}:
            continue
        out[key] = value
    return out


def user_config_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("REFACTOR_LSP_CONFIG"):
        return Path(env["REFACTOR_LSP_CONFIG"]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "refactor-lsp" / "config.toml"


def user_layer(path: Path | None = None, env: Mapping[str, str] = os.environ) -> Layer:
    """The user's file; a missing default file is simply empty, a missing explicit one is an error."""
    explicit = path is not None or bool(env.get("REFACTOR_LSP_CONFIG"))
    resolved = path or user_config_path(env)
    if not resolved.exists() and not explicit:
        return Layer(str(resolved), {})
    return read_toml(resolved)


def is_trusted(folder: Path, trusted: list[str]) -> bool:
    folder = folder.resolve()
    for entry in trusted:
        root = Path(entry).expanduser().resolve()
        if folder == root or root in folder.parents:
            return True
    return False


@dataclass(frozen=True)
class WorkspaceFilter:
    """What an untrusted source was not allowed to set."""

    ignored_keys: list[str]


# Keys only the user's own channels may set: who is trusted, and (from an editor) "this folder is trusted".
TRUST_KEYS = ("trusted_workspaces", "workspace_trusted")
_USER_ONLY = ROUTING_KEYS | PRICE_KEYS  # of a backend's keys


def restrict_untrusted(layer: Layer, known_backends: Mapping[str, BackendConfig]) -> tuple[Layer, WorkspaceFilter]:
    """Drop what an untrusted source may not decide: where code and keys are sent, the user's prices,
    and who is trusted.

    It may pick among the user's backends and change their model and prediction mode, and set
    refactor settings and presets; it may not add backends or change their routing keys or prices. A
    value equal to the one the user's own channels already give changes nothing and is kept quietly.
    """
    data = dict(layer.data)
    ignored: list[str] = []
    backends = data.get("backends")
    if isinstance(backends, Mapping):
        kept: dict[str, Any] = {}
        for name, table in backends.items():
            known = known_backends.get(name)
            if known is None or not isinstance(table, Mapping):
                ignored.append(f"backends.{name}")
                continue
            changes = [k for k, v in table.items() if k in _USER_ONLY and getattr(known, k, None) != v]
            ignored.extend(f"backends.{name}.{k}" for k in changes)
            allowed = {k: v for k, v in table.items() if k not in _USER_ONLY}
            if allowed:
                kept[name] = allowed
        data["backends"] = kept
    for key in TRUST_KEYS:
        if key in data:
            ignored.append(key)
            del data[key]
    return Layer(layer.source, data, layer.trusted), WorkspaceFilter(ignored)


@dataclass(frozen=True)
class _Stack:
    """The layers admitted so far: their merged (valid) data, where each key came from, and their config."""

    data: Mapping[str, Any]
    origin: Mapping[str, str]
    config: Config


def _admit(below: _Stack | None, layer: Layer) -> tuple[_Stack, list[ConfigError]]:
    """Stack `layer` on `below` (None: the built-in defaults), less each bad setting in it.

    The layer is converted once: every bad key is reported and dropped, the rest still applies.
    """
    data = below.data if below else {"backends": {k: dict(v) for k, v in BUILTIN_BACKENDS.items()}}
    origin = dict(below.origin) if below else {}
    _note_origins(layer.data, layer.source, origin)
    converted = convert(data, layer.data, lambda key: origin.get(key, "configuration"))
    if converted.problems:  # where each key came from, less the dropped keys
        origin = dict(below.origin) if below else {}
        _note_origins(converted.kept, layer.source, origin)
    return _Stack(merge(data, converted.kept), origin, converted.config), converted.problems


def _note_origins(data: Mapping[str, Any], source: str, origin: dict[str, str], prefix: str = "") -> None:
    for key, value in data.items():
        origin[prefix + key] = source
        if isinstance(value, Mapping):
            _note_origins(value, source, origin, f"{prefix}{key}.")


def build_config(layers: Sequence[Layer]) -> Config:
    """Stack layers (lowest first) as `load_config` does, but strictly: the first bad setting is raised.

    For a config made in memory (tests, benchmarks): no files are read and no layer is filtered.
    """
    stack = None
    for layer in layers or [Layer("configuration", {})]:
        stack, problems = _admit(stack, layer)
        if problems:
            raise problems[0]
    assert stack is not None
    return stack.config


@dataclass(frozen=True)
class LoadedConfig:
    """A built config plus what the user should hear about how it was built."""

    config: Config
    problems: list[str]


def load_config(
    user: Layer,
    editor: Sequence[Layer] = (),
    workspace_folder: Path | None = None,
    workspace_trusted_by_editor: bool = False,
) -> LoadedConfig:
    """Build the effective config. Each bad setting is reported and skipped; the rest still applies.

    The one place the layers are stacked, for the server, the CLI and (strictly, via `build_config`)
    configs made in memory. Only the user's own file can trust a folder: `trusted_workspaces`
    anywhere else is ignored. Untrusted layers (editor settings a repository can fill, the workspace
    file) lose their routing keys unless the folder is trusted.
    """
    problems: list[str] = []

    def admit(below: _Stack | None, layer: Layer) -> _Stack:
        stack, bad = _admit(below, layer)
        problems.extend(map(str, bad))
        return stack

    stack = admit(None, user)
    folder_trusted = workspace_folder is not None and (
        workspace_trusted_by_editor or is_trusted(workspace_folder, stack.config.trusted_workspaces)
    )
    how_to_trust = (
        f"To trust this folder, add trusted_workspaces = [{str(workspace_folder)!r}] to {user.source}"
        if workspace_folder is not None
        else f"Set them in {user.source} instead"
    )
    for layer in editor:
        if "trusted_workspaces" in layer.data and (layer.trusted or folder_trusted):
            problems.append(f"{layer.source}: ignored `trusted_workspaces`: only {user.source} can trust a folder")
            data = {k: v for k, v in layer.data.items() if k != "trusted_workspaces"}
            layer = Layer(layer.source, data, layer.trusted)
        if not layer.trusted and not folder_trusted:
            layer, dropped = restrict_untrusted(layer, stack.config.backends)
            if dropped.ignored_keys:
                problems.append(
                    f"{layer.source}: ignored {', '.join(dropped.ignored_keys)}: editor settings that a repository "
                    "can fill (.dir-locals.el, .neoconf.json, project settings) may not decide where code and keys "
                    f"are sent, or your prices. Set them in {user.source} or your editor's "
                    f"initializationOptions. {how_to_trust}"
                )
        stack = admit(stack, layer)
    if workspace_folder is not None:
        path = workspace_folder / WORKSPACE_FILE
        if path.is_file():
            try:
                layer = read_toml(path, trusted=folder_trusted)
            except ConfigError as exc:
                problems.append(str(exc))
            else:
                if not folder_trusted:
                    layer, dropped = restrict_untrusted(layer, stack.config.backends)
                    if dropped.ignored_keys:
                        problems.append(
                            f"{path}: ignored {', '.join(dropped.ignored_keys)}: a workspace file may not decide "
                            f"where code and keys are sent, or your prices. {how_to_trust}"
                        )
                stack = admit(stack, layer)
    config = stack.config
    for backend in config.backends.values():
        if backend.base_url.startswith("http://") and not is_loopback_url(backend.base_url):
            problems.append(
                f"backends.{backend.name}.base_url sends your code unencrypted over plain http to "
                f"{urlparse(backend.base_url).hostname}; use https:// unless that network is yours"
            )
    return LoadedConfig(config, problems)


def is_loopback_url(url: str) -> bool:
    """True only for a host that is this machine: `localhost` or a loopback address (not `127.0.0.1.nip.io`)."""
    try:
        host = (urlparse(url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key(backend: BackendConfig, env: Mapping[str, str] = os.environ) -> str | None:
    """The key from the environment variable the backend names; None when it names none.

    Surrounding whitespace (a newline from `$(cat key.txt)`) is dropped; a key that still holds
    anything but visible ASCII cannot go in an HTTP header and is refused, never shown.
    """
    if not backend.api_key_env:
        return None
    value = env.get(backend.api_key_env, "").strip()
    if not value:
        raise ConfigError(
            f"backends.{backend.name}",
            "api_key_env",
            f"names the environment variable {backend.api_key_env}, which is not set: export it before "
            f"starting refactor-lsp",
        )
    bad = next((i for i, ch in enumerate(value) if not "!" <= ch <= "~"), None)
    if bad is not None:
        raise ConfigError(
            f"backends.{backend.name}",
            "api_key_env",
            f"names the environment variable {backend.api_key_env}, whose value is not a valid key (character "
            f"{bad + 1} is a space, a control or a non-ASCII character): set it to the key alone",
        )
    return value
