"""Prompt and prediction: one fixed, documented structure (docs/how-it-works.md, "How a refactor is
asked").

In the region format the model outputs only the region; the prediction is exactly the region's
current text, so the backend can accept most of it token for token. Local servers (vLLM, llama.cpp)
draft from the prompt by n-gram lookup, so the region also appears verbatim in the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from ..config.schema import HunksForm
from ..languages.identify import language_of
from ..text import shown_name
from .hunks import HUNKS_ANSWER_INSTRUCTION, HUNKS_SYSTEM_PROMPT
from .hunks_diff import DIFF_ANSWER_INSTRUCTION, DIFF_SYSTEM_PROMPT

REGION_START = "<<<REGION"
REGION_END = "REGION>>>"

SYSTEM_PROMPT = (
    "You are a code refactoring engine inside an editor. You rewrite one region of a file as the "
    "instruction says. Output only the rewritten region: no explanations, no markdown fences, no "
    "text before or after it, and not the region markers. Keep every line the instruction does not "
    "ask to change exactly as it is, with its indentation and comments."
)

# The user message's closing line in the region format (the hunks forms' are beside their system prompts).
REGION_ANSWER_INSTRUCTION = (
    "Output only the new text of the region (the lines between the markers, without the markers), "
    "complete, with the same indentation. No explanations, no markdown."
)

# Applying a snippet (`refactor-lsp apply`, `refactorLsp.applySnippet`): the instruction, the snippet
# between its own markers, and the region answer's closing line.
SNIPPET_START = "<<<SNIPPET"
SNIPPET_END = "SNIPPET>>>"
APPLY_INSTRUCTION = (
    "Merge the snippet below into the region. The snippet was written elsewhere (in a chat, or by an "
    "agent) and shows what the region's code becomes. It may be lazy: a comment such as "
    "`... existing code ...` or `... rest of the class ...` stands for the region's original lines at "
    "that place; copy those lines there, unchanged. Code the snippet leaves out without such a "
    "comment is removed only where the snippet clearly replaces it."
)
APPLY_ANSWER_INSTRUCTION = (
    "Output only the merged region (the lines between the region markers, without the markers), "
    "complete, with the same indentation, every lazy comment replaced by the original lines it stands "
    "for. No explanations, no markdown."
)


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    prediction: str  # the region's current text: what the model will mostly copy


def region_text(text: str, start: int, end: int, drop: tuple[int, int] | None = None) -> str:
    """text[start:end] less the span `drop` (the instruction comment): what the model writes again."""
    region = text[start:end]
    if drop is None:
        return region
    a, b = drop[0] - start, drop[1] - start
    return region[:a] + region[b:]


def context_around(text: str, start: int, end: int, budget: int) -> tuple[str, str, bool]:
    """The text before and after the region, trimmed to whole lines around it to fit `budget`, and
    whether it was trimmed."""
    before, after = text[:start], text[end:]
    if len(before) + len(after) <= budget:
        return before, after, False
    half = budget // 2
    keep_before = min(len(before), max(half, budget - len(after)))
    keep_after = min(len(after), budget - keep_before)
    cut_before = before[len(before) - keep_before :]
    cut_before = cut_before[cut_before.find("\n") + 1 :] if len(cut_before) < len(before) else cut_before
    cut_after = after[:keep_after]
    if len(cut_after) < len(after) and "\n" in cut_after:
        cut_after = cut_after[: cut_after.rfind("\n") + 1]
    return cut_before, cut_after, True


def build_prompt(
    *,
    text: str,
    start: int,
    end: int,
    instruction: str,
    path: str,
    language_id: str | None = None,
    diagnostics: list[str] | None = None,
    context_chars: int = 60_000,
    drop: tuple[int, int] | None = None,
    edit_format: str = "region",
    hunks_form: HunksForm = "search-replace",
    snippet: str | None = None,
) -> Prompt:
    """Messages for rewriting text[start:end]; `drop` removes a span (the instruction comment) first.

    `edit_format` "hunks" asks for only the changes instead of the whole region, in `hunks_form`:
    SEARCH/REPLACE blocks, or diff hunks. `snippet`: the code to merge into the region (an apply),
    after the instruction between its own markers.
    """
    region = region_text(text, start, end, drop)
    before, after, trimmed = context_around(text, start, end, context_chars)
    newline = "" if region.endswith(("\n", "\r")) or not region else "\n"
    file_view = f"{before}{REGION_START}\n{region}{newline}{REGION_END}\n{after}"
    parts = [
        f"Language: {language_of(path, language_id)}",
        f"File: {shown_name(PurePath(path).name)}",  # never a reason the request cannot be sent
        "",
        "The file"
        + (" (shortened around the region)" if trimmed else "")
        + f", with the region to rewrite between the lines {REGION_START} and {REGION_END}:",
        file_view,
        f"Instruction: {instruction.strip()}",
    ]
    if diagnostics:
        parts += ["", "Problems reported in the region, to fix:", *(f"- {d}" for d in diagnostics)]
    if snippet is not None:
        ending = "" if snippet.endswith(("\n", "\r")) else "\n"
        parts += [
            "",
            f"The snippet, between the lines {SNIPPET_START} and {SNIPPET_END}:",
            f"{SNIPPET_START}\n{snippet}{ending}{SNIPPET_END}",
        ]
    if edit_format != "hunks":
        system, closing = SYSTEM_PROMPT, APPLY_ANSWER_INSTRUCTION if snippet is not None else REGION_ANSWER_INSTRUCTION
    elif hunks_form == "diff":
        system, closing = DIFF_SYSTEM_PROMPT, DIFF_ANSWER_INSTRUCTION
    else:
        system, closing = HUNKS_SYSTEM_PROMPT, HUNKS_ANSWER_INSTRUCTION
    parts += ["", closing]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]
    return Prompt(messages, region)
