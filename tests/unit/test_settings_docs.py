"""The docs agree with the code: docs/settings.md and the VS Code extension's settings (package.json) are
what docs/gen_settings.py writes from the schema, every setting is described there once, and every
relative link in the docs leads to a file and heading that exist."""

from __future__ import annotations

import importlib.util
import json
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
SETTINGS = gen.settings()
BY_PATH = {s.path: s for s in SETTINGS}


@pytest.mark.parametrize("path", [gen.OUTPUT, gen.PACKAGE_JSON], ids=lambda p: p.name)
def test_generated_files_are_what_the_generator_writes(path: Path) -> None:
    assert path.read_text(encoding="utf-8") == gen.outputs()[path], f"{path.name} is stale: run `make docs`"


def test_every_setting_is_described_with_an_example() -> None:
    assert "refactor.scope" in BY_PATH and "backends.<name>.base_url" in BY_PATH and "actions[].id" in BY_PATH
    assert "backends.<name>.name" not in BY_PATH, "a table's own name is not a setting"
    headed = gen.headings(SETTINGS)
    assert [s.path for group in headed for s in group] == [s.path for s in SETTINGS if not gen.is_table_of_records(s)]
    for group in headed:
        assert group[0].text.strip() and group[0].tags.get("Example", "").strip(), group[0].path
        for s in group[1:]:
            assert not s.text and "Example" not in s.tags, f"{s.path}: documented with {group[0].path}"
    for s in SETTINGS:
        if s.tags.get("Required") == "yes":  # a required setting's schema default is the empty placeholder
            assert s.has_default is False or s.default == "", s.path


def test_a_docstrings_last_paragraph_holds_only_known_tags() -> None:
    text, tags = gen.parse_doc("x", "What it does,\nin two lines.\n\nExample: x = 1\nVS Code: Short\n    and long.")
    assert text == "What it does, in two lines."
    assert tags == {"Example": "x = 1", "VS Code": "Short and long."}
    with pytest.raises(ValueError, match="Exampel"):
        gen.parse_doc("x", "What it does.\n\nExample: x = 1\nExampel: x = 2")
    with pytest.raises(ValueError, match="once"):
        gen.parse_doc("x", "What it does.\n\nExample: x = 1\nExample: x = 2")


def test_a_pair_is_documented_under_the_setting_above() -> None:
    price_in, price_out = (
        BY_PATH["backends.<name>.price_input_per_mtok"],
        BY_PATH["backends.<name>.price_output_per_mtok"],
    )
    assert [price_in, price_out] in gen.headings(SETTINGS)
    alone = [s for s in SETTINGS if s is not price_in]
    with pytest.raises(ValueError, match="not the setting above"):
        gen.headings(alone)


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
        if name.startswith(gen.EXTENSION_OWN):
            continue
        assert name.startswith("refactorLsp."), name
        path = ".".join(_snake(part) for part in name.removeprefix("refactorLsp.").split("."))
        if path == "backends":
            out["backends"] = prop
            inner = prop["additionalProperties"]["properties"]
            out.update({f"backends.<name>.{_snake(key)}": value for key, value in inner.items()})
        elif path == "actions":
            out["actions"] = prop
            out.update({f"actions[].{_snake(key)}": value for key, value in prop["items"]["properties"].items()})
        else:
            out[path] = prop
    return out


def _properties() -> dict[str, Any]:
    manifest = json.loads(gen.PACKAGE_JSON.read_text(encoding="utf-8"))
    return manifest["contributes"]["configuration"]["properties"]


def _declared() -> dict[str, dict[str, Any]]:
    return _vscode_paths(_properties())


def test_vscode_settings_exist_in_the_schema_with_its_types_and_defaults() -> None:
    declared = _declared()
    assert declared, "no settings found in package.json"
    problems = []
    for path, prop in declared.items():
        if path not in BY_PATH:
            problems.append(f"{path}: declared in package.json, not in the schema")
            continue
        setting = BY_PATH[path]
        hint, default, has_default = setting.hint, setting.default, setting.has_default
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


def test_vscode_declares_every_setting_but_those_its_docstring_says_why_not() -> None:
    declared = _declared()
    absent = {s.path: s.tags["Not in VS Code"] for s in SETTINGS if "Not in VS Code" in s.tags}
    assert absent and all(reason.strip() for reason in absent.values())
    assert sorted(path for path in BY_PATH if path not in declared) == sorted(absent)
    # the extension's own settings (which program runs, LSP tracing), never sent to the server, are kept
    own = [name for name in _properties() if name.startswith(gen.EXTENSION_OWN)]
    assert own == ["refactorLsp.server.command", "refactorLsp.server.args", "refactorLsp.trace.server"]


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
