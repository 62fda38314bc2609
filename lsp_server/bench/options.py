"""The bench's options that take lists: --concurrency's levels and --edit-format's formats, parsed
and checked before anything runs."""

from __future__ import annotations

import re

from .tasks import BenchError

# --edit-format's values: the edit formats, and hunks with the region sent as the prediction field too.
EDIT_FORMATS: tuple[str, ...] = ("region", "hunks", "hunks+prediction", "auto")


def parse_concurrency(text: str) -> tuple[int, ...]:
    """--concurrency's levels: "4,1,2" → (1, 2, 4), each once, lowest first. Raises BenchError."""
    levels = []
    for part in text.split(","):
        part = part.strip()
        # Digits only: "+2", "2.0", "1e3" and "²" are not what a reader of the report would expect.
        if not re.fullmatch(r"[0-9]+", part) or int(part) < 1:
            raise BenchError(
                f"--concurrency takes whole numbers of 1 or more, separated by commas (like 1,2,4); {part!r} is not one"
            )
        levels.append(int(part))
    return tuple(sorted(set(levels)))


def parse_edit_formats(text: str) -> tuple[str, ...]:
    """--edit-format's formats: "auto,region" → ("region", "auto"), each once, in the report's order.
    Raises BenchError."""
    asked = []
    for part in text.split(","):
        part = part.strip()
        if part not in EDIT_FORMATS:
            raise BenchError(
                f"--edit-format takes {', '.join(EDIT_FORMATS)}, one or several separated by commas "
                f"(like region,hunks,auto); {part!r} is not one"
            )
        asked.append(part)
    return tuple(f for f in EDIT_FORMATS if f in asked)
