"""An attempt's answer, read: its stats (`answer_stats`) and the region it gives (`new_region`).

Pure: the engine's attempt loop (`engine.Engine.run`) calls them on each answer that comes, and learns
from the stats itself.
"""

from __future__ import annotations

from ..backend.stream import Completion
from ..formats.edits import Replacement, region_replacements
from ..formats.hygiene import clean_hunks_output, clean_output, refuse_mass_deletion
from ..formats.merged import check_merged
from ..languages.identify import language_of
from ..stats.measured import RefactorStats, measured
from .attempt import Attempt, Tries
from .context_fit import fit_note
from .plan import Plan


def answer_stats(
    plan: Plan, attempt: Attempt, completion: Completion, tries: Tries, no_speculation: bool
) -> RefactorStats:
    """The stats of the attempt that answered, with what the attempts before it left (notes, the
    retry). `no_speculation`: the backend's /metrics showed it does not draft."""
    route, backend = attempt.route, attempt.backend
    speculation = None
    if route.prediction == "prompt":
        speculation = completion.speculation
        if speculation is None and completion.acceptance is not None:
            speculation = True  # read from /metrics: the server drafted
        elif speculation is None and no_speculation:
            speculation = False
    notes = list(tries.notes)
    if tries.failures:
        notes.append(f"served by fallback backend '{backend.name}' because {'; '.join(tries.failures)}")
    refit = any(index == attempt.index for index, _ in tries.refitted)  # this backend refused a prompt as too long
    if attempt.fit is not None and (note := fit_note(attempt.fit, refit)):
        notes.append(note)
    acceptance = completion.acceptance
    stats = measured(
        RefactorStats(
            backend=plan.requested.name,
            model=backend.model,
            prediction=route.prediction == "field" or (route.prediction == "prompt" and speculation is not False),
            prediction_via=route.prediction,
            # The guard's verdict on the region as a prediction; a hunks answer gets none anyway.
            prediction_reason=route.prediction_reason if attempt.edit_format.format == "region" else "",
            server_speculation=speculation,
            speculation_always_on=route.prediction == "prompt"
            and speculation is not False
            and (plan.request.prediction is False or backend.prediction == "never"),
            scope=plan.region.kind,
            region_lines=plan.region.lines,
            concurrency=plan.request.concurrency,
            edit_format=attempt.edit_format.format,
            format_reason=attempt.edit_format.reason,
            latency_ms=completion.latency_ms,
            ttft_ms=completion.ttft_ms,
            completion_tokens=completion.completion_tokens,
            prompt_tokens=completion.prompt_tokens,
            accepted_prediction_tokens=acceptance.accepted if acceptance else None,
            rejected_prediction_tokens=acceptance.rejected if acceptance else None,
            acceptance_source=acceptance.source if acceptance else None,
            output_chars=len(completion.text),
            predicted_chars=len(attempt.prompt.prediction),
            action=plan.action,
            served_by=backend.name,
            notes=(*([note] if (note := plan.region.oversized_note()) else []), *notes, *completion.notes),
            retried_from=tries.retried_from,
            first_attempt_ms=tries.first_attempt_ms,
        ),
        backend.price_input_per_mtok,
        backend.price_output_per_mtok,
    )
    return stats.with_notes(tries.retry_note, first=True) if tries.retry_note else stats


def new_region(plan: Plan, edit_format: str, completion: Completion) -> tuple[str, list[Replacement], list[str]]:
    """The region's new text from the answer, the edits that make it, and the notes on how (a hunks
    answer's). Raises HunksError (blocks that do not apply) or UnusableOutput (an answer to refuse).

    Both formats end in the same deletion guard: an emptied region is one answer, however written;
    a merged snippet's (an apply's) is held to what the snippet shows (formats/merged.py).
    """
    text = plan.request.text
    notes: list[str] = []
    if edit_format == "hunks":
        applied = clean_hunks_output(
            completion.text,
            plan.original,
            completion.finish_reason,
            drop_instruction_comments=plan.comment is not None,
            form=plan.settings.hunks_form,
        )
        region = applied.text
        notes = applied.notes
    else:
        region = clean_output(
            completion.text,
            plan.original,
            completion.finish_reason,
            before=text[: plan.region.start],
            after=text[plan.region.end :],
            drop_instruction_comments=plan.comment is not None,
        )
    if plan.snippet is not None:  # a merge: no lazy marker copied, no more removed than the snippet shows
        check_merged(region, plan.original, plan.snippet, language_of(plan.request.path, plan.request.language_id))
    else:
        refuse_mass_deletion(plan.original, region, removal_asked=plan.removes_code)
    return region, region_replacements(text, plan.region.start, plan.region.end, region), notes
