"""Applying a refactor's edits in the editor: versioned, rebased onto the user's typing, never stale.

An edit computed against an older buffer is moved onto the current one only when the user's
changes avoid the rewritten region; otherwise nothing is applied and the user is told.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal, Protocol

from lsprotocol import types

from .edits import Replacement, rebase
from .refactor import RefactorResult
from .scope import ScopeCache
from .text import LineIndex, PositionEncoding, PositionMapper

log = logging.getLogger(__name__)

STALE_MESSAGE = "the buffer changed while the refactor ran; nothing was applied — run it again"
PREVIEW_ANNOTATION = "refactor-lsp"
APPLY_REPLY_TIMEOUT_S = 10.0
UNADVERTISED_APPLY_TIMEOUT_S = 2.0


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


def workspace_edit(
    uri: str,
    version: int | None,
    text: str,
    edits: list[Replacement],
    encoding: PositionEncoding,
    *,
    document_changes: bool,
    preview: bool,
    label: str,
    index: LineIndex | None = None,
) -> types.WorkspaceEdit:
    """The edit for one document only; versioned when the client takes documentChanges. `index`: the
    text's lines when the caller has them (the document's scope cache), so it is not split again."""
    mapper = PositionMapper(text, encoding, index)

    def lsp_range(edit: Replacement) -> types.Range:
        return types.Range(types.Position(*mapper.position(edit.start)), types.Position(*mapper.position(edit.end)))

    if not document_changes:
        return types.WorkspaceEdit(changes={uri: [types.TextEdit(lsp_range(e), e.text) for e in edits]})
    text_edits: list[types.TextEdit | types.AnnotatedTextEdit | types.SnippetTextEdit] = []
    for e in edits:
        if preview:
            text_edits.append(
                types.AnnotatedTextEdit(range=lsp_range(e), new_text=e.text, annotation_id=PREVIEW_ANNOTATION)
            )
        else:
            text_edits.append(types.TextEdit(lsp_range(e), e.text))
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), text_edits)
        ],
        change_annotations=(
            {PREVIEW_ANNOTATION: types.ChangeAnnotation(label=label, needs_confirmation=True)} if preview else None
        ),
    )


async def apply_result(
    editor: Editor,
    uri: str,
    snapshot_version: int | None,
    result: RefactorResult,
    preview: bool,
    scope_cache: ScopeCache | None = None,
) -> ApplyOutcome:
    try:
        current_text, current_version = editor.current_document(uri)
    except LookupError as exc:
        return ApplyOutcome(False, "stale", f"{exc}; nothing was applied", types.MessageType.Warning)
    edits = result.edits
    note = None
    if current_version != snapshot_version or current_text != result.text:
        region = (result.plan.region.start, result.plan.region.end)
        rebased = rebase(result.text, current_text, region, edits).edits
        if rebased is None:
            return ApplyOutcome(False, "stale", STALE_MESSAGE, types.MessageType.Warning)
        edits = rebased
        note = "applied on top of the changes you made meanwhile"
    caps = editor.client_capabilities.workspace
    workspace_caps = caps.workspace_edit if caps else None
    document_changes = bool(workspace_caps and workspace_caps.document_changes)
    can_preview = (
        document_changes and workspace_caps is not None and workspace_caps.change_annotation_support is not None
    )
    edit = workspace_edit(
        uri,
        current_version,
        current_text,
        edits,
        editor.encoding,
        document_changes=document_changes,
        preview=preview and can_preview,
        label="Refactor with prediction",
        index=scope_cache.line_index(current_text) if scope_cache is not None else None,
    )
    advertised = bool(caps and caps.apply_edit)
    timeout = APPLY_REPLY_TIMEOUT_S if advertised else UNADVERTISED_APPLY_TIMEOUT_S
    try:
        reply = await asyncio.wait_for(
            editor.apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label="Refactor with prediction")),
            timeout,
        )
    except TimeoutError:
        log.info("workspace/applyEdit sent to %s; the editor did not reply within %.0f s", uri, timeout)
        return ApplyOutcome(None, "unconfirmed", "the edit was sent; the editor did not confirm it")
    if reply.applied:
        return ApplyOutcome(True, "applied", note)
    reason = reply.failure_reason or "no reason given"
    if preview and can_preview:
        return ApplyOutcome(False, "rejected", f"the preview was dismissed ({reason}); nothing changed")
    return ApplyOutcome(False, "rejected", f"the editor did not apply the edit ({reason}); nothing changed")
