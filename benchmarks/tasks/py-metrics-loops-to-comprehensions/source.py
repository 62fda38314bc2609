"""Aggregate request latency samples collected by the edge proxies."""

import math
import statistics
from typing import Dict, List, NamedTuple, Sequence


class Sample(NamedTuple):
    route: str
    status: int
    latency_ms: float
    region: str


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low, high = math.floor(rank), math.ceil(rank)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize_route(samples: List[Sample], route: str) -> Dict[str, float]:
    latencies = []
    for s in samples:
        if s.route == route:
            latencies.append(s.latency_ms)
    errors = []
    for s in samples:
        if s.route == route and s.status >= 500:
            errors.append(s)
    regions = set()
    for s in samples:
        if s.route == route:
            regions.add(s.region)
    by_region = {}
    for region in sorted(regions):
        by_region[region] = statistics.fmean(
            s.latency_ms for s in samples if s.route == route and s.region == region
        )
    return {
        "count": len(latencies),
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "error_rate": len(errors) / len(latencies) if latencies else 0.0,
        "slowest_region_ms": max(by_region.values(), default=math.nan),
    }


def summarize_all(samples: List[Sample]) -> Dict[str, Dict[str, float]]:
    return {route: summarize_route(samples, route) for route in sorted({s.route for s in samples})}


def format_report(summary: Dict[str, Dict[str, float]]) -> str:
    lines = [f"{'route':<32} {'count':>7} {'p50':>8} {'p99':>8} {'err%':>6}"]
    for route, stats in summary.items():
        lines.append(
            f"{route:<32} {stats['count']:>7.0f} {stats['p50']:>8.1f} "
            f"{stats['p99']:>8.1f} {stats['error_rate'] * 100:>6.2f}"
        )
    return "\n".join(lines)
