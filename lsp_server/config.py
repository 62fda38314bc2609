"""Configuration: defaulted dataclasses built from plain dicts by one converter.

Layers, lowest to highest: built-in defaults, the user file, the editor's settings
(``initializationOptions`` then ``workspace/configuration``), and the workspace's own
``.refactor-lsp.toml``. The workspace file arrives with a cloned repository, so it is
untrusted: unless the user trusted the folder, it may not decide where code and keys go.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_type_hints
from urllib.parse import urlparse

T = TypeVar("T")

BackendType = Literal["openai", "vllm", "llamacpp", "openai-compatible"]
PredictionMode = Literal["auto", "always", "never"]
ScopeMode = Literal["auto", "selection", "block", "file"]
LogLevel = Literal["error", "warning", "info", "debug"]

WORKSPACE_FILE = ".refactor-lsp.toml"
EDITOR_SOURCE = "editor settings"


class ConfigError(Exception):
    """One problem in one setting: names the source, the key and what is wrong."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        super().__init__(f"{source}: `{key}` {problem}")


@dataclass(frozen=True)
class BackendConfig:
    name: str = ""
    type: BackendType = "openai-compatible"
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    prediction: PredictionMode = "auto"
    headers: dict[str, str] = field(default_factory=dict)
    fallback: list[str] = field(default_factory=list)
    verify_tls: bool = True
    metrics_url: str = ""


@dataclass(frozen=True)
class RefactorSettings:
    temperature: float = 0.0
    scope: ScopeMode = "auto"
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    first_token_timeout_s: float = 60.0
    idle_timeout_s: float = 30.0
    max_retries: int = 2
    max_tokens: int = 0
    context_chars: int = 60_000
    max_region_chars: int = 100_000
    max_file_chars: int = 2_000_000
    preview: bool = False


@dataclass(frozen=True)
class ActionPreset:
    id: str
    title: str
    instruction: str


BUILTIN_ACTIONS: tuple[ActionPreset, ...] = (
    ActionPreset(
        "type-hints",
        "Add type annotations",
        "Add precise type annotations to every function signature and to variables whose type is not obvious.",
    ),
    ActionPreset(
        "docstrings",
        "Add docstrings",
        "Add a concise docstring or doc comment, in the language's usual style, to every function, method and "
        "class that lacks one. Change nothing else.",
    ),
    ActionPreset(
        "simplify",
        "Simplify",
        "Simplify this code: remove duplication and needless branches and make it easier to read, "
        "without changing its behaviour.",
    ),
)

FIX_DIAGNOSTICS_ID = "fix-diagnostics"
INSTRUCTION_COMMENT_ID = "instruction-comment"


@dataclass(frozen=True)
class Config:
    default_backend: str = "local"
    backends: dict[str, BackendConfig] = field(default_factory=dict)
    refactor: RefactorSettings = field(default_factory=RefactorSettings)
    actions: list[ActionPreset] = field(default_factory=list)
    trusted_workspaces: list[str] = field(default_factory=list)
    log_level: LogLevel = "info"

    def backend(self, name: str | None = None) -> BackendConfig:
        """The backend called `name` (default: `default_backend`), or a ConfigError naming the choices."""
        chosen = name or self.default_backend
        try:
            return self.backends[chosen]
        except KeyError:
            known = ", ".join(sorted(self.backends)) or "none"
            raise ConfigError(
                "configuration",
                "default_backend" if name is None else "backend",
                f"names the unknown backend {chosen!r} (configured backends: {known})",
            ) from None

    def presets(self) -> list[ActionPreset]:
        """Built-in actions, then configured ones; a configured preset replaces a built-in of the same id."""
        configured = {preset.id: preset for preset in self.actions}
        builtins = [configured.pop(p.id, p) for p in BUILTIN_ACTIONS]
        return builtins + list(configured.values())


BUILTIN_BACKENDS: dict[str, dict[str, Any]] = {
    # The local vLLM pair that `make demo` starts: speculative decoding on :8000.
    "local": {
        "type": "vllm",
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "local",
    },
    # The same model without speculative decoding, on :8001: the baseline for `refactor-lsp bench`.
    "local-plain": {
        "type": "vllm",
        "base_url": "http://127.0.0.1:8001/v1",
        "model": "local",
    },
    "openai": {
        "type": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4.1-mini",
        "api_key_env": "OPENAI_API_KEY",
    },
}

# Keys that decide where code and keys are sent. An untrusted workspace file may not set them.
ROUTING_KEYS = frozenset({"base_url", "api_key_env", "headers", "type", "verify_tls", "metrics_url", "fallback"})


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


def _check_value(source: str, key: str, hint: Any, value: Any) -> Any:
    origin = getattr(hint, "__origin__", None)
    if origin is Literal:
        choices = get_args(hint)
        if value not in choices:
            raise ConfigError(source, key, f"must be one of {', '.join(map(repr, choices))}, not {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(source, key, f"must be true or false, not {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(source, key, f"must be a non-negative whole number, not {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ConfigError(source, key, f"must be a non-negative number, not {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(source, key, f"must be a string, not {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(source, key, f"must be a list of strings, not {value!r}")
        return list(value)
    if origin is dict:
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(source, key, f"must be a table of strings, not {value!r}")
        return dict(value)
    raise ConfigError(source, key, "has an unsupported type")  # pragma: no cover - schema bug


def _build(cls: type[T], data: Any, src: Callable[[str], str], prefix: str, **fixed: Any) -> T:
    """Convert one table; `src(key)` names the file or "editor settings" a key came from."""
    if not isinstance(data, Mapping):
        raise ConfigError(src(prefix.rstrip(".")), prefix.rstrip("."), f"must be a table, not {data!r}")
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = dict(fixed)
    for key, value in data.items():
        if key not in names or key in fixed:
            known = ", ".join(sorted(names - fixed.keys()))
            raise ConfigError(src(prefix + key), prefix + key, f"is not a known setting (known: {known})")
        values[key] = _check_value(src(prefix + key), prefix + key, hints[key], value)
    return cls(**values)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; anything else (lists included) is replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


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


def restrict_untrusted(layer: Layer, known_backends: Mapping[str, BackendConfig]) -> tuple[Layer, WorkspaceFilter]:
    """Drop what an untrusted source may not decide: where code and keys are sent, and who is trusted.

    It may pick among the user's backends and change their model and prediction mode, and set
    refactor settings and presets; it may not add backends or change their routing keys. A routing
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
            changes = [k for k, v in table.items() if k in ROUTING_KEYS and getattr(known, k, None) != v]
            ignored.extend(f"backends.{name}.{k}" for k in changes)
            allowed = {k: v for k, v in table.items() if k not in ROUTING_KEYS}
            if allowed:
                kept[name] = allowed
        data["backends"] = kept
    for key in TRUST_KEYS:
        if key in data:
            ignored.append(key)
            del data[key]
    return Layer(layer.source, data, layer.trusted), WorkspaceFilter(ignored)


def build_config(layers: list[Layer]) -> Config:
    """Merge layers (lowest first) and convert. Raises the first ConfigError, naming its source."""
    merged: dict[str, Any] = {"backends": {k: dict(v) for k, v in BUILTIN_BACKENDS.items()}}
    origin: dict[str, str] = {}
    for layer in layers:
        _note_origins(layer, origin)
        merged = _merge(merged, layer.data)
    return _convert(merged, origin)


def _note_origins(layer: Layer, origin: dict[str, str], prefix: str = "") -> None:
    for key, value in layer.data.items():
        origin[prefix + key] = layer.source
        if isinstance(value, Mapping):
            _note_origins(Layer(layer.source, value), origin, f"{prefix}{key}.")


def _convert(data: Mapping[str, Any], origin: Mapping[str, str]) -> Config:
    def src(key: str) -> str:
        return origin.get(key, "configuration")

    known = {f.name for f in dataclasses.fields(Config)}
    for key in data:
        if key not in known:
            raise ConfigError(src(key), key, f"is not a known setting (known: {', '.join(sorted(known))})")

    backends: dict[str, BackendConfig] = {}
    raw_backends = data.get("backends", {})
    if not isinstance(raw_backends, Mapping):
        raise ConfigError(src("backends"), "backends", "must be a table of named backends")
    for name, table in raw_backends.items():
        backend = _build(BackendConfig, table, src, f"backends.{name}.", name=name)
        _validate_backend(backend, src)
        backends[name] = backend

    refactor = _build(RefactorSettings, data.get("refactor", {}), src, "refactor.")

    actions: list[ActionPreset] = []
    raw_actions = data.get("actions", [])
    if not isinstance(raw_actions, list):
        raise ConfigError(src("actions"), "actions", "must be an array of tables ([[actions]])")
    for i, table in enumerate(raw_actions):
        prefix = f"actions[{i}]."
        if not isinstance(table, Mapping):
            raise ConfigError(src("actions"), f"actions[{i}]", "must be a table with id, title and instruction")
        for required in ("id", "title", "instruction"):
            if not isinstance(table.get(required), str) or not table[required].strip():
                raise ConfigError(src("actions"), prefix + required, "is required and must be a non-empty string")
        actions.append(_build(ActionPreset, table, lambda _key: src("actions"), prefix))

    top = {k: data[k] for k in ("default_backend", "trusted_workspaces", "log_level") if k in data}
    config = Config(
        backends=backends,
        refactor=refactor,
        actions=actions,
        **{k: _check_value(src(k), k, get_type_hints(Config)[k], v) for k, v in top.items()},
    )
    if config.default_backend not in backends:
        raise ConfigError(
            src("default_backend"),
            "default_backend",
            f"names the unknown backend {config.default_backend!r} (configured: {', '.join(sorted(backends))})",
        )
    for backend in backends.values():
        for name in backend.fallback:
            if name not in backends or name == backend.name:
                raise ConfigError(
                    src(f"backends.{backend.name}.fallback"),
                    f"backends.{backend.name}.fallback",
                    f"names {name!r}, which is not another configured backend",
                )
    return config


def _validate_backend(backend: BackendConfig, src: Callable[[str], str]) -> None:
    key = f"backends.{backend.name}"
    if not backend.base_url:
        raise ConfigError(src(key), f"{key}.base_url", "is required (for example http://127.0.0.1:8000/v1)")
    if not re.match(r"^https?://[^/\s]+", backend.base_url):
        raise ConfigError(
            src(f"{key}.base_url"),
            f"{key}.base_url",
            f"must be an http:// or https:// URL, not {backend.base_url!r}",
        )
    if not backend.model:
        raise ConfigError(src(key), f"{key}.model", "is required: the model name the server serves")
    if backend.api_key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", backend.api_key_env):
        raise ConfigError(
            src(f"{key}.api_key_env"),
            f"{key}.api_key_env",
            "must be the NAME of an environment variable (like OPENAI_API_KEY), never the key itself",
        )


@dataclass(frozen=True)
class LoadedConfig:
    """A built config plus what the user should hear about how it was built."""

    config: Config
    problems: list[str]


def _without(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`data` less the dotted key (an `actions[i]...` key drops the whole actions list)."""
    head, _, rest = key.partition(".")
    if "[" in head:
        head = head.split("[", 1)[0]
        rest = ""
    out = dict(data)
    if rest and isinstance(out.get(head), Mapping):
        out[head] = _without(out[head], rest)
    else:
        out.pop(head, None)
    return out


def _admit(layers: list[Layer], layer: Layer, problems: list[str]) -> None:
    """Add a layer, less each bad setting in it: one message per bad key, the rest still applies."""
    for _ in range(50):
        try:
            build_config([*layers, layer])
        except ConfigError as exc:
            problems.append(str(exc))
            key = exc.key
            trimmed = _without(layer.data, key)
            while trimmed == layer.data and "." in key:  # a missing required key: drop its table
                key = key.rsplit(".", 1)[0]
                trimmed = _without(layer.data, key)
            if trimmed == layer.data:
                return  # the problem is not in a key we can drop: skip the layer
            layer = Layer(layer.source, trimmed, layer.trusted)
            continue
        layers.append(layer)
        return


def load_config(
    user: Layer,
    editor: list[Layer] = (),  # type: ignore[assignment]
    workspace_folder: Path | None = None,
    workspace_trusted_by_editor: bool = False,
) -> LoadedConfig:
    """Build the effective config. Each bad setting is reported and skipped; the rest still applies.

    Only the user's own file can trust a folder: `trusted_workspaces` anywhere else is ignored.
    Untrusted layers (editor settings a repository can fill, the workspace file) lose their routing
    keys unless the folder is trusted.
    """
    problems: list[str] = []
    layers: list[Layer] = []
    _admit(layers, user, problems)
    trusted_folders = build_config(layers).trusted_workspaces
    folder_trusted = workspace_folder is not None and (
        workspace_trusted_by_editor or is_trusted(workspace_folder, trusted_folders)
    )
    how_to_trust = (
        f"To trust this folder, add trusted_workspaces = [{str(workspace_folder)!r}] to {user.source}"
        if workspace_folder is not None
        else f"Set them in {user.source} instead"
    )
    for layer in editor:
        if "trusted_workspaces" in layer.data and (layer.trusted or folder_trusted):
            problems.append(f"{layer.source}: ignored `trusted_workspaces`: only {user.source} can trust a folder")
            layer = Layer(layer.source, _without(layer.data, "trusted_workspaces"), layer.trusted)
        if not layer.trusted and not folder_trusted:
            layer, dropped = restrict_untrusted(layer, build_config(layers).backends)
            if dropped.ignored_keys:
                problems.append(
                    f"{layer.source}: ignored {', '.join(dropped.ignored_keys)}: editor settings that a repository "
                    "can fill (.dir-locals.el, .neoconf.json, project settings) may not decide where code and keys "
                    f"are sent. Set them in {user.source} or your editor's initializationOptions. {how_to_trust}"
                )
        _admit(layers, layer, problems)
    if workspace_folder is not None:
        path = workspace_folder / WORKSPACE_FILE
        if path.is_file():
            try:
                layer = read_toml(path, trusted=folder_trusted)
            except ConfigError as exc:
                problems.append(str(exc))
            else:
                if not folder_trusted:
                    layer, dropped = restrict_untrusted(layer, build_config(layers).backends)
                    if dropped.ignored_keys:
                        problems.append(
                            f"{path}: ignored {', '.join(dropped.ignored_keys)}: a workspace file may not decide "
                            f"where code and keys are sent. {how_to_trust}"
                        )
                _admit(layers, layer, problems)
    config = build_config(layers)
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
