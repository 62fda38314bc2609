"""The language of a file: the editor's languageId when it sent one, else a guess from the file's
extension. The prompt names it; the region rules (`regions.region`, `regions.code`) read a definition by it."""

from __future__ import annotations

from pathlib import PurePath

_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".sh": "shellscript",
    ".bash": "shellscript",
    ".sql": "sql",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".zig": "zig",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".r": "r",
}


def language_of(path: str, language_id: str | None = None) -> str:
    """The editor's languageId when it sent one, else a guess from the file extension."""
    if language_id:
        return language_id
    return _LANGUAGES.get(PurePath(path).suffix.lower(), "plain text")
