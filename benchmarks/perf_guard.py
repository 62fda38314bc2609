"""The performance guard CI runs: a fast subset of benchmarks/perf.py with tolerances wide enough for
a noisy 2-core machine, and ratio checks that do not depend on the machine's speed.

It fails on what a change can break badly, not on noise:
- a figure with a "≤" target may reach TOLERANCE × the target (start-up twice as slow fails);
- a ratio target near 1 (the server's overhead over a direct call, ≤ 1.02) may reach 1 + 8 × its margin;
- a "≥" target (scope's savings) must keep at least half of it; "same" must stay "yes";
- start-up is judged against the same machine's floor (importing pygls without the code cache), not
  in milliseconds: the server must answer `initialize` in at most 0.9 of that import alone (0.71-0.81 with
  the cache, 0.99 without);
- edits must stay linear: the 100,000-line diff may take at most MAX_GROWTH × the 20,000-line one
  (linear is about 5×; quadratic would be about 25×).

Usage: python benchmarks/perf_guard.py   (about a minute; exits 1 with the rows that broke)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 1.6
MAX_GROWTH = 15.0
SMALL_EDIT, LARGE_EDIT = "20,000 lines, 1 % changed", "100,000 lines, 1 % changed"
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def number(text: str) -> float | None:
    match = _NUMBER.search(text)
    return float(match.group(0).replace(",", "")) if match else None


# Figures whose absolute target belongs to a reference machine: the guard judges the ratio beside each
# (measured in the same run against the machine's own floor) instead, so a slower CI machine is no failure.
MACHINE_BOUND = ("initialize answered after the process starts",)


def check(row: dict) -> str | None:
    """Why the row broke the guard, or None."""
    target, measured = row["target"].strip(), row["measured"].strip()
    if not target or row["figure"].strip() in MACHINE_BOUND:
        return None
    if target == "same":
        return None if measured == "yes" else f"no longer the same ({measured})"
    limit, value = number(target), number(measured)
    if limit is None or value is None:
        return None
    if target.startswith("≤"):
        near_one = limit < 2 and not re.search(r"[a-zA-Z/×%]", target)
        # A ratio under 1 is already a margin against the machine's own floor: judged as it stands.
        allowed = (1 + (limit - 1) * 8 if limit >= 1 else limit) if near_one else limit * TOLERANCE
        return None if value <= allowed else f"{measured} over {allowed:.3g} (target {target}, with tolerance)"
    if target.startswith("≥"):
        return None if value >= limit / 2 else f"{measured} under half the target {target}"
    return None


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "perf.json"
        command = [
            sys.executable, str(ROOT / "benchmarks" / "perf.py"), "--only", "edits,startup,overhead,scope,verify",
            "--runs", "5", "--pairs", "8", "--scope-reps", "1", "--verify-samples", "100", "--json", str(out),
        ]  # fmt: skip
        done = subprocess.run(command, cwd=ROOT, text=True, capture_output=True)
        print(done.stdout[-6000:], end="")
        if not out.exists():
            print(done.stderr[-4000:], file=sys.stderr)
            print("perf guard: benchmarks/perf.py wrote no figures", file=sys.stderr)
            return 1
        rows = json.loads(out.read_text(encoding="utf-8"))
    broken = [(row["figure"].strip(), why) for row in rows if (why := check(row))]
    edits = {row["figure"].split(" (")[0].strip(): row["value"] for row in rows if row["section"] == "edits"}
    small, large = edits.get(SMALL_EDIT), edits.get(LARGE_EDIT)
    if small and large and large / small > MAX_GROWTH:
        broken.append((LARGE_EDIT, f"{large / small:.1f}× the {SMALL_EDIT} diff: no longer linear"))
    for figure, why in broken:
        print(f"perf guard: {figure}: {why}", file=sys.stderr)
    growth = f"{large / small:.1f}×" if small and large else "n/a"
    print(f"perf guard: {len(rows)} figures, edits 100k ÷ 20k = {growth}, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
