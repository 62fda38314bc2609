"""The CI performance guard's rules: noise passes, a real regression fails."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "perf_guard", Path(__file__).resolve().parents[2] / "benchmarks" / "perf_guard.py"
)
assert SPEC is not None and SPEC.loader is not None
guard = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(guard)


def row(measured: str, target: str) -> dict:
    return {"section": "startup", "figure": "f", "measured": measured, "target": target, "ok": None, "value": None}


@pytest.mark.parametrize(
    ("measured", "target", "broken"),
    [
        ("420.0 ms", "≤ 300.0 ms", False),  # a slow, noisy start
        ("600.0 ms", "≤ 300.0 ms", True),  # start-up twice as slow
        ("1.06", "≤ 1.02", False),
        ("1.25", "≤ 1.02", True),  # the server adds a quarter to every refactor
        ("3.1×", "≥ 5×", False),
        ("2.0×", "≥ 5×", True),
        ("yes", "same", False),
        ("no", "same", True),
        ("12.0 ms", "", False),  # information only
        ("0.84", "≤ 0.9", False),  # start-up against the machine's own floor
        ("0.99", "≤ 0.9", True),  # the code cache lost: no faster than importing pygls plainly
    ],
)
def test_rules(measured: str, target: str, broken: bool) -> None:
    assert (guard.check(row(measured, target)) is not None) is broken


def test_start_up_in_milliseconds_is_judged_by_its_ratio_not_by_a_reference_machine() -> None:
    figure = {**row("700.0 ms", "≤ 300.0 ms"), "figure": "initialize answered after the process starts"}
    assert guard.check(figure) is None
