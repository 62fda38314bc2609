"""A part of a complete snippet, spliced as written (placement/complete.py found its new text): no request.

Its edits are the region's new text against the region, checked before the edit as any answer is
(check/verify.py); its stats say what happened: `merged_by` "splice", 0 tokens, no prediction,
no backend, the time the splice and the check took. When the check finds a problem the snippet
brings, the part is merged by the model after all (`engine.run`), which a repair may then mend, and
its notes say why.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from ..check.verify import verify_answer
from ..formats.edits import region_replacements
from ..stats.measured import RefactorStats
from .plan import Plan, ProgressCallback, RefactorError, RefactorResult

if TYPE_CHECKING:
    from .engine import Engine


async def splice_or_merge(
    engine: Engine, plan: Plan, new_region: str, on_progress: ProgressCallback | None = None
) -> RefactorResult:
    """The plan's region replaced by `new_region`, checked; the model's merge when the check refuses it."""
    started = time.perf_counter()
    text, start, end = plan.request.text, plan.region.start, plan.region.end
    edits = region_replacements(text, start, end, new_region)
    stats = RefactorStats(
        scope=plan.region.kind,
        region_lines=plan.region.lines,
        concurrency=plan.request.concurrency,
        completion_tokens=0,
        prompt_tokens=0,
        output_chars=len(new_region),
        action=plan.action,
        merged_by="splice",
    )
    if edits:
        verified = await verify_answer(text, start, end, new_region, plan.language, plan.settings)
        if verified.problem is not None:
            problem = verified.problem
            note = (
                f"the snippet as written has a {problem.kind} that the code did not have ({problem.describe()}), "
                "so the model merged it"
            )
            try:
                merged = await engine.run(plan, on_progress)
            except RefactorError as exc:
                raise RefactorError(f"{note}: {exc}", exc.stats, exc.output, exc.problem) from None
            return replace(merged, stats=merged.stats.with_notes(note, first=True))
        stats = replace(stats, checked=verified.checked, notes=verified.notes)
    return RefactorResult(plan, new_region, edits, replace(stats, latency_ms=(time.perf_counter() - started) * 1000))
