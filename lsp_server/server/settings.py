"""Settings per document: the config layers as the server sees them, cached per workspace folder.

Lowest to highest: built-in defaults, the user file, `initializationOptions`, the editor's
`workspace/configuration` (section `refactorLsp`, scoped to the document) and the folder's
`.refactor-lsp.toml`. Code actions read the cache (they must be instant); a refactor refreshes it.

Who may decide where code and keys go: `initializationOptions` come from the user's own editor
config (the VS Code extension, Neovim `setup()`, eglot's `eglot-server-programs`), so they are
trusted. `workspace/configuration` answers may be filled from the repository (eglot reads
`.dir-locals.el`, neoconf `.neoconf.json`), so they are not, unless the client says its answers
cannot carry a repository's choices (`initializationOptions.configurationTrusted`, sent by the VS
Code extension, whose Workspace Trust restricts them) or the folder is trusted. An untrusted layer
may not route code and keys, pick a backend the user never named, or raise what a refactor costs
(`config.trust.restrict_untrusted`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.uris import to_fs_path

from ..config.layers import Layer, editor_layer, user_layer
from ..config.load import LoadedConfig, load_config
from ..config.schema import WORKSPACE_FILE, ConfigError

SECTION = "refactorLsp"


EDITOR_ONLY_KEYS = (
    "workspaceTrusted",
    "workspace_trusted",
    "configurationTrusted",
    "configuration_trusted",
    "progressFields",
    "progress_fields",
)


def settings_section(options: Any) -> Any:
    """Accept `{"refactorLsp": {...}}` or the settings themselves (less the editor's own keys)."""
    if isinstance(options, Mapping) and SECTION in options:
        return options[SECTION]
    if isinstance(options, Mapping):
        return {k: v for k, v in options.items() if k not in EDITOR_ONLY_KEYS}
    return options


@dataclass
class SettingsStore:
    workspace_folders: list[Path] = field(default_factory=list)
    init_options: Any = None
    workspace_trusted_by_editor: bool = False
    configuration_trusted: bool = False  # the client's workspace/configuration answers are the user's alone
    _user: Layer | None = None
    _user_problem: str | None = None
    _editor: dict[str, Any] = field(default_factory=dict)  # folder key → workspace/configuration answer
    _cache: dict[str, tuple[Any, LoadedConfig]] = field(default_factory=dict)
    _reported: set[str] = field(default_factory=set)

    def folder_for(self, uri: str) -> Path | None:
        """The innermost workspace folder holding the document."""
        path = to_fs_path(uri)
        if path is None:
            return None
        target = Path(path)
        best: Path | None = None
        for folder in self.workspace_folders:
            if (folder == target or folder in target.parents) and (best is None or len(str(folder)) > len(str(best))):
                best = folder
        return best

    def user(self) -> Layer:
        if self._user is None:
            try:
                self._user = user_layer()
                self._user_problem = None
            except ConfigError as exc:
                self._user = Layer(str(exc.source), {})
                self._user_problem = str(exc)
        return self._user

    def invalidate(self) -> None:
        """Settings changed (didChangeConfiguration, a config file saved): read everything again."""
        self._user = None
        self._editor.clear()
        self._cache.clear()
        self._reported.clear()

    def set_editor_settings(self, folder: Path | None, settings: Any) -> None:
        self._editor[str(folder)] = settings

    def has_editor_settings(self, folder: Path | None) -> bool:
        return str(folder) in self._editor

    def load(self, folder: Path | None) -> LoadedConfig:
        """The config for a folder; rebuilt only when one of its inputs changed."""
        workspace_file = folder / WORKSPACE_FILE if folder else None
        try:
            stamp = os.stat(workspace_file).st_mtime_ns if workspace_file else None
        except OSError:
            stamp = None
        key = str(folder)
        inputs = (stamp, id(self.user()), repr(self._editor.get(key)), repr(self.init_options))
        cached = self._cache.get(key)
        if cached is not None and cached[0] == inputs:
            return cached[1]
        editor: list[Layer] = []
        problems: list[str] = [self._user_problem] if self._user_problem else []
        for source, value, trusted in (
            ("initializationOptions", settings_section(self.init_options), True),
            ("editor settings", self._editor.get(key), self.configuration_trusted),
        ):
            try:
                editor.append(editor_layer(value, source, trusted=trusted))
            except ConfigError as exc:
                problems.append(str(exc))
        loaded = load_config(self.user(), editor, folder, self.workspace_trusted_by_editor)
        loaded = LoadedConfig(loaded.config, problems + loaded.problems, loaded.advice)
        self._cache[key] = (inputs, loaded)
        return loaded

    def new_problems(self, loaded: LoadedConfig) -> list[str]:
        """Problems not yet shown to the user (each is shown once until settings change)."""
        fresh = [p for p in loaded.problems if p not in self._reported]
        self._reported.update(fresh)
        return fresh
