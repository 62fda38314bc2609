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
from typing import Literal, Protocol

from lsprotocol import types

from ..formats.edits import Replacement, apply_replacements, rebase_each
from ..scope import ScopeCache
from ..text import LineIndex, PositionEncoding, PositionMapper

log = logging.getLogger(__name__)

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
    """One region's edits, computed on the snapshot: a refactor has one, a batch one per definition."""

    region: tuple[int, int]
    edits: list[Replacement]
    label: str = LABEL  # what the preview calls it


@dataclass(frozen=True)
class PartsOutcome:
    """How an edit of several parts ended: the one edit sent, the parts left out of it because the user
    typed inside their region meanwhile (`stale`), and those the user did not keep in the preview
    (`left_out`), by index in the parts given."""

    outcome: ApplyOutcome
    stale: frozenset[int] = frozenset()
    left_out: frozenset[int] = frozenset()


def workspace_edit(
    uri: str,
    version: int | None,
    text: str,
    parts: Sequence[tuple[Sequence[Replacement], str]],
    encoding: PositionEncoding,
    *,
    document_changes: bool,
    preview: bool,
    index: LineIndex | None = None,
) -> types.WorkspaceEdit:
    """The edit for one document only, `parts` = (edits, label) in document order; versioned when the
    client takes documentChanges. With a preview every part's edits carry a change annotation of their
    own that needs confirmation, named by its label, so the user accepts part by part. `index`: the
    text's lines when the caller has them (the document's scope cache), so it is not split again."""
    mapper = PositionMapper(text, encoding, index)

    def lsp_range(edit: Replacement) -> types.Range:
        return types.Range(types.Position(*mapper.position(edit.start)), types.Position(*mapper.position(edit.end)))

    if not document_changes:
        return types.WorkspaceEdit(
            changes={uri: [types.TextEdit(lsp_range(e), e.text) for edits, _ in parts for e in edits]}
        )
    text_edits: list[types.TextEdit | types.AnnotatedTextEdit | types.SnippetTextEdit] = []
    annotations: dict[str, types.ChangeAnnotation] = {}
    for number, (edits, label) in enumerate(parts):
        annotation = PREVIEW_ANNOTATION if len(parts) == 1 else f"{PREVIEW_ANNOTATION}/{number}"
        for e in edits:
            if preview:
                text_edits.append(
                    types.AnnotatedTextEdit(range=lsp_range(e), new_text=e.text, annotation_id=annotation)
                )
            else:
                text_edits.append(types.TextEdit(lsp_range(e), e.text))
        if preview:
            annotations[annotation] = types.ChangeAnnotation(label=label, needs_confirmation=True)
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
    sent: list[tuple[Sequence[Replacement], str]] = [(part.edits, part.label) for part in parts]
    stale: set[int] = set()
    note = None
    if current_version != snapshot_version or current_text != snapshot_text:
        rebased = rebase_each(snapshot_text, current_text, [(part.region, part.edits) for part in parts])
        stale = {number for number, moved in enumerate(rebased) if moved.edits is None}
        sent = [
            (moved.edits, part.label) for part, moved in zip(parts, rebased, strict=True) if moved.edits is not None
        ]
        if not sent or (stale and whole):
            return PartsOutcome(
                ApplyOutcome(False, "stale", STALE_MESSAGE, types.MessageType.Warning), frozenset(stale)
            )
        note = "applied on top of the changes you made meanwhile"
    sending = _Sending.to(editor, preview)
    edit = workspace_edit(
        uri,
        current_version,
        current_text,
        sent,
        editor.encoding,
        document_changes=sending.document_changes,
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
        return PartsOutcome(outcome, frozenset(stale))
    if not reply.applied:
        reason = reply.failure_reason or "no reason given"
        what = "the preview was dismissed" if sending.previewed else "the editor did not apply the edit"
        return PartsOutcome(ApplyOutcome(False, "rejected", f"{what} ({reason}); nothing changed"), frozenset(stale))
    if not sending.previewed:
        return PartsOutcome(ApplyOutcome(True, "applied", note), frozenset(stale))
    # The editor answers for the edit as a whole, whatever the user ticked: the document says which parts
    # it now holds.
    numbers = [n for n in range(len(parts)) if n not in stale]
    kept = await _kept_in_preview(editor, uri, current_text, current_version, [edits for edits, _ in sent])
    left_out = frozenset(numbers[i] for i in range(len(numbers)) if kept is not None and i not in kept)
    if left_out and len(left_out) == len(numbers):
        outcome = ApplyOutcome(False, "rejected", "nothing was kept in the preview; nothing changed")
        return PartsOutcome(outcome, frozenset(stale), left_out)
    if left_out:
        note = "; ".join(filter(None, [note, f"{len(left_out)} of {len(numbers)} {LEFT_OUT}"]))
    return PartsOutcome(ApplyOutcome(True, "applied", note), frozenset(stale), left_out)


@dataclass(frozen=True)
class _Sending:
    """How an edit goes to this editor: versioned (documentChanges), previewed (change annotations that
    need confirmation, when asked for and supported), and how long its reply is waited for."""

    document_changes: bool
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
        return _Sending(document_changes, previewed, timeout)


async def _kept_in_preview(
    editor: Editor, uri: str, before: str, before_version: int | None, sent: Sequence[Sequence[Replacement]]
) -> set[int] | None:
    """The parts (by index in `sent`, edits on `before`) the document holds now that the editor applied
    the previewed edit; None when the document does not tell (closed, changed by something else too)."""
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
    return kept
