"""Loading the configuration: the layers stacked into one config, each bad setting reported and
skipped; the schema is `schema`, its converter `convert`, the layers `layers`, who may decide what
in `trust`.

Layers, lowest to highest: built-in defaults, the user file, the editor's settings
(``initializationOptions`` then ``workspace/configuration``), and the workspace's own
``.refactor-lsp.toml``. The workspace file arrives with a cloned repository, so it is
untrusted: unless the user trusted the folder, it may not decide where code and keys go, pick a
backend the user never named, or raise what a refactor can cost.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .convert import convert, merge
from .layers import Layer, read_toml
from .schema import BUILTIN_BACKENDS, WORKSPACE_FILE, BackendConfig, Config, ConfigError
from .trust import is_trusted, named_backends, restrict_untrusted, without_user_file_only


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


# What an untrusted layer may not do, in the words of the message that says it was ignored.
_MAY_NOT = (
    "may not decide where code and keys are sent, choose a backend you did not configure, raise what a "
    "refactor can cost (model, prediction, token and size limits, retries), or set your prices."
)


@dataclass(frozen=True)
class _Trust:
    """Who decides: the user's file, whether the folder is trusted, and how the user would trust it."""

    user_source: str
    folder_trusted: bool
    how_to_trust: str

    @property
    def only_yours(self) -> str:
        return f"runs a command, which only {self.user_source} may name"


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
    own, named = stack.config, named_backends(user, stack.config)
    trust = _Trust(
        user.source,
        workspace_folder is not None
        and (workspace_trusted_by_editor or is_trusted(workspace_folder, stack.config.trusted_workspaces)),
        f"To trust this folder, add trusted_workspaces = [{str(workspace_folder)!r}] to {user.source}"
        if workspace_folder is not None
        else f"Set them in {user.source} instead",
    )
    for layer in editor:
        layer = _editor_layer(layer, trust, own, named, problems)
        stack = admit(stack, layer)
        if layer.trusted:
            own, named = stack.config, named | named_backends(layer, stack.config)
    workspace = _workspace_layer(workspace_folder, trust, own, named, problems)
    if workspace is not None:
        stack = admit(stack, workspace)
    advice = _plain_http_advice(stack.config)
    return LoadedConfig(stack.config, problems + list(advice), advice)


def _editor_layer(layer: Layer, trust: _Trust, own: Config, named: set[str], problems: list[str]) -> Layer:
    """Editor settings as far as they may go: no command, no `trusted_workspaces` but from the user's
    file, and what a repository can fill held to `restrict_untrusted` unless the folder is trusted."""
    layer, commands = without_user_file_only(layer)
    if commands:
        problems.append(f"{layer.source}: ignored {', '.join(commands)}: it {trust.only_yours}")
    if "trusted_workspaces" in layer.data and (layer.trusted or trust.folder_trusted):
        problems.append(f"{layer.source}: ignored `trusted_workspaces`: only {trust.user_source} can trust a folder")
        data = {k: v for k, v in layer.data.items() if k != "trusted_workspaces"}
        layer = Layer(layer.source, data, layer.trusted)
    if not layer.trusted and not trust.folder_trusted:
        layer, dropped = restrict_untrusted(layer, own, named)
        if dropped.ignored_keys:
            problems.append(
                f"{layer.source}: ignored {', '.join(dropped.ignored_keys)}: editor settings that a repository "
                f"can fill (.dir-locals.el, .neoconf.json, project settings) {_MAY_NOT} Set them in "
                f"{trust.user_source} or your editor's initializationOptions. {trust.how_to_trust}"
            )
    return layer


def _workspace_layer(
    folder: Path | None, trust: _Trust, own: Config, named: set[str], problems: list[str]
) -> Layer | None:
    """The folder's workspace file, when it has one, as far as it may go (as an untrusted editor layer)."""
    if folder is None:
        return None
    path = folder / WORKSPACE_FILE
    if not path.is_file():
        return None
    try:
        layer = read_toml(path, trusted=trust.folder_trusted)
    except ConfigError as exc:
        problems.append(str(exc))
        return None
    layer, commands = without_user_file_only(layer)
    if commands:
        problems.append(f"{path}: ignored {', '.join(commands)}: it {trust.only_yours}")
    if not trust.folder_trusted:
        layer, dropped = restrict_untrusted(layer, own, named)
        if dropped.ignored_keys:
            problems.append(
                f"{path}: ignored {', '.join(dropped.ignored_keys)}: a workspace file {_MAY_NOT} {trust.how_to_trust}"
            )
    return layer


def _plain_http_advice(config: Config) -> tuple[str, ...]:
    return tuple(
        f"backends.{backend.name}.base_url sends your code unencrypted over plain http to "
        f"{urlparse(backend.base_url).hostname}; use https:// unless that network is yours"
        for backend in config.backends.values()
        if backend.base_url.startswith("http://") and not is_loopback_url(backend.base_url)
    )


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
