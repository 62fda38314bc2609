"""The configuration's schema: the settings as typed, defaulted records, the built-in backends and
presets, and which keys decide where code goes or what it costs. `convert` turns plain dicts
into these records; `load.py` stacks the layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

T = TypeVar("T")

BackendType = Literal["openai", "vllm", "llamacpp", "openai-compatible"]
PredictionMode = Literal["auto", "always", "never"]
ScopeMode = Literal["auto", "selection", "block", "file"]
EditFormat = Literal["auto", "region", "hunks"]
# How a `hunks` answer is written: SEARCH/REPLACE blocks, or unified-diff hunks without line numbers.
HunksForm = Literal["search-replace", "diff"]
LogLevel = Literal["error", "warning", "info", "debug"]
# The check before an edit (formats/verify.py): "syntax", no syntax error the code did not have; "off".
VerifyMode = Literal["syntax", "off"]
# How the prediction reached a backend: the `prediction` field, the prompt a server drafts from, or not at all.
PredictionVia = Literal["field", "prompt", "off"]

WORKSPACE_FILE = ".refactor-lsp.toml"


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
    # "auto": the `prediction` field while this backend's recent refactors show it pays (prediction_guard),
    # the region in the prompt for a server that drafts from it; "always": the field every time; "never".
    prediction: PredictionMode = "auto"
    headers: dict[str, str] = field(default_factory=dict)
    fallback: list[str] = field(default_factory=list)
    verify_tls: bool = True
    metrics_url: str = ""
    # Optional prices in your currency (USD by convention) per million tokens, for the cost figures;
    # 0: not set. No built-in price list: it would go stale.
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0


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
    # "region": the model re-emits the region; "hunks": SEARCH/REPLACE blocks of the changes only;
    # "auto": by this backend's measured history, else by the region's size (formats/choice.py).
    edit_format: EditFormat = "auto"
    # 0: by how the backend gets the prediction (edit_format.DEFAULT_HUNKS_MIN_LINES, the crossovers of
    # the calibrated backend profiles in benchmarks/README.md, "Backend profiles").
    hunks_min_lines: int = 0
    # The `hunks` answer's form: "search-replace" (SEARCH/REPLACE blocks, `formats/hunks.py`) or "diff" (unified-diff
    # hunks without line numbers, `formats/hunks_diff.py`: fewer tokens a change). A model that answers in the other
    # form is read in that form.
    hunks_form: HunksForm = "search-replace"
    # A batch (each definition of a selection, a file or files): refactors in flight at once. 4: where
    # the measured aggregate speed with prediction peaked (docs/settings.md says how it was chosen).
    concurrency: int = 4
    # The check before an edit: an answer must bring no syntax error the code did not have (Python's parser,
    # the brackets of the brace languages: scope/syntax.py), or "off".
    verify: VerifyMode = "syntax"
    # Requests that ask the model to fix an answer the check refused, at most (each one more request to the
    # same backend, the broken answer its prediction); 0: refuse it at once.
    repairs: int = 1
    # Your own checker per languageId: a command (no shell) that reads the document on stdin and exits
    # non-zero on an error, run after the check above. Only your user file may name one (config/trust.py).
    checkers: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionPreset:
    id: str
    title: str
    instruction: str
    edit_format: EditFormat | None = None  # None: refactor.edit_format
    # The action's purpose is to delete code: its answers may empty the region or delete most of it,
    # which is refused otherwise (hygiene.refuse_mass_deletion).
    removes_code: bool = False


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
    # Two speculating replicas behind vllm-router (`make vllm-router-up`): the scale-out path. The
    # router's /metrics are its own, so acceptance is read from each answer when vLLM sends it.
    "local-router": {
        "type": "vllm",
        "base_url": "http://127.0.0.1:8010/v1",
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
# `refactor.max_tokens = 0` lets the region's size decide the limit, never below this (pipeline/plan.py,
# `default_max_tokens`): a fixed limit up to it never allows more than the automatic one would.
MIN_AUTO_MAX_TOKENS = 256
