"""A request's edit in the editor: versioned, rebased onto the user's typing, never stale.

An edit computed against an older buffer is moved onto the current one only when the user's
changes avoid the rewritten region; otherwise nothing is applied and the user is told. A batch's
regions (one per definition) go as one edit, each moved on its own: typing inside one region
leaves that region out, and only it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from lsprotocol import types

from ..formats.changes import Change
from ..formats.edits import Replacement, apply_replacements, rebase_each, region_replacements
from ..regions import ScopeCache
from ..text import LineIndex, PositionEncoding, PositionMapper, clip, on_terminal

if TYPE_CHECKING:
    from ..pipeline.outcome import Settled
    from ..pipeline.runner import TargetOutcome

log = logging.getLogger(__name__)

TYPED_INSIDE = "you typed inside it while the batch ran; left as it is"
STALE_MESSAGE = "the buffer changed while the refactor ran; nothing was applied — run it again"
PREVIEW_ANNOTATION = "refactor-lsp"
LABEL = "Refactor with prediction"
APPLY_REPLY_TIMEOUT_S = 10.0
UNADVERTISED_APPLY_TIMEOUT_S = 2.0
# A preview waits for the user to read it and choose: a cancel still ends the wait at any time.
PREVIEW_REPLY_TIMEOUT_S = 15 * 60.0
# After a preview the editor applied, how long its didChange may take to show what the user kept.
PREVIEW_SETTLE_S = 1.0
LEFT_OUT = "left out in the preview"


class Editor(Protocol):
    """What applying needs of the editor (the server implements it; tests may fake it)."""

    @property
    def encoding(self) -> PositionEncoding: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    def current_document(self, uri: str) -> tuple[str, int | None]:
        """The document's text and version now; LookupError when the editor no longer has it open."""
        ...

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult: ...


ApplyStatus = Literal["applied", "rejected", "stale", "unconfirmed"]  # the RefactorStatus values an edit can end in


@dataclass(frozen=True)
class ApplyOutcome:
    applied: bool | None  # None: sent, but the editor never confirmed (Vim ALE does not reply)
    status: ApplyStatus
    message: str | None
    message_type: types.MessageType = types.MessageType.Info


@dataclass(frozen=True)
class EditPart:
    """One region's edits, computed on the snapshot: a refactor has one, a batch one per definition; and
    the answer's changes they make (formats/changes.py), each annotated on its own where the editor
    takes annotations (its label in the editor's preview and history), `edits` being theirs in order."""

    region: tuple[int, int]
    edits: list[Replacement]
    label: str = LABEL  # what the preview calls the part: the definition, for a batch
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class PartsOutcome:
    """How an edit of several parts ended: the one edit sent, the parts left out of it because the user
    typed inside their region meanwhile (`stale`), those the user did not keep in the preview
    (`left_out`), by index in the parts given, and the changes unticked in the preview (`dropped`:
    (part, change number)) of the parts kept. `sent_on`: the document the edit went to, as it was;
    `left_as`: as a previewed edit left it (what the user kept), read before anything else changed it."""

    outcome: ApplyOutcome
    stale: frozenset[int] = frozenset()
    left_out: frozenset[int] = frozenset()
    dropped: frozenset[tuple[int, int]] = frozenset()
    sent_on: str | None = None
    left_as: str | None = None


@dataclass(frozen=True)
class Group:
    """Edits the editor is asked to apply (or the user to tick) together: one change of a part, or a
    part without changes; by the part's index and the change's number (0: the whole part)."""

    part: int
    change: int
    edits: Sequence[Replacement]
    label: str
    description: str | None = None


def groups_of(parts: Sequence[EditPart], edits: Sequence[Sequence[Replacement] | None]) -> list[Group]:
    """The groups of the parts that go (their `edits`, rebased; None: left out), in document order."""
    groups: list[Group] = []
    for number, (part, moved) in enumerate(zip(parts, edits, strict=True)):
        if moved is None:
            continue
        if not part.changes:
            groups.append(Group(number, 0, moved, part.label))
            continue
        at = 0
        for change in part.changes:
            count = len(change.edits)
            # A request of one part needs no description: the part is the whole request.
            described = part.label if len(parts) > 1 else None
            groups.append(Group(number, change.number, moved[at : at + count], change.label, described))
            at += count
    return groups


def workspace_edit(
    uri: str,
    version: int | None,
    text: str,
    groups: Sequence[Group],
    encoding: PositionEncoding,
    *,
    document_changes: bool,
    annotated: bool,
    preview: bool,
    index: LineIndex | None = None,
) -> types.WorkspaceEdit:
    """The edit for one document only, `groups` in document order; versioned when the client takes
    documentChanges. `annotated` (the client takes change annotations): each group's edits carry an
    annotation of their own, its label the change's words and its description the part's (the
    definition); with `preview` they need confirmation, so the user ticks change by change. `index`:
    the text's lines when the caller has them (the document's scope cache), so it is not split again."""
    mapper = PositionMapper(text, encoding, index)

    def lsp_range(edit: Replacement) -> types.Range:
        return types.Range(types.Position(*mapper.position(edit.start)), types.Position(*mapper.position(edit.end)))

    if not document_changes:
        return types.WorkspaceEdit(
            changes={uri: [types.TextEdit(lsp_range(e), e.text) for group in groups for e in group.edits]}
        )
    text_edits: list[types.TextEdit | types.AnnotatedTextEdit | types.SnippetTextEdit] = []
    annotations: dict[str, types.ChangeAnnotation] = {}
    for number, group in enumerate(groups):
        if not (annotated or preview):
            text_edits += [types.TextEdit(lsp_range(e), e.text) for e in group.edits]
            continue
        annotation = PREVIEW_ANNOTATION if len(groups) == 1 else f"{PREVIEW_ANNOTATION}/{number}"
        text_edits += [
            types.AnnotatedTextEdit(range=lsp_range(e), new_text=e.text, annotation_id=annotation) for e in group.edits
        ]
        annotations[annotation] = types.ChangeAnnotation(
            label=group.label, needs_confirmation=preview, description=group.description
        )
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), text_edits)
        ],
        change_annotations=annotations or None,
    )


async def apply_parts(
    editor: Editor,
    uri: str,
    snapshot_version: int | None,
    snapshot_text: str,
    parts: Sequence[EditPart],
    preview: bool,
    scope_cache: ScopeCache | None = None,
    label: str = LABEL,
    whole: bool = False,
) -> PartsOutcome:
    """Apply the parts' edits, computed on `snapshot_text` for disjoint regions in document order, as ONE
    workspace edit (one undo), each rebased over the user's typing outside its region; a part whose
    region the user typed in is left out (`stale`), the others still go, unless the parts go `whole`
    (an applied snippet: half of one may not even run), when none does."""
    try:
        current_text, current_version = editor.current_document(uri)
    except LookupError as exc:
        return PartsOutcome(ApplyOutcome(False, "stale", f"{exc}; nothing was applied", types.MessageType.Warning))
    moved: list[Sequence[Replacement] | None] = [part.edits for part in parts]
    note = None
    if current_version != snapshot_version or current_text != snapshot_text:
        moved = [r.edits for r in rebase_each(snapshot_text, current_text, [(p.region, p.edits) for p in parts])]
        stale = frozenset(number for number, edits in enumerate(moved) if edits is None)
        if len(stale) == len(parts) or (stale and whole):
            return PartsOutcome(ApplyOutcome(False, "stale", STALE_MESSAGE, types.MessageType.Warning), stale)
        note = "applied on top of the changes you made meanwhile"
    stale = frozenset(number for number, edits in enumerate(moved) if edits is None)
    groups = groups_of(parts, moved)
    sending = _Sending.to(editor, preview)
    edit = workspace_edit(
        uri,
        current_version,
        current_text,
        groups,
        editor.encoding,
        document_changes=sending.document_changes,
        annotated=sending.annotated,
        preview=sending.previewed,
        index=scope_cache.line_index(current_text) if scope_cache is not None else None,
    )
    try:
        reply = await asyncio.wait_for(
            editor.apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label=label)), sending.timeout
        )
    except TimeoutError:
        log.info("workspace/applyEdit sent to %s; the editor did not reply within %.0f s", uri, sending.timeout)
        outcome = ApplyOutcome(None, "unconfirmed", "the edit was sent; the editor did not confirm it")
        return PartsOutcome(outcome, stale, sent_on=current_text)
    if not reply.applied:
        reason = _editors_words(reply.failure_reason or "no reason given")
        what = "the preview was dismissed" if sending.previewed else "the editor did not apply the edit"
        return PartsOutcome(ApplyOutcome(False, "rejected", f"{what} ({reason}); nothing changed"), stale)
    if not sending.previewed:
        return PartsOutcome(ApplyOutcome(True, "applied", note), stale, sent_on=current_text)
    return await _ticked(editor, uri, current_text, current_version, groups, stale, note)


def _editors_words(reason: str) -> str:
    """The editor's reason for a refusal (its `failureReason`, its error's message), as our one-line message
    quotes it: on one line, its controls spelt out (`\\u001b`), cut to a readable length. It came as the
    editor sent it: a 300 KB reason was a 300 KB message, escape sequences and a NUL in it."""
    return clip(on_terminal(" ".join(reason.split())))


async def _ticked(
    editor: Editor,
    uri: str,
    before: str,
    before_version: int | None,
    groups: Sequence[Group],
    stale: frozenset[int],
    note: str | None,
) -> PartsOutcome:
    """What the user kept of a previewed edit the editor applied: it answers for the edit as a whole,
    whatever was ticked, so the document says which groups it now holds."""
    read = await _kept_in_preview(editor, uri, before, before_version, [group.edits for group in groups])
    if read is None:  # the document does not tell: taken as applied whole
        return PartsOutcome(ApplyOutcome(True, "applied", note), stale, sent_on=before)
    kept, left_as = read
    parts = sorted({group.part for group in groups})
    kept_parts = {groups[i].part for i in kept}
    left_out = frozenset(part for part in parts if part not in kept_parts)
    dropped = frozenset(
        (group.part, group.change) for i, group in enumerate(groups) if i not in kept and group.part in kept_parts
    )
    if len(left_out) == len(parts):
        outcome = ApplyOutcome(False, "rejected", "nothing was kept in the preview; nothing changed")
        return PartsOutcome(outcome, stale, left_out, sent_on=before, left_as=left_as)
    if left_out:
        note = "; ".join(filter(None, [note, f"{len(left_out)} of {len(parts)} {LEFT_OUT}"]))
    return PartsOutcome(ApplyOutcome(True, "applied", note), stale, left_out, dropped, before, left_as)


async def revert(editor: Editor, uri: str, before: str, after: str) -> bool:
    """Take back what a previewed edit did (the document went from `before` to `after`), as one versioned
    edit of its own: a kept part that may not stand. What the user typed since is kept, as for any edit
    (rebased over it); False when the user typed inside what is taken back, or the editor did not apply."""
    try:
        now, version = editor.current_document(uri)
    except LookupError:
        return False
    undo = region_replacements(after, 0, len(after), before)
    if not undo:
        return True
    (moved,) = rebase_each(after, now, [((undo[0].start, undo[-1].end), undo)])
    if moved.edits is None:
        return False
    sending = _Sending.to(editor, preview=False)
    edit = workspace_edit(
        uri,
        version,
        now,
        [Group(0, 0, moved.edits, LABEL)],
        editor.encoding,
        document_changes=sending.document_changes,
        annotated=False,
        preview=False,
    )
    try:
        params = types.ApplyWorkspaceEditParams(edit=edit, label=f"{LABEL}: undo what the review could not keep")
        reply = await asyncio.wait_for(editor.apply_edit(params), sending.timeout)
    except TimeoutError:
        return False
    return bool(reply.applied)


def previews(editor: Editor) -> bool:
    """Whether the editor can show a preview of each change (versioned edits with change annotations)."""
    return _Sending.to(editor, preview=True).previewed


@dataclass(frozen=True)
class _Sending:
    """How an edit goes to this editor: versioned (documentChanges), previewed (change annotations that
    need confirmation, when asked for and supported), and how long its reply is waited for."""

    document_changes: bool
    annotated: bool
    previewed: bool
    timeout: float

    @staticmethod
    def to(editor: Editor, preview: bool) -> _Sending:
        caps = editor.client_capabilities.workspace
        workspace_caps = caps.workspace_edit if caps else None
        document_changes = bool(workspace_caps and workspace_caps.document_changes)
        can_preview = (
            document_changes and workspace_caps is not None and workspace_caps.change_annotation_support is not None
        )
        previewed = preview and can_preview
        advertised = bool(caps and caps.apply_edit)
        timeout = (
            PREVIEW_REPLY_TIMEOUT_S
            if previewed
            else APPLY_REPLY_TIMEOUT_S
            if advertised
            else UNADVERTISED_APPLY_TIMEOUT_S
        )
        return _Sending(document_changes, can_preview, previewed, timeout)


async def _kept_in_preview(
    editor: Editor, uri: str, before: str, before_version: int | None, sent: Sequence[Sequence[Replacement]]
) -> tuple[set[int], str] | None:
    """The parts (by index in `sent`, edits on `before`) the document holds now that the editor applied
    the previewed edit, and its text then; None when the document does not tell (closed, changed by
    something else too)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PREVIEW_SETTLE_S
    while True:  # the editor sends its didChange before its reply; a slower one gets a moment
        try:
            text, version = editor.current_document(uri)
        except LookupError:
            return None
        if version != before_version or text != before or loop.time() >= deadline:
            break
        await asyncio.sleep(0.02)
    kept: set[int] = set()
    shift = 0  # how far the parts kept so far moved the text after them
    for number, edits in enumerate(sent):
        start, end = edits[0].start, edits[-1].end
        old = before[start:end]
        new = apply_replacements(old, [Replacement(e.start - start, e.end - start, e.text) for e in edits])
        after = before[end : sent[number + 1][0].start] if number + 1 < len(sent) else before[end:]
        at = start + shift
        took = text.startswith(new, at) and text.startswith(after, at + len(new))
        left = text.startswith(old, at) and text.startswith(after, at + len(old))
        if took == left:
            return None  # neither (the document changed otherwise), or both (cannot tell)
        if took:
            kept.add(number)
            shift += len(new) - len(old)
    return kept, text


def marked(settled: Settled, applied: PartsOutcome) -> list[TargetOutcome]:
    """The settled targets once the edit came back: each edited one applied, left as it was because
    the user typed inside it (stale), left out in the preview, or as the edit as a whole ended."""
    outcomes = list(settled.outcomes)
    for number, index in enumerate(settled.edited()):
        outcome = outcomes[index]
        if number in applied.stale:
            outcomes[index] = outcome.ended("stale", TYPED_INSIDE)
        elif number in applied.left_out:
            outcomes[index] = outcome.ended("rejected", LEFT_OUT)
        else:
            reason = None if applied.outcome.applied else applied.outcome.message
            outcomes[index] = outcome.ended(applied.outcome.status, reason)
    return outcomes
