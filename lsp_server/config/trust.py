"""Who may decide what: a folder the user trusts, and what an untrusted layer (a workspace file, editor
settings a repository can fill) may not set: where code and keys go, which backend serves them, what
a refactor can cost, the user's prices, and who is trusted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .layers import Layer
from .schema import (
    APPLY_ID,
    BUILTIN_ACTIONS,
    FIX_DIAGNOSTICS_ID,
    INSTRUCTION_COMMENT_ID,
    MIN_AUTO_MAX_TOKENS,
    BackendConfig,
    Config,
    ConfigError,
)

# Keys that decide where code and keys are sent. An untrusted workspace file may not set them.
ROUTING_KEYS = frozenset({"base_url", "api_key_env", "headers", "type", "verify_tls", "metrics_url", "fallback"})
# The user's prices: a repository's file setting them would make every cost figure say what it likes.
PRICE_KEYS = frozenset({"price_input_per_mtok", "price_output_per_mtok"})
# A backend's keys that decide what a refactor costs: another model is another price, and a prediction
# costs tokens (OpenAI bills the rejected ones as output, a local server reads it as prompt). An
# untrusted layer may set only the user's own value, or `prediction = "never"`, which costs nothing.
COST_KEYS = frozenset({"model", "prediction"})
# `refactor`'s ceilings on what one refactor sends and may be billed for: tokens out, characters in,
# attempts. An untrusted layer may only lower them. The timeouts are not among them: a longer wait sends
# nothing more, and what a slow answer is billed for is still capped by these.
# `concurrency` is not a cost but a load on the user's backend (and its rate limit): lowered only, too.
# `repairs` are requests too.
COST_CEILINGS = frozenset(
    {"max_tokens", "context_chars", "max_region_chars", "max_file_chars", "max_retries", "concurrency", "repairs"}
)
# Settings only the user's own file may set: a command it names runs with the user's rights (a repository's
# file or editor settings, trusted or not, are written by someone else).
USER_FILE_ONLY = frozenset({"checkers"})

# The server's own actions: an untrusted layer may add presets, never redefine one of these.
BUILTIN_ACTION_IDS = frozenset({p.id for p in BUILTIN_ACTIONS} | {FIX_DIAGNOSTICS_ID, INSTRUCTION_COMMENT_ID, APPLY_ID})


def is_trusted(folder: Path, trusted: list[str]) -> bool:
    """Is `folder` one the user named? Exactly that folder: a folder below it (a submodule, a vendored
    dependency, a cloned example) may carry its own `.refactor-lsp.toml`, written by someone else."""
    folder = folder.resolve()
    return any(folder == Path(entry).expanduser().resolve() for entry in trusted)


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
        if refactor.get("verify") == "off" and own.refactor.verify != "off":
            # The check keeps broken code out of the user's files: a repository may turn it on, not off.
            ignored.append(_label("refactor.verify", refactor["verify"], own.refactor.verify))
            del data["refactor"]["verify"]
    actions = data.get("actions")
    if isinstance(actions, list) and _well_formed(layer.source, actions):  # else the converter drops it whole
        # Presets added to the user's own, never in place of one.
        added = [_added_preset(i, preset, own, ignored) for i, preset in enumerate(actions)]
        # A preset that names its backend is held to default_backend's rule.
        added = [
            {k: v for k, v in preset.items() if k != "backend"}
            if isinstance(preset, Mapping) and unnamed(f"actions[{i}].backend", preset.get("backend"))
            else preset
            for i, preset in enumerate(added)
        ]
        yours = [{k: v for k, v in asdict(preset).items() if v is not None} for preset in own.actions]
        data["actions"] = yours + [preset for preset in added if preset is not None]
    for key in TRUST_KEYS:
        if key in data:
            ignored.append(key)
            del data[key]
    return Layer(layer.source, data, layer.trusted), WorkspaceFilter(ignored)


def without_user_file_only(layer: Layer) -> tuple[Layer, list[str]]:
    """`layer` less the settings only the user's own file may set (`USER_FILE_ONLY`: a command to run),
    and the keys it dropped: for every layer but that file, trusted or not."""
    refactor = layer.data.get("refactor")
    if not isinstance(refactor, Mapping) or not USER_FILE_ONLY & refactor.keys():
        return layer, []
    dropped = sorted(USER_FILE_ONLY & refactor.keys())
    data = {**layer.data, "refactor": {k: v for k, v in refactor.items() if k not in USER_FILE_ONLY}}
    return Layer(layer.source, data, layer.trusted), [f"refactor.{key}" for key in dropped]


def _well_formed(source: str, actions: list[Any]) -> bool:
    """Would the converter take this list of presets? (It drops a list with any problem whole, naming it.)"""
    from .convert import _actions

    try:
        _actions(
            source, [{k: v for k, v in p.items() if k != "backend"} if isinstance(p, Mapping) else p for p in actions]
        )
    except ConfigError:
        return False
    return True


def _added_preset(i: int, preset: Mapping[str, Any], own: Config, ignored: list[str]) -> Mapping[str, Any] | None:
    """An untrusted preset as it may be added: None when it would replace a built-in action or one of
    the user's (its instruction would go to the backend under their title), without `removes_code`
    (which turns off the guard against answers that delete the code). `preset` is well formed (`_well_formed`)."""
    preset_id = preset.get("id")
    yours = {p.id for p in own.actions}
    if preset_id in BUILTIN_ACTION_IDS or preset_id in yours:
        whose = "a built-in action" if preset_id in BUILTIN_ACTION_IDS else "an action of yours"
        ignored.append(f"actions[{i}] ({preset_id!r}: replaces {whose})")
        return None
    if preset.get("removes_code", False) is not False:
        ignored.append(f"actions[{i}].removes_code (turns off the guard against deleting code)")
        return {k: v for k, v in preset.items() if k != "removes_code"}
    return preset


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


def named_backends(layer: Layer, config: Config) -> set[str]:
    """The backends a trusted layer names: those it defines, and the default and fallbacks it leaves."""
    backends = layer.data.get("backends")
    defined = set(backends) if isinstance(backends, Mapping) else set()
    fallbacks = {name for backend in config.backends.values() for name in backend.fallback}
    return (defined | fallbacks | {config.default_backend}) & config.backends.keys()
