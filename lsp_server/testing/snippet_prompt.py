"""An apply's snippet as the loopback backend reads it from the prompt; the merge it answers with is the
product's own mechanical merge (formats/lazy_merge.py)."""

from __future__ import annotations

from typing import Any

from ..formats.lazy_merge import lazy_merge

SNIPPET_START = "<<<SNIPPET\n"
SNIPPET_END = "SNIPPET>>>"

__all__ = ["SNIPPET_END", "SNIPPET_START", "lazy_merge", "snippet_of"]


def snippet_of(messages: list[dict[str, Any]]) -> str | None:
    """The snippet an apply's prompt carries between its markers, or None (a refactor's prompt)."""
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    start = text.find(SNIPPET_START)
    end = text.find("\n" + SNIPPET_END, start)
    if start < 0 or end < 0:
        return None
    return text[start + len(SNIPPET_START) : end + 1]
