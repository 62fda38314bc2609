"""Code actions: what the menu offers. Listing is cheap and never calls a model.

Every action carries `data` with an action id; the model runs only when the user picks one and
the `refactorLsp.refactor` command executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import FIX_DIAGNOSTICS_ID, Config
from .refactor import INSTRUCTION_COMMENT_ID
from .scope import choose_region, find_instruction_comment

KIND = "refactor.rewrite.prediction"
TITLE_PREFIX = "Refactor with prediction: "
REFACTOR_COMMAND = "refactorLsp.refactor"


def kind_requested(only: list[str] | None) -> bool:
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
) -> list[OfferedAction]:
    base = {"uri": uri, "range": lsp_range}
    offered: list[OfferedAction] = []
    region = choose_region(text, start, end, config.refactor.scope)
    comment = find_instruction_comment(text, region)
    if comment is not None:
        offered.append(
            OfferedAction(
                TITLE_PREFIX + comment.instruction,
                {**base, "actionId": INSTRUCTION_COMMENT_ID},
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
