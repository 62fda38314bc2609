"""Code actions: what the menu offers. Listing is cheap and never calls a model.

Every action carries `data` with an action id; the model runs only when the user picks one and
the `refactorLsp.refactor` command executes (`refactorLsp.refactorEach` for a selection over two or
more definitions: each of them, at once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.schema import FIX_DIAGNOSTICS_ID, INSTRUCTION_COMMENT_ID
from ..regions import ScopeCache, choose_region, find_instruction_comment
from ..regions.targets import touched_within
from .wire import REFACTOR_COMMAND, REFACTOR_EACH_COMMAND

if TYPE_CHECKING:
    from ..config.schema import Config

KIND = "refactor.rewrite.prediction"
TITLE_PREFIX = "Refactor with prediction: "
# Questions to the scope finders a code action may ask to count the definitions a selection touches:
# about 5 ms of Python, 20 ms of JavaScript here (regions/targets.py).
OFFER_BUDGET = 100


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
    if start < end:
        # A selection over several definitions: each preset for each of them, one refactor each, at once.
        # Counted within a budget: past it (a long selection) there are two or more, but how many is not said.
        touched, counted = touched_within(text, start, end, language, cache, OFFER_BUDGET)
        if len(touched) >= 2:
            which = f"each of the {len(touched)} definitions" if counted else "each definition"
            offered.extend(
                OfferedAction(
                    f"{TITLE_PREFIX}{preset.title}, {which} in the selection",
                    {**base, "targets": "selection", "actionId": preset.id},
                )
                for preset in config.presets()
            )
    return offered


def command_for(data: Mapping[str, Any]) -> str:
    """The command an offered action's `data` runs: a batch's carry `targets`."""
    return REFACTOR_EACH_COMMAND if "targets" in data else REFACTOR_COMMAND
