"""The deletion guard: an answer that empties the region, or deletes most of it, is refused in either
edit format unless the instruction asks for removal; ordinary refactors are never refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.bench.tasks import load_tasks
from lsp_server.formats.hunks import DIVIDER, REPLACE_MARKER, SEARCH_MARKER
from lsp_server.formats.hygiene import (
    UnusableOutput,
    asks_for_removal,
    clean_hunks_output,
    clean_output,
    refuse_mass_deletion,
)

TASKS = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
FUNCTION = (
    "def total(orders):\n"
    "    result = 0\n"
    "    for order in orders:\n"
    "        if order.cancelled:\n"
    "            continue\n"
    "        for line in order.lines:\n"
    "            result += line.price * line.quantity\n"
    "\n"
    "    if result < 0:\n"
    "        raise ValueError(result)\n"
    "    return result\n"
)  # 10 non-blank lines
GUTTED = "def total(orders):\n    return 0\n"


def hunks(search: str, replace: str) -> str:
    return f"{SEARCH_MARKER}\n{search}{DIVIDER}\n{replace}{REPLACE_MARKER}\n"


def new_region(answer_format: str, answer: str) -> str:
    """The region's new text as Engine.run computes it before the guard."""
    if answer_format == "hunks":
        return clean_hunks_output(answer, FUNCTION, "stop").text
    return clean_output(answer, FUNCTION, "stop")


def refusal(answer_format: str, answer: str) -> str:
    with pytest.raises(UnusableOutput) as info:
        refuse_mass_deletion(FUNCTION, new_region(answer_format, answer), removal_asked=False)
    return str(info.value)


def test_an_emptied_region_is_refused_with_one_message_in_both_formats() -> None:
    by_blocks = refusal("hunks", hunks(FUNCTION, ""))
    by_region = refusal("region", "")
    assert (
        by_blocks
        == by_region
        == (
            "the model's answer leaves no code in the region (it deletes all 10 of its non-blank lines), which the "
            "instruction does not ask for; nothing was applied — run it again, or say in the instruction that the "
            "code should be removed"
        )
    )
    assert refusal("region", "\n  \n") == by_region


def test_a_mass_deletion_is_refused_in_both_formats() -> None:
    body = FUNCTION[FUNCTION.index("    result = 0") :]
    by_blocks = refusal("hunks", hunks(body, "    return 0\n"))
    assert by_blocks == refusal("region", GUTTED)
    assert by_blocks.startswith(
        "the model's answer deletes 8 of the region's 10 non-blank lines, which the instruction"
    )


def test_an_instruction_asking_for_removal_lets_the_same_answers_through() -> None:
    for answer_format, answer in (("hunks", hunks(FUNCTION, "")), ("region", ""), ("region", GUTTED)):
        refuse_mass_deletion(FUNCTION, new_region(answer_format, answer), removal_asked=True)


SIMPLIFIED = (
    "def total(orders):\n"
    "    result = sum(line.price * line.quantity for order in orders if not order.cancelled for line in order.lines)\n"
    "    return result\n"
)  # 3 of the 10 lines: a simplification keeping over a quarter


@pytest.mark.parametrize(
    ("original", "new"),
    [(FUNCTION, SIMPLIFIED), ("def f(x):\n    y = x\n    z = y\n    return z\n", "def f(x):\n    return x\n")],
    ids=["keeps-over-a-quarter", "small-region"],
)
def test_a_refactor_that_shrinks_the_code_passes(original: str, new: str) -> None:
    refuse_mass_deletion(original, new, removal_asked=False)


def test_an_empty_region_may_stay_empty_and_blank_regions_are_not_code() -> None:
    refuse_mass_deletion("", "", removal_asked=False)
    refuse_mass_deletion("\n\n", "", removal_asked=False)


def test_no_expected_result_of_the_benchmark_corpus_is_refused() -> None:
    tasks = load_tasks(TASKS)
    assert len(tasks) >= 27
    for task in tasks:
        start, end = task.span()
        # Refactors, among them rewrites that shrink code by a third (loops into comprehensions).
        refuse_mass_deletion(task.source[start:end], task.expected_region(), removal_asked=False)


@pytest.mark.parametrize(
    "instruction",
    [
        "delete this function",
        "Remove the unused parameters",
        "drop the legacy branch",
        "strip the debug prints",
        "get rid of the cache",
        "eliminate dead code",
        "the deprecated alias: removal please",
        "keep the API, but deleting the fallback is fine",
    ],
)
def test_instructions_that_ask_for_removal(instruction: str) -> None:
    assert asks_for_removal(instruction)


@pytest.mark.parametrize(
    "instruction",
    [
        "rename total to order_total",
        "add a dropdown for the stripe payment",  # the words inside longer words do not count
        "do not remove anything, only add type hints",
        "refactor this without deleting the comments",
        "never drop a line of the docstring",
    ],
)
def test_instructions_that_do_not(instruction: str) -> None:
    assert not asks_for_removal(instruction)
