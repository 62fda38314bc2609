"""The wire contract: everything that crosses between the server and an editor plugin, typed.

- `refactorLsp.refactor` takes one `RefactorArguments` object (camelCase or snake_case keys);
  pygls's converter builds it, with the hook below, before the handler runs.
- It answers a `RefactorReply`: a `RefactorStatus`, the message shown, and the stats.
- `refactorLsp/stats` (notification): `StatsPayload` — the stats record plus the one-line
  `summary` and the short `status_text`, ready-made so that no client formats them itself.
- `refactorLsp/progress` (notification), alongside `$/progress` to a client that asked for it
  (`initializationOptions.progressFields`): `ProgressPayload`, the live
  figures as fields of their own (tokens/s by the final stats' definition, generated and
  predicted size), never to be parsed
  out of the progress message.
- `refactorLsp.refactorEach` takes one `BatchArguments` object (`refactorLsp.refactor`'s, plus
  `targets`) and answers a `RefactorReply` whose stats are the batch's record (pipeline/totals.py);
  its progress is a `BatchProgressPayload`.
- `review` ("preview" or "changes") on any of them: each change of the answers yours to keep or drop;
  with "changes" the reply's status is `review` and its `review` holds the changes, then
  `refactorLsp.applyChanges` takes one `ApplyChangesArguments` object (`uri`, `review`, `keep`) and
  answers a `RefactorReply` as the request would have.
- `refactorLsp.applySnippet` takes one `ApplyArguments` object (`uri`, `snippet`, `range`?,
  `mergeWithModel`?, and `backend`, `prediction`, `editFormat`, `wait` as `refactorLsp.refactor`) and answers a
  `RefactorReply`: one part's stats, or for several the batch's record.

docs/protocol.md ("Commands and notifications") documents the same shapes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

import attrs
from lsprotocol import types

from ..config.schema import FIX_DIAGNOSTICS_ID, INSTRUCTION_COMMENT_ID, EditFormat
from ..text import inert, neutralise_links

if TYPE_CHECKING:
    from cattrs import Converter

REFACTOR_COMMAND = "refactorLsp.refactor"
REFACTOR_EACH_COMMAND = "refactorLsp.refactorEach"
APPLY_SNIPPET_COMMAND = "refactorLsp.applySnippet"
CANCEL_COMMAND = "refactorLsp.cancel"
SHOW_STATS_COMMAND = "refactorLsp.showStats"
STATS_NOTIFICATION = "refactorLsp/stats"
PROGRESS_NOTIFICATION = "refactorLsp/progress"
PROGRESS_TOKEN_PREFIX = "refactor-lsp/"

APPLY_CHANGES_COMMAND = "refactorLsp.applyChanges"

EDIT_FORMATS: tuple[EditFormat, ...] = get_args(EditFormat)
ReviewMode = Literal["preview", "changes"]
REVIEW_MODES: tuple[ReviewMode, ...] = get_args(ReviewMode)
# Actions made for one region: its diagnostics, its instruction comment.
BATCH_REFUSED_ACTIONS = (FIX_DIAGNOSTICS_ID, INSTRUCTION_COMMENT_ID)
_ARGUMENTS_SHAPE = "refactorLsp.refactor takes one object: {uri, range, actionId?, instruction?, ...}"


@attrs.frozen
class RefactorArguments:
    """The `refactorLsp.refactor` argument object."""

    uri: str
    range: types.Range | None = None
    action_id: str | None = None
    instruction: str | None = None
    backend: str | None = None
    prediction: bool | None = None
    diagnostics: tuple[str, ...] = ()
    edit_format: EditFormat | None = None  # None: the preset's, else the config's
    wait: bool = True  # reply when done; False: reply at once and report through messages
    # Each change yours to keep or drop (server/offer.py): "preview", in the editor's preview; "changes",
    # offered in the reply for a plugin to show, then `refactorLsp.applyChanges`. None: applied whole.
    review: ReviewMode | None = None


def _field(raw: Mapping[str, Any], expected: type | tuple[type, ...], what: str, *names: str) -> Any:
    """The first of `names` that is set, refused by name (InvalidParams) when it is not of the expected type."""
    for name in names:
        value = raw.get(name)
        if value is None:
            continue
        # bool is an int in Python: a `true` where a number or text belongs is still the wrong type.
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in _as_tuple(expected)):
            raise ValueError(f"`{name}` must be {what}, not {_json_type(value)}")
        return value
    return None


def _as_tuple(expected: type | tuple[type, ...]) -> tuple[type, ...]:
    return expected if isinstance(expected, tuple) else (expected,)


def _json_type(value: Any) -> str:
    """The JSON name of what came, for the message (never the value: it may be large or private)."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return next((n for t, n in names.items() if type(value) is t), "an object")


def _structure_arguments(raw: Any, converter: Converter) -> RefactorArguments:
    if not isinstance(raw, Mapping) or "uri" not in raw:
        raise ValueError(_ARGUMENTS_SHAPE)
    uri = _field(raw, str, "a string (the document's URI)", "uri")
    if not uri:
        raise ValueError("`uri` must be the document's URI, not empty")
    rng = raw.get("range")
    lsp_range = None
    if rng is not None:
        try:
            lsp_range = converter.structure(rng, types.Range)
        except Exception:
            raise ValueError("`range` must be an LSP range {start: {line, character}, end: {...}}") from None
    diagnostics = _field(raw, list, "an array of strings", "diagnostics") or []
    if not all(isinstance(d, str) for d in diagnostics):
        raise ValueError("`diagnostics` must be an array of strings")
    edit_format = _field(raw, str, "a string", "editFormat", "edit_format")
    if edit_format is not None and edit_format not in EDIT_FORMATS:
        raise ValueError(f"`editFormat` must be one of {', '.join(EDIT_FORMATS)}, not {edit_format[:40]!r}")
    chosen_format = next((f for f in EDIT_FORMATS if f == edit_format), None)  # typed: one of the Literal
    wait = _field(raw, bool, "true or false", "wait")
    review = _field(raw, str, "a string", "review")
    if review is not None and review not in REVIEW_MODES:
        raise ValueError(f"`review` must be one of {', '.join(REVIEW_MODES)}, not {review[:40]!r}")
    if review is not None and wait is False:
        raise ValueError("`review` needs `wait: true`: the reply holds the changes, or the review's outcome")
    return RefactorArguments(
        uri=uri,
        range=lsp_range,
        action_id=_field(raw, str, "a string", "actionId", "action_id"),
        instruction=_field(raw, str, "a string", "instruction"),
        backend=_field(raw, str, "a string (a configured backend's name)", "backend"),
        prediction=_field(raw, bool, "true or false", "prediction"),
        diagnostics=tuple(diagnostics),
        edit_format=chosen_format,
        wait=wait is not False,
        review=next((m for m in REVIEW_MODES if m == review), None),  # typed: one of the Literal
    )


# A batch's targets: each definition the selection (`range`) touches, or each top-level one of the file.
BatchTargets = Literal["selection", "file"]
BATCH_TARGETS: tuple[BatchTargets, ...] = get_args(BatchTargets)


@attrs.frozen
class BatchArguments:
    """The `refactorLsp.refactorEach` argument object: `refactorLsp.refactor`'s, plus `targets`."""

    refactor: RefactorArguments
    targets: BatchTargets


def _structure_batch(raw: Any, converter: Converter) -> BatchArguments:
    arguments = _structure_arguments(raw, converter)
    targets = _field(raw, str, "a string", "targets")
    if targets is None:
        targets = "selection" if arguments.range is not None else "file"
    chosen = next((t for t in BATCH_TARGETS if t == targets), None)  # typed: one of the Literal
    if chosen is None:
        raise ValueError(f"`targets` must be one of {', '.join(BATCH_TARGETS)}, not {targets[:40]!r}")
    if chosen == "selection" and (arguments.range is None or arguments.range.start == arguments.range.end):
        raise ValueError("`targets: selection` needs a `range` that selects something: the definitions it touches")
    if arguments.action_id in BATCH_REFUSED_ACTIONS:
        raise ValueError(
            f"`actionId` {arguments.action_id!r} belongs to one region; a batch takes an instruction or a preset"
        )
    if not (arguments.instruction or "").strip() and not arguments.action_id:
        raise ValueError("say what to do for each definition: `instruction` or a preset's `actionId`")
    return BatchArguments(arguments, chosen)


@attrs.frozen
class ApplyArguments:
    """The `refactorLsp.applySnippet` argument object: the document, the snippet, and where it goes when
    it names no definition there (`range`: a selection, or a cursor in a definition)."""

    refactor: RefactorArguments
    snippet: str
    merge_with_model: bool = False  # a complete snippet is spliced as written unless this asks the model


# Keys of `refactorLsp.refactor` that say what to do: an apply's snippet says it.
_NOT_FOR_APPLY = ("actionId", "action_id", "instruction", "diagnostics")


def _structure_apply(raw: Any, converter: Converter) -> ApplyArguments:
    if not isinstance(raw, Mapping) or "uri" not in raw or "snippet" not in raw:
        raise ValueError("refactorLsp.applySnippet takes one object: {uri, snippet, range?, backend?, ...}")
    arguments = _structure_arguments(raw, converter)
    snippet = _field(raw, str, "a string (the code to merge)", "snippet")
    if not snippet or not snippet.strip():
        raise ValueError("`snippet` is empty: give the code to merge into the document")
    given = [key for key in _NOT_FOR_APPLY if raw.get(key) not in (None, [], "")]
    if given:
        raise ValueError(f"`{given[0]}` is not for refactorLsp.applySnippet: the snippet says what to do")
    merge = _field(raw, bool, "true or false", "mergeWithModel", "merge_with_model")
    return ApplyArguments(arguments, snippet, bool(merge))


@attrs.frozen
class ApplyChangesArguments:
    """The `refactorLsp.applyChanges` argument object: the document, the review's id (from the reply
    that offered it) and the ids of the changes to keep (none: drop them all)."""

    uri: str
    review: str
    keep: tuple[int, ...]


def _structure_apply_changes(raw: Any, converter: Converter) -> ApplyChangesArguments:
    # `keep` is asked for even when empty: one left out would read as "drop every change" and end the review.
    if not isinstance(raw, Mapping) or "uri" not in raw or "review" not in raw or "keep" not in raw:
        raise ValueError("refactorLsp.applyChanges takes one object: {uri, review, keep} (keep: [] drops them all)")
    uri = _field(raw, str, "a string (the document's URI)", "uri")
    review = _field(raw, str, "a string (the review's id)", "review")
    # `keep: null` is `keep` left out (`_field` reads null as unset): refused too, never "drop them all".
    keep = _field(raw, list, "an array of change ids", "keep")
    if keep is None:
        raise ValueError("`keep` must be an array of change ids, not null (keep: [] drops them all)")
    if not all(type(k) is int and 0 < k <= 1_000_000 for k in keep):
        raise ValueError("`keep` must be an array of change ids (whole numbers from 1)")
    if len(set(keep)) != len(keep):
        raise ValueError("`keep` names a change twice")
    return ApplyChangesArguments(uri or "", review or "", tuple(keep))


@attrs.define
class RawAnswer:
    """An editor's response kept as the JSON it came as: its `workspace/applyEdit` answer
    (RefactorProtocol.get_result_type), read by `edit_answer` rather than by pygls, which took
    `"applied": "false"` for true and dropped an answer it could not read (`null`, `{}`) unanswered."""

    id: int | str | None
    result: Any = None
    jsonrpc: str = "2.0"


def edit_answer(answer: Any) -> types.ApplyWorkspaceEditResult:
    """The editor's JSON answer to `workspace/applyEdit`: applied only when it says `"applied": true`; any
    other answer (`null`, no `applied`, `"applied": "yes"`) is a refusal, with its reason when it gives one."""
    applied = answer.get("applied") if isinstance(answer, Mapping) else None
    if applied is True:
        return types.ApplyWorkspaceEditResult(applied=True)
    if applied is False:
        reason = answer.get("failureReason")
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason if isinstance(reason, str) else None)
    unread = "it answered null" if answer is None else "its answer does not say whether it applied it"
    return types.ApplyWorkspaceEditResult(applied=False, failure_reason=unread)


def register(converter: Converter) -> None:
    """Teach the server's converter to build the commands' argument objects from their JSON."""
    converter.register_structure_hook(RefactorArguments, lambda raw, _type: _structure_arguments(raw, converter))
    converter.register_structure_hook(BatchArguments, lambda raw, _type: _structure_batch(raw, converter))
    converter.register_structure_hook(ApplyArguments, lambda raw, _type: _structure_apply(raw, converter))
    converter.register_structure_hook(
        ApplyChangesArguments, lambda raw, _type: _structure_apply_changes(raw, converter)
    )
    # The JSON as it came (json.loads made it; pygls would make named tuples of its objects), whatever it holds.
    converter.register_structure_hook(
        RawAnswer, lambda raw, _type: RawAnswer(raw.get("id"), raw.get("result"), raw.get("jsonrpc", "2.0"))
    )


class RefactorStatus(enum.StrEnum):
    APPLIED = "applied"  # the editor applied the edit
    UNCHANGED = "unchanged"  # the model's answer equals the region: nothing to apply
    REJECTED = "rejected"  # the editor refused the edit (or the user dismissed the preview)
    STALE = "stale"  # the user typed inside the region meanwhile: nothing applied
    UNCONFIRMED = "unconfirmed"  # sent; the editor never answered (Vim ALE)
    ERROR = "error"  # the refactor failed; `message` says why
    CANCELLED = "cancelled"
    PARTIAL = "partial"  # a batch: some targets applied, not all; `stats.batch.targets` says which and why
    BUSY = "busy"  # another refactor runs on this document
    STARTED = "started"  # `wait: false`: the outcome comes as messages
    REVIEW = "review"  # `review: "changes"`: nothing applied yet; `review` holds the changes to keep or drop


@attrs.frozen
class RefactorReply:
    status: RefactorStatus
    message: str | None = None
    stats: dict[str, Any] | None = None
    review: dict[str, Any] | None = None  # status `review`: {id, changes: [...]} (server/offer.py)

    def to_json(self) -> dict[str, Any]:
        """The reply as the editor gets it: its texts made inert like every notification's (a client
        may show `message` or the stats' summary as it is)."""
        reply: dict[str, Any] = {"status": self.status.value}
        if self.message is not None:
            reply["message"] = neutralise_links(self.message)
        if self.stats is not None:
            reply["stats"] = inert(self.stats)
        if self.review is not None:
            reply["review"] = inert(self.review)
        return reply


@attrs.frozen
class ProgressPayload:
    """`refactorLsp/progress`: one running refactor's live figures."""

    token: str
    uri: str
    percentage: int
    generated_chars: int
    predicted_chars: int
    elapsed_s: float
    tokens_per_s: float | None  # output tokens ÷ seconds since the first token, as in the final stats
    tokens_estimated: bool  # the tokens were estimated from the characters (the server does not count per chunk)
    message: str  # the same text as the `$/progress` report, for display only

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class BatchProgressPayload(ProgressPayload):
    """`refactorLsp/progress` of a batch: the figures above over all its targets (characters of the
    finished and running ones; `tokens_per_s`: the running ones' live rates added up), and its own."""

    done: int  # targets finished, however they ended
    total: int
    running: tuple[str, ...]  # the definitions streaming now, by name
