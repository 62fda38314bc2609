"""Writes docs/settings.md and the VS Code extension's settings (`contributes.configuration` in
editors/vscode/package.json) from the schema, `lsp_server/config/schema.py`: each setting's name,
type, choices and default from its field, what it does from its docstring (the schema's module
docstring says how one is written).

    python docs/gen_settings.py           # (re)write both; also `make docs`
    python docs/gen_settings.py --check   # exit 1 when either is not what this writes

The extension's own settings (`refactorLsp.server.*`, `refactorLsp.trace.*`: which program runs, LSP
tracing) never reach the server: they are written in package.json, and kept as they are there.
`tests/unit/test_settings_docs.py` fails when a file is stale. Not part of the package.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lsp_server.config.schema import BUILTIN_ACTIONS, BUILTIN_BACKENDS, Config  # noqa: E402

SCHEMA = ROOT / "lsp_server" / "config" / "schema.py"
OUTPUT = ROOT / "docs" / "settings.md"
PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"
VSCODE_SECTION = "refactorLsp"
# The extension's own settings, kept as package.json has them.
EXTENSION_OWN = (f"{VSCODE_SECTION}.server.", f"{VSCODE_SECTION}.trace.")
# The lines of a docstring's last paragraph (the schema's module docstring says what each means).
TAGS = (
    "Example",
    "Default means",
    "Required",
    "Documented with",
    "VS Code",
    "VS Code unset",
    "VS Code minimum",
    "Not in VS Code",
)


@dataclass(frozen=True)
class Setting:
    """One setting of the schema, with what its docstring says."""

    path: str  # where it is in the file: `log_level`, `refactor.scope`, `backends.<name>.type`, `actions[].id`
    hint: Any
    default: Any
    has_default: bool
    text: str  # the docstring's prose, a paragraph a line
    tags: dict[str, str]

    @property
    def key(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def item(self) -> type | None:
        """The record each entry is, for a table (`backends`) or an array (`actions`) of records."""
        args = get_args(self.hint)
        return args[-1] if args and dataclasses.is_dataclass(args[-1]) else None


# -- the schema ---------------------------------------------------------------------------------------


def attribute_docs() -> dict[str, dict[str, str]]:
    """The docstring under each field of the schema's classes, by class and field name."""
    tree = ast.parse(SCHEMA.read_text(encoding="utf-8"))
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs = out.setdefault(node.name, {})
        for target, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(target, ast.AnnAssign)
                and isinstance(target.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[target.target.id] = inspect.cleandoc(after.value.value)
    return out


def parse_doc(path: str, doc: str) -> tuple[str, dict[str, str]]:
    """A docstring's prose (each paragraph on one line) and the tags of its last paragraph."""
    paragraphs = doc.split("\n\n")
    tags: dict[str, str] = {}
    if paragraphs and paragraphs[-1].split(":", 1)[0] in TAGS:
        tag = ""
        for line in paragraphs.pop().splitlines():
            if line.startswith(" ") and tag:
                tags[tag] += " " + line.strip()
                continue
            tag, colon, value = line.partition(":")
            if tag not in TAGS or not colon or tag in tags:
                raise ValueError(f"{path}: {line!r} in the docstring's last paragraph is not one of {TAGS}, once")
            tags[tag] = value.strip()
    text = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    return text, tags


def settings() -> list[Setting]:
    """Every setting of the schema, in its order: a record's fields in place of the record."""
    docs = attribute_docs()
    out: list[Setting] = []

    def walk(cls: type, prefix: str) -> None:
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            path, hint = prefix + f.name, hints[f.name]
            doc = docs[cls.__name__].get(f.name, "")
            if doc.startswith("Not a setting:"):
                continue
            if dataclasses.is_dataclass(hint):  # `[refactor]`: its fields are the settings
                walk(hint, path + ".")
                continue
            text, tags = parse_doc(path, doc)
            if f.default is not dataclasses.MISSING:
                default, has_default = f.default, True
            elif f.default_factory is not dataclasses.MISSING:
                default, has_default = f.default_factory(), True
            else:
                default, has_default = None, False
            setting = Setting(path, hint, default, has_default, text, tags)
            out.append(setting)
            if setting.item is not None:
                walk(setting.item, path + (".<name>." if get_origin(hint) is dict else "[]."))

    walk(Config, "")
    return out


def is_table_of_records(setting: Setting) -> bool:
    """`backends`: its fields are documented, the table itself in the page's introduction."""
    return setting.item is not None and get_origin(setting.hint) is dict


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
    if get_origin(hint) is list and dataclasses.is_dataclass(args[0]):
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


def json_schema(hint: Any, items: dict[str, Any] | None = None) -> dict[str, Any]:
    """A setting's JSON schema type; `items`: the record's properties, for a table or an array of them."""
    choices = _choices(hint)
    if choices is not None:
        return {"type": "string", "enum": list(choices)}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    inner = items or json_schema(get_args(hint)[-1])
    if get_origin(hint) is list:
        return {"type": "array", "items": inner}
    if get_origin(hint) is dict:
        return {"type": "object", "additionalProperties": inner}
    raise ValueError(f"no JSON schema for the type {hint!r}")


def vscode_item(record: type, prefix: str, by_path: dict[str, Setting]) -> dict[str, Any]:
    """The schema of one entry of `backends` or `actions`: its declared keys, which ones are required."""
    out: dict[str, Any] = {"type": "object"}
    keys = [s for path, s in by_path.items() if path.startswith(prefix) and "Not in VS Code" not in s.tags]
    required = [camel(s.key) for s in keys if not s.has_default]
    if required:
        out["required"] = required
    out["properties"] = {}
    for s in keys:
        prop = json_schema(s.hint)
        if "VS Code" in s.tags:
            prop["description"] = s.tags["VS Code"]
        out["properties"][camel(s.key)] = prop
    return out


def vscode_properties(all_settings: list[Setting]) -> dict[str, Any]:
    """package.json's declaration of every server setting: each may be unset (null: the server decides)."""
    by_path = {s.path: s for s in all_settings}
    out: dict[str, Any] = {}
    for s in all_settings:
        name, inner = vscode_name(s.path)
        if inner is not None or "Not in VS Code" in s.tags:
            continue
        if "VS Code" not in s.tags:
            raise ValueError(f"{s.path}: no `VS Code:` text in its docstring (or `Not in VS Code:`, and why)")
        items = None
        if s.item is not None:
            items = vscode_item(s.item, s.path + (".<name>." if is_table_of_records(s) else "[]."), by_path)
        bare = json_schema(s.hint, items)
        prop: dict[str, Any] = {"type": [bare.pop("type"), "null"]}
        if "enum" in bare:
            prop["enum"] = [None, *bare.pop("enum")]
        prop["default"] = None
        if prop["type"][0] in ("number", "integer"):
            prop["minimum"] = int(s.tags.get("VS Code minimum", "0"))
        prop["scope"] = "resource"
        description = s.tags["VS Code"]
        if s.item is None:
            unset = s.tags.get("VS Code unset") or f"`{toml(s.default).strip(chr(34))}`."
            description += f" Unset: {unset}"
        prop["markdownDescription"] = description
        out[name] = prop | bare
    return out


def package_json(all_settings: list[Setting]) -> str:
    """package.json with the server's settings written from the schema, the extension's own kept in place."""
    manifest = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    configuration = manifest["contributes"]["configuration"]
    generated = vscode_properties(all_settings)
    properties: dict[str, Any] = {}
    for name, prop in configuration["properties"].items():
        if name.startswith(EXTENSION_OWN):
            properties[name] = prop
        elif generated:  # the server's settings go where the first of them was
            properties.update(generated)
            generated = {}
    configuration["properties"] = properties | generated
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def vscode_line(setting: Setting) -> str:
    if "Not in VS Code" in setting.tags:
        return f"not declared, on purpose: {setting.tags['Not in VS Code']}"
    name, inner = vscode_name(setting.path)
    return f"`{name}`" + (f", key `{inner}`" if inner else "")


# -- the page -----------------------------------------------------------------------------------------

INTRO = """\
# Settings

<!-- Generated by docs/gen_settings.py from lsp_server/config/schema.py: edit the schema, then run `make docs`. -->

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


def headings(all_settings: list[Setting]) -> list[list[Setting]]:
    """The settings under each heading: one, or a pair documented together."""
    out: list[list[Setting]] = []
    for s in all_settings:
        if is_table_of_records(s):
            continue
        if "Documented with" in s.tags:
            if not out or out[-1][-1].key != s.tags["Documented with"]:
                raise ValueError(
                    f"{s.path}: `Documented with:` names {s.tags['Documented with']!r}, not the setting above"
                )
            out[-1].append(s)
        else:
            out.append([s])
    return out


def facts(setting: Setting) -> str:
    """Type · default · the name a VS Code user sets it by."""
    out = [describe_type(setting.hint)]
    note = f" ({setting.tags['Default means']})" if "Default means" in setting.tags else ""
    if setting.tags.get("Required") == "yes" or not setting.has_default:
        out.append("required")
    elif setting.path == "actions":
        builtins = ", ".join(f"`{a.id}` ({a.title})" for a in BUILTIN_ACTIONS)
        out.append(f"default: the built-ins, {builtins}")
    elif setting.default is None:
        out.append(f"default unset{note}")
    else:
        out.append(f"default `{toml(setting.default)}`{note}")
    out.append("VS Code: " + vscode_line(setting))
    return " · ".join(out)


def render(all_settings: list[Setting]) -> str:
    parts = [INTRO, builtin_backends(), "\n## Every setting\n"]
    for group in headings(all_settings):
        first = group[0]
        parts.append("\n### " + ", ".join(f"`{s.path}`" for s in group) + "\n\n")
        for s in group:
            line = facts(s)
            parts.append(f"- `{s.key}`: {line}.\n" if len(group) > 1 else f"{line[0].upper()}{line[1:]}.\n")
        example = first.tags["Example"]
        example = example if example.startswith(("see ", "`")) else f"`{example}`"
        parts.append(f"\n{first.text}\n\nExample: {example}.\n")
    return "".join(parts)


def outputs() -> dict[Path, str]:
    """What this writes: each file and its text."""
    all_settings = settings()
    return {OUTPUT: render(all_settings), PACKAGE_JSON: package_json(all_settings)}


def main(argv: list[str]) -> int:
    written = outputs()
    if "--check" in argv:
        stale = [path for path, text in written.items() if path.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run `make docs`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
