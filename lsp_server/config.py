"""Configuration layers and who may decide what; the schema and its converter are in `config_schema`.

Layers, lowest to highest: built-in defaults, the user file, the editor's settings
(``initializationOptions`` then ``workspace/configuration``), and the workspace's own
``.refactor-lsp.toml``. The workspace file arrives with a cloned repository, so it is
untrusted: unless the user trusted the folder, it may not decide where code and keys go, pick a
backend the user never named, or raise what a refactor can cost.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .config_schema import (
    BUILTIN_ACTIONS,
    BUILTIN_BACKENDS,
    COST_CEILINGS,
    COST_KEYS,
    FIX_DIAGNOSTICS_ID,
    INSTRUCTION_COMMENT_ID,
    MIN_AUTO_MAX_TOKENS,
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
    "COST_CEILINGS",
    "COST_KEYS",
    "EDITOR_SOURCE",
    "FIX_DIAGNOSTICS_ID",
    "INSTRUCTION_COMMENT_ID",
    "MIN_AUTO_MAX_TOKENS",
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


MAX_CONFIG_BYTES = 1 << 20  # a config file is a few KB; a repository's may be anything


def read_toml(path: Path, *, trusted: bool = True) -> Layer:
    from .safe_read import ReadRefused, read_regular_file

    try:
        text = read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8")
        return Layer(str(path), tomllib.loads(text), trusted)
    except ReadRefused as exc:
        raise ConfigError(str(path), "(file)", f"cannot be read: {exc.reason}") from None
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


def restrict_untrusted(layer: Layer, own: Config, named: Collection[str]) -> tuple[Layer, WorkspaceFilter]:
    """Drop what an untrusted source may not decide: where code and keys are sent, which backend serves
    them, what a refactor can cost, the user's prices, and who is trusted.

    It may pick among `named` (the backends the user's own channels name), lower the COST_CEILINGS
    below `own` (what those channels give), set `prediction = "never"`, other refactor settings and
    presets. A value equal to the user's own changes nothing and is kept quietly.
    """
    data = dict(layer.data)
    ignored: list[str] = []

    def unnamed(key: str, choice: Any) -> bool:
        if not isinstance(choice, str) or choice in named:
            return False
        ignored.append(f"{key} ({choice!r}: a backend you never configured)")
        return True

    if unnamed("default_backend", data.get("default_backend")):
        del data["default_backend"]
    backends = data.get("backends")
    if isinstance(backends, Mapping):
        kept: dict[str, Any] = {}
        for name, table in backends.items():
            known = own.backends.get(name)
            if known is None or not isinstance(table, Mapping):
                ignored.append(f"backends.{name}")
                continue
            allowed = {k: v for k, v in table.items() if _may_set(known, k, v)}
            refused = [k for k in table if k not in allowed]
            ignored.extend(_label(f"backends.{name}.{k}", table[k], getattr(known, k)) for k in refused)
            if allowed:
                kept[name] = allowed
        data["backends"] = kept
    refactor = data.get("refactor")
    if isinstance(refactor, Mapping):
        data["refactor"] = dict(refactor)
        for key in sorted(COST_CEILINGS & refactor.keys()):
            value, mine = refactor[key], getattr(own.refactor, key)
            if _raises(key, value, mine):
                ignored.append(_label(f"refactor.{key}", value, mine))
                del data["refactor"][key]
    actions = data.get("actions")
    if isinstance(actions, list):  # a preset that names its backend is held to default_backend's rule
        data["actions"] = [
            {k: v for k, v in preset.items() if k != "backend"}
            if isinstance(preset, Mapping) and unnamed(f"actions[{i}].backend", preset.get("backend"))
            else preset
            for i, preset in enumerate(actions)
        ]
    for key in TRUST_KEYS:
        if key in data:
            ignored.append(key)
            del data[key]
    return Layer(layer.source, data, layer.trusted), WorkspaceFilter(ignored)


def _may_set(known: BackendConfig, key: str, value: Any) -> bool:
    """May an untrusted layer set this key of one of the user's backends to `value`?"""
    own = key not in _USER_ONLY | COST_KEYS or value == getattr(known, key)
    return own or (key == "prediction" and value == "never")


def _raises(key: str, value: Any, mine: float) -> bool:
    """Would `value` raise the user's ceiling `mine`? A value of the wrong type is left to the converter."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if key == "max_tokens" and mine == 0:  # automatic: a fixed cap is lower only up to its minimum
        return value > MIN_AUTO_MAX_TOKENS
    if key == "max_tokens" and value == 0:  # automatic: twice a large region can pass the user's cap
        return True
    return value > mine


def _label(key: str, value: Any, mine: Any) -> str:
    """The ignored key and, for a cost, what it asked against what the user has."""
    if key.endswith(".max_tokens") and mine == 0:
        return f"{key} ({value!r} over {MIN_AUTO_MAX_TOKENS}: yours is automatic, from the region's size)"
    if key.endswith(".max_tokens") and value == 0:
        return f"{key} (0, automatic, over your {mine!r})"
    if key.startswith("refactor.") or key.endswith((".model", ".prediction")):
        return f"{key} ({value!r}, yours is {mine!r})"
    return key


def _named_backends(layer: Layer, config: Config) -> set[str]:
    """The backends a trusted layer names: those it defines, and the default and fallbacks it leaves."""
    backends = layer.data.get("backends")
    defined = set(backends) if isinstance(backends, Mapping) else set()
    fallbacks = {name for backend in config.backends.values() for name in backend.fallback}
    return (defined | fallbacks | {config.default_backend}) & config.backends.keys()


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
    problems: list[str]  # everything to tell, advice included
    advice: tuple[str, ...] = ()  # those of the problems that are advice, not a setting that failed

    @property
    def failures(self) -> list[str]:
        """The problems that mean a setting was not applied as written (what fails `check`)."""
        return [p for p in self.problems if p not in self.advice]


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
    file) are held to `restrict_untrusted` unless the folder is trusted.
    """
    problems: list[str] = []

    def admit(below: _Stack | None, layer: Layer) -> _Stack:
        stack, bad = _admit(below, layer)
        problems.extend(map(str, bad))
        return stack

    stack = admit(None, user)
    # What the user's own channels give: an untrusted layer is measured against it, not against the
    # untrusted layers below it. The built-in default counts as named: it is the user's effective choice.
    own, named = stack.config, _named_backends(user, stack.config)
    folder_trusted = workspace_folder is not None and (
        workspace_trusted_by_editor or is_trusted(workspace_folder, stack.config.trusted_workspaces)
    )
    how_to_trust = (
        f"To trust this folder, add trusted_workspaces = [{str(workspace_folder)!r}] to {user.source}"
        if workspace_folder is not None
        else f"Set them in {user.source} instead"
    )
    may_not = (
        "may not decide where code and keys are sent, choose a backend you did not configure, raise what a "
        "refactor can cost (model, prediction, token and size limits, retries), or set your prices."
    )
    for layer in editor:
        if "trusted_workspaces" in layer.data and (layer.trusted or folder_trusted):
            problems.append(f"{layer.source}: ignored `trusted_workspaces`: only {user.source} can trust a folder")
            data = {k: v for k, v in layer.data.items() if k != "trusted_workspaces"}
            layer = Layer(layer.source, data, layer.trusted)
        if not layer.trusted and not folder_trusted:
            layer, dropped = restrict_untrusted(layer, own, named)
            if dropped.ignored_keys:
                problems.append(
                    f"{layer.source}: ignored {', '.join(dropped.ignored_keys)}: editor settings that a repository "
                    f"can fill (.dir-locals.el, .neoconf.json, project settings) {may_not} Set them in "
                    f"{user.source} or your editor's initializationOptions. {how_to_trust}"
                )
        stack = admit(stack, layer)
        if layer.trusted:
            own, named = stack.config, named | _named_backends(layer, stack.config)
    if workspace_folder is not None:
        path = workspace_folder / WORKSPACE_FILE
        if path.is_file():
            try:
                layer = read_toml(path, trusted=folder_trusted)
            except ConfigError as exc:
                problems.append(str(exc))
            else:
                if not folder_trusted:
                    layer, dropped = restrict_untrusted(layer, own, named)
                    if dropped.ignored_keys:
                        problems.append(
                            f"{path}: ignored {', '.join(dropped.ignored_keys)}: a workspace file {may_not} "
                            f"{how_to_trust}"
                        )
                stack = admit(stack, layer)
    config = stack.config
    advice = tuple(
        f"backends.{backend.name}.base_url sends your code unencrypted over plain http to "
        f"{urlparse(backend.base_url).hostname}; use https:// unless that network is yours"
        for backend in config.backends.values()
        if backend.base_url.startswith("http://") and not is_loopback_url(backend.base_url)
    )
    return LoadedConfig(config, problems + list(advice), advice)


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
