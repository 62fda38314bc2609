"""The docs agree with the code: docs/settings.md is what docs/gen_settings.py writes from the schema,
every setting is described, the VS Code extension's settings (package.json) match the schema, and
every relative link in the docs leads to a file and heading that exist."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.config.layers import _snake

ROOT = Path(__file__).resolve().parents[2]


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_settings", ROOT / "docs" / "gen_settings.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_settings", module)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()

# The extension's own settings (which program runs, LSP tracing): never sent to the server.
CLIENT_SETTINGS = {"refactorLsp.server.command", "refactorLsp.server.args", "refactorLsp.trace.server"}


def test_settings_md_is_what_the_generator_writes() -> None:
    assert gen.OUTPUT.read_text(encoding="utf-8") == gen.render(), "docs/settings.md is stale: run `make docs`"


def test_every_setting_has_one_description_and_every_description_names_a_setting() -> None:
    fields = gen.schema_fields()
    described = [key for doc in gen.DOCS for key in doc.keys]
    assert sorted(set(fields) - set(described)) == [], "schema settings without a description in gen_settings.DOCS"
    assert sorted(set(described) - set(fields)) == [], "descriptions that name no schema setting"
    assert len(described) == len(set(described)), "a setting described twice"
    for doc in gen.DOCS:
        assert doc.text.strip() and doc.example.strip(), doc.keys
        for key in doc.keys:
            _, default, has_default = fields[key]
            if doc.required:  # a required setting's schema default is the empty placeholder
                assert has_default is False or default == "", key


def _json_types(prop: dict[str, Any]) -> set[str]:
    kind = prop.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    return kinds - {"null"}


def _expected_json_type(hint: Any) -> str:
    if gen._choices(hint) is not None:
        return "string"
    origin = getattr(hint, "__origin__", None)
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(hint) or {
        list: "array",
        dict: "object",
    }[origin]


def _vscode_paths(properties: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every server setting package.json declares, by its schema path (top level, refactor.*, items)."""
    out: dict[str, dict[str, Any]] = {}
    for name, prop in properties.items():
        if name in CLIENT_SETTINGS:
            continue
        assert name.startswith("refactorLsp."), name
        path = ".".join(_snake(part) for part in name.removeprefix("refactorLsp.").split("."))
        if path == "backends":
            for key, inner in gen.item_properties(prop).items():
                out[f"backends.<name>.{_snake(key)}"] = inner
        elif path == "actions":
            out["actions"] = prop
            for key, inner in gen.item_properties(prop).items():
                out[f"actions[].{_snake(key)}"] = inner
        else:
            out[path] = prop
    return out


def test_vscode_settings_exist_in_the_schema_with_its_types_and_defaults() -> None:
    fields = gen.schema_fields()
    declared = _vscode_paths(gen.vscode_properties())
    assert declared, "no settings found in package.json"
    problems = []
    for path, prop in declared.items():
        if path == "backends":
            continue
        if path not in fields:
            problems.append(f"{path}: declared in package.json, not in the schema")
            continue
        hint, default, has_default = fields[path]
        kinds = _json_types(prop)
        if kinds != {_expected_json_type(hint)}:
            problems.append(f"{path}: package.json type {sorted(kinds)}, schema {hint!r}")
        choices = gen._choices(hint)
        if "enum" in prop or choices is not None:
            enum = [v for v in prop.get("enum", []) if v is not None]
            if sorted(enum) != sorted(choices or ()):
                problems.append(f"{path}: package.json enum {enum}, schema {choices}")
        if prop.get("default") is not None and has_default and prop["default"] != default:
            problems.append(f"{path}: package.json default {prop['default']!r}, schema {default!r}")
        # "Unset: `120`." in a description states the server's default: it must be the schema's.
        unset = re.search(r"Unset: `([^`]*)`\.\s*$", prop.get("markdownDescription", ""))
        if unset and has_default and unset.group(1) != gen.toml(default).strip('"'):
            problems.append(f"{path}: package.json says the default is {unset.group(1)!r}, schema {default!r}")
    assert problems == [], "\n".join(problems)


def test_every_schema_setting_is_in_vscode_or_listed_as_absent_with_a_reason() -> None:
    fields = gen.schema_fields()
    declared = _vscode_paths(gen.vscode_properties())
    absent = {**gen.VSCODE_ABSENT, **gen.VSCODE_NOT_YET}
    assert all(reason.strip() for reason in absent.values())
    missing = sorted(path for path in fields if path not in declared and path not in absent)
    assert missing == [], "declare these in editors/vscode/package.json, or list them in gen_settings.VSCODE_ABSENT"
    listed_but_declared = sorted(path for path in absent if path in declared)
    assert listed_but_declared == [], "package.json declares these now: drop them from the absent lists"
    assert sorted(path for path in absent if path not in fields) == []


# -- links --------------------------------------------------------------------------------------------

DOC_FILES = [
    ROOT / "README.md",
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "benchmarks" / "recorded").glob("*.md")),
]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def test_slug_is_githubs() -> None:
    assert slug("Trust: who may decide where your code goes") == "trust-who-may-decide-where-your-code-goes"
    assert slug("`refactor.max_tokens`") == "refactormax_tokens"
    assert slug("Edit formats: `--edit-format`") == "edit-formats---edit-format"


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such heading")
    assert broken == [], f"{doc.relative_to(ROOT)}: broken links"
