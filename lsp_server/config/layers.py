"""Configuration layers: one source of settings each (`Layer`), read from a TOML file (the user's, a
workspace's) or from an editor's settings, snake_cased and with unset values dropped.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .schema import WHOLE_FILE, ConfigError

EDITOR_SOURCE = "editor settings"


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_")


# Tables keyed by a name the user chose, not by a setting: a backend's, an HTTP header's (`X-Api-Key` sent as
# `x_api_key` is another header, one many proxies drop), a languageId (`objective-c`). Kept as written.
_NAMED = ("backends", "headers", "checkers")


def _snake_keys(value: Any) -> Any:
    """Editors send camelCase (VS Code) or snake_case (Neovim); the names in `_NAMED` tables are kept as written."""
    if isinstance(value, Mapping):
        return {
            _snake(k): (
                {name: _snake_keys(b) for name, b in v.items()}
                if _snake(k) in _NAMED and isinstance(v, Mapping)
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
    from ..files.safe_read import ReadRefused, read_regular_file

    try:
        text = read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8")
        return Layer(str(path), tomllib.loads(text), trusted)
    except ReadRefused as exc:
        raise ConfigError(str(path), WHOLE_FILE, f"cannot be read: {exc.reason}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), WHOLE_FILE, f"is not UTF-8 text (byte {exc.start}); save it as UTF-8 (TOML files must be)"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), WHOLE_FILE, f"is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(str(path), WHOLE_FILE, f"cannot be read: {exc.strerror}") from None


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
