"""The configuration's one converter: plain, snake_cased dicts in, a `Config` (`schema`) out.

`convert` walks one layer merged over the valid layers below it, once. It reports every bad key
(`ConfigError(source, key, problem)` names where it came from) and drops it from the layer, so the
value below it applies instead; the rest of the layer still applies. Where the layers come from,
and which of them may decide what, is `load.py`'s business.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeVar, get_args, get_type_hints

from .schema import (
    ActionPreset,
    BackendConfig,
    Config,
    ConfigError,
    EditFormat,
    RefactorSettings,
)

T = TypeVar("T")
_SURROGATE = re.compile("[\ud800-\udfff]")


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; anything else (lists included) is replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class Converted:
    """One layer converted over the layers below it."""

    config: Config
    kept: dict[str, Any]  # the layer less its bad keys: merged over the layers below, it makes `config`
    problems: list[ConfigError]


def convert(below: Mapping[str, Any], layer: Mapping[str, Any], source: Callable[[str], str]) -> Converted:
    """Convert `layer` merged over `below` (the valid, merged layers under it) in one walk.

    Settings are checked in a fixed order: unknown top-level keys, backends, `refactor`, `actions`,
    the top-level values, then the names that `default_backend` and `fallback` refer to. Each bad
    key is reported and dropped from the layer (the value below applies); a backend missing a
    required key loses its table, and any problem in `actions` drops the layer's whole list.
    `source(key)` names the file or "editor settings" a dotted key came from.
    """
    return _Walk(below, layer, source).run()


_MISSING: Any = object()


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _tables_copied(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _tables_copied(v) if isinstance(v, Mapping) else v for k, v in data.items()}


class _Walk:
    def __init__(self, below: Mapping[str, Any], layer: Mapping[str, Any], source: Callable[[str], str]) -> None:
        self.below = below
        self.layer = _tables_copied(layer)  # bad keys are deleted from this copy
        self.source = source
        self.problems: list[ConfigError] = []

    def value(self, path: tuple[str, ...]) -> Any:
        """The merged value at `path`, or _MISSING."""
        low, high = _dig(self.below, path), _dig(self.layer, path)
        if high is _MISSING:
            return low
        if isinstance(high, Mapping) and isinstance(low, Mapping):
            return merge(low, high)
        return high

    def reject(self, problem: ConfigError, path: tuple[str, ...]) -> bool:
        """Report `problem` and drop the innermost part of `path` the layer sets (False: it sets none)."""
        self.problems.append(problem)
        for depth in range(len(path), 0, -1):
            table = _dig(self.layer, path[: depth - 1])
            if isinstance(table, dict) and path[depth - 1] in table:
                del table[path[depth - 1]]
                return True
        return False

    def checked(self, path: tuple[str, ...], check: Callable[[Any], T]) -> T:
        """`check` the value at `path`; a refused value is reported and dropped, and the one below it checked."""
        while (value := self.value(path)) is not _MISSING:
            try:
                return check(value)
            except ConfigError as problem:
                if not self.reject(problem, path):
                    break
        return _MISSING

    def fields(self, cls: type, path: tuple[str, ...], **fixed: Any) -> dict[str, Any] | None:
        """The checked values of the table at `path` for `cls`, less its bad keys; None when there is none."""
        prefix = ".".join(path) + "."
        data = self.checked(path, partial(_table, self.source(".".join(path)), ".".join(path)))
        if data is _MISSING:
            return None
        hints = get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}
        values = dict(fixed)
        for key in list(data):  # the layer's own table, perhaps: rejecting a key deletes it
            dotted = prefix + key
            if key not in names or key in fixed:
                known = ", ".join(sorted(names - fixed.keys()))
                problem = ConfigError(self.source(dotted), dotted, f"is not a known setting (known: {known})")
                self.reject(problem, (*path, key))
                continue
            value = self.checked((*path, key), partial(_check_value, self.source(dotted), dotted, hints[key]))
            if value is not _MISSING:
                values[key] = value
        return values

    def backend(self, name: str) -> BackendConfig | None:
        path = ("backends", name)
        while (values := self.fields(BackendConfig, path, name=name)) is not None:
            backend = BackendConfig(**values)
            try:
                _validate_backend(backend, self.source)
                return backend
            except ConfigError as problem:  # a dropped key falls back to the value below, checked again
                if not self.reject(problem, (*path, problem.key.removeprefix(f"backends.{name}."))):
                    return None
        return None

    def run(self) -> Converted:
        known = {f.name for f in dataclasses.fields(Config)}
        for key in list(self.value(())):
            if key not in known:
                problem = f"is not a known setting (known: {', '.join(sorted(known))})"
                self.reject(ConfigError(self.source(key), key, problem), (key,))

        named = self.checked(("backends",), partial(_named_tables, self.source("backends")))
        backends = {}
        for name in [] if named is _MISSING else list(named):
            if (backend := self.backend(name)) is not None:
                backends[name] = backend

        refactor = RefactorSettings(**(self.fields(RefactorSettings, ("refactor",)) or {}))
        actions = self.checked(("actions",), partial(_actions, self.source("actions")))

        hints = get_type_hints(Config)
        top: dict[str, Any] = {}
        for key in ("default_backend", "trusted_workspaces", "log_level"):
            value = self.checked((key,), partial(_check_value, self.source(key), key, hints[key]))
            if value is not _MISSING:
                top[key] = value
        if "default_backend" in top:
            top["default_backend"] = self.checked(
                ("default_backend",), partial(_known_backend, self.source("default_backend"), backends)
            )
        for name, backend in backends.items():
            source = self.source(f"backends.{name}.fallback")
            fallback = self.checked(("backends", name, "fallback"), partial(_others, source, name, backends))
            fallback = [] if fallback is _MISSING else list(fallback)
            if fallback != backend.fallback:
                backends[name] = dataclasses.replace(backend, fallback=fallback)
        config = Config(
            backends=backends,
            refactor=refactor,
            actions=[] if actions is _MISSING else actions,
            **{k: v for k, v in top.items() if v is not _MISSING},
        )
        return Converted(config, self.layer, self.problems)


# Checks: each returns the converted value or raises the ConfigError that names the key.


def _table(source: str, key: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(source, key, f"must be a table, not {value!r}")
    return value


def _named_tables(source: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(source, "backends", "must be a table of named backends")
    return value


def _check_value(source: str, key: str, hint: Any, value: Any) -> Any:
    _unicode(source, key, value)
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
    if origin is dict and get_args(hint)[1] is not str:  # a command per languageId (`refactor.checkers`)
        if not isinstance(value, Mapping) or not all(_command(v) for v in value.values()):
            raise ConfigError(
                source, key, f"must be a table of commands (lists of strings, the program first), not {value!r}"
            )
        return {name: list(argv) for name, argv in value.items()}
    if origin is dict:  # its values are not quoted: a header's may be a secret
        if not isinstance(value, Mapping):
            raise ConfigError(source, key, f"must be a table of strings, not {type(value).__name__}")
        wrong = next((name for name, v in value.items() if not isinstance(v, str)), None)
        if wrong is not None:
            raise ConfigError(source, key, f"must be a table of strings ({wrong!r} is {type(value[wrong]).__name__})")
        return dict(value)
    raise ConfigError(source, key, "has an unsupported type")  # pragma: no cover - schema bug


def _unicode(source: str, key: str, value: Any) -> None:
    """Refuse text that is not Unicode: the editor's settings are JSON, which can carry a lone surrogate
    (`"\\udcff"`), and a setting holding one (a preset's instruction, a model, a header) failed every
    request it went into, as an internal error when the request was encoded."""
    texts = [value] if isinstance(value, str) else []
    if isinstance(value, list):
        texts = [v for v in value if isinstance(v, str)]
    elif isinstance(value, Mapping):
        texts = [t for pair in value.items() for t in pair if isinstance(t, str)]
    for text in texts:
        found = _SURROGATE.search(text)
        if found is not None:
            problem = f"holds text that is not Unicode (a lone surrogate, U+{ord(found.group()):04X})"
            raise ConfigError(source, key, problem)


def _command(value: Any) -> bool:
    """A program and its arguments: a non-empty list of strings whose first names the program."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value) and bool(value[0].strip())


def _actions(source: str, value: Any) -> list[ActionPreset]:
    """The configured presets; the first problem in them is raised (and drops the whole list)."""
    if not isinstance(value, list):
        raise ConfigError(source, "actions", "must be an array of tables ([[actions]])")
    names = {f.name for f in dataclasses.fields(ActionPreset)}
    presets = []
    for i, table in enumerate(value):
        if not isinstance(table, Mapping):
            raise ConfigError(source, f"actions[{i}]", "must be a table with id, title and instruction")
        for key in ("id", "title", "instruction"):
            if not isinstance(table.get(key), str) or not table[key].strip():
                raise ConfigError(source, f"actions[{i}].{key}", "is required and must be a non-empty string")
            _unicode(source, f"actions[{i}].{key}", table[key])
        for key in table:
            if key not in names:
                known = ", ".join(sorted(names))
                raise ConfigError(source, f"actions[{i}].{key}", f"is not a known setting (known: {known})")
        if "edit_format" in table:
            _check_value(source, f"actions[{i}].edit_format", EditFormat, table["edit_format"])
        if "removes_code" in table:  # `removes_code = "no"` would read as true: a wrong type is refused
            _check_value(source, f"actions[{i}].removes_code", bool, table["removes_code"])
        presets.append(ActionPreset(**table))
    return presets


def _validate_backend(backend: BackendConfig, source: Callable[[str], str]) -> None:
    key = f"backends.{backend.name}"
    if not backend.base_url:
        raise ConfigError(source(key), f"{key}.base_url", "is required (for example http://127.0.0.1:8000/v1)")
    if not re.match(r"^https?://[^/\s]+", backend.base_url):
        raise ConfigError(
            source(f"{key}.base_url"),
            f"{key}.base_url",
            f"must be an http:// or https:// URL, not {backend.base_url!r}",
        )
    if not backend.model:
        raise ConfigError(source(key), f"{key}.model", "is required: the model name the server serves")
    _check_headers(backend.headers, key, source)
    if backend.api_key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", backend.api_key_env):
        raise ConfigError(
            source(f"{key}.api_key_env"),
            f"{key}.api_key_env",
            "must be the NAME of an environment variable (like OPENAI_API_KEY), never the key itself",
        )


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110's token
_NOT_IN_A_HEADER_VALUE = re.compile(r"[^\t\x20-\x7e]")  # what HTTP/1.1 cannot carry as we send it: ASCII


def _check_headers(headers: Mapping[str, str], key: str, source: Callable[[str], str]) -> None:
    """Each header one HTTP can send: a name that is a token, a value of printable ASCII. A value is
    never quoted (it may be a secret), only where its first character HTTP cannot send is; such a
    header failed every request as an internal error, or (a line break) was refused by the wire."""
    for name, value in headers.items():
        where = f"{key}.headers"
        if not _HEADER_NAME.fullmatch(name):
            # Quoted only up to where it goes wrong: a pasted `Authorization: Bearer sk-...` is no name.
            if not name:
                raise ConfigError(source(where), where, "has an empty header name")
            valid = _HEADER_NAME.match(name)
            good = len(valid.group()) if valid else 0  # < len(name): it is no name
            shown = repr(name[:good]) if good <= 40 else repr(name[:40])[:-1] + "…'"
            char = f"U+{ord(name[good]):04X}"
            raise ConfigError(
                source(where),
                where,
                f"has a header name HTTP cannot send ({char} at position {good + 1}, after {shown})",
            )
        found = _NOT_IN_A_HEADER_VALUE.search(value)
        if found is not None:
            char = f"U+{ord(found.group()):04X}"
            raise ConfigError(
                source(where),
                f"{where}.{name}",
                f"holds a character HTTP cannot send in a header ({char} at position {found.start() + 1}); "
                "a header's value is printable ASCII",
            )


def _known_backend(source: str, backends: Mapping[str, BackendConfig], name: str) -> str:
    if name not in backends:
        configured = ", ".join(sorted(backends))
        raise ConfigError(source, "default_backend", f"names the unknown backend {name!r} (configured: {configured})")
    return name


def _others(source: str, own: str, backends: Mapping[str, BackendConfig], names: list[str]) -> list[str]:
    for name in names:
        if name not in backends or name == own:
            key = f"backends.{own}.fallback"
            raise ConfigError(source, key, f"names {name!r}, which is not another configured backend")
    return names
