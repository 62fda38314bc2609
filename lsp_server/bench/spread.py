"""A figure over several runs: its median and its range, the one shape every bench summary uses."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float | int | None]) -> Spread | None:
        present = [float(v) for v in values if v is not None]
        if not present:
            return None
        return cls(statistics.median(present), min(present), max(present))
