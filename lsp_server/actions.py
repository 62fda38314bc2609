"""Code actions: what the menu offers. Listing is cheap and never calls a model.

Every action carries `data` with an action id; the model runs only when the user picks one and
the `refactorLsp.refactor` command executes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config_schema import FIX_DIAGNOSTICS_ID, INSTRUCTION_COMMENT_ID
from .scope import ScopeCache, choose_region, find_instruction_comment

if TYPE_CHECKING:
    from .config_schema import Config

KIND = "refactor.rewrite.prediction"
TITLE_PREFIX = "Refactor with prediction: "


def kind_requested(only: Sequence[str] | None) -> bool:
    """`context.only` asks for a kind or any of its parents (`refactor`, `refactor.rewrite`)."""
    if not only:
        return True
    return any(kind == KIND or KIND.startswith(kind + ".") for kind in only)


@dataclass(frozen=True)
class OfferedAction:
    title: str
    data: dict[str, Any]  # the command's argument object: uri, range, actionId, ...


def list_actions(
    config: Config,
    *,
    uri: str,
    text: str,
    start: int,
    end: int,
    lsp_range: dict[str, Any],
    diagnostics: list[str],
    language: str | None = None,
    cache: ScopeCache | None = None,
) -> list[OfferedAction]:
    """The actions for a request; `cache` is the document's (a cursor move does not scan it again)."""
    base = {"uri": uri, "range": lsp_range}
    offered: list[OfferedAction] = []
    region = choose_region(text, start, end, config.refactor.scope, language, cache)
    comment = find_instruction_comment(text, region)
    comment_base = base
    if config.refactor.scope == "auto" and start < end and "\n" not in text[start:end]:
        # ALE (the word), vim-lsp (the line) and Helix (the character) send a range at the cursor when
        # nothing is selected: for the instruction comment that means the block around the cursor.
        block_comment = find_instruction_comment(text, choose_region(text, start, start, "auto", language, cache))
        if block_comment is not None:
            comment = block_comment
            comment_base = {"uri": uri, "range": {"start": lsp_range["start"], "end": lsp_range["start"]}}
    if comment is not None:
        offered.append(
            OfferedAction(
                TITLE_PREFIX + comment.instruction,
                {**comment_base, "actionId": INSTRUCTION_COMMENT_ID},
            )
        )
    if diagnostics:
        offered.append(
            OfferedAction(
                TITLE_PREFIX + "fix diagnostics",
                {**base, "actionId": FIX_DIAGNOSTICS_ID, "diagnostics": diagnostics},
            )
        )
    offered.extend(
        OfferedAction(TITLE_PREFIX + preset.title, {**base, "actionId": preset.id}) for preset in config.presets()
    )
    return offered
