import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { APPLY_SNIPPET, REFACTOR, REFACTOR_EACH } from "./client";
import { clipboardCode } from "./clipboard";
import { StatsReply, statsRows } from "./format";
import { RefactorStatus } from "./status";

let lastInstruction = "";

/** What a "(Review)" command adds to its request: every change of the answer goes to VS Code's Refactor
 *  Preview with its own checkbox, and what is kept is checked (docs/protocol.md, "Reviewing changes").
 *  The setting `refactorLsp.refactor.preview` asks the same of every request, on the server's side. */
function reviewArgument(review: boolean): { review?: "preview" } {
  return review ? { review: "preview" } : {};
}

/** "Refactor with Prediction...": ask for an instruction, rewrite the selection (or the block at the cursor);
 *  with `review`, "Refactor with Prediction (Review)...". */
export async function refactorWithPrediction(client: LanguageClient | undefined, review = false): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") {
    void vscode.window.showWarningMessage("Refactor with Prediction: open a file, and select what to rewrite.");
    return;
  }
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage("Refactor with Prediction: the refactor-lsp server is not running.");
    return;
  }
  const instruction = await askInstruction(
    editor.selection.isEmpty ? "How should the code around the cursor change?" : "How should the selected code change?",
    review,
  );
  if (!instruction) return;
  const c2p = client.code2ProtocolConverter;
  // The server reports every outcome itself (a message, progress, the stats notification).
  await vscode.commands.executeCommand(REFACTOR, {
    uri: c2p.asUri(editor.document.uri),
    range: c2p.asRange(editor.selection),
    instruction,
    ...reviewArgument(review),
  });
}

/** The batch's targets (lsp_server/server/wire.py `BatchArguments`): each definition the selection touches,
 *  or each top-level definition of the file. */
export type EachTargets = "selection" | "file";

/** "... Each Definition in This File / in the Selection...": one instruction, applied to each definition
 *  as its own refactor, all at once; the server applies the results as one edit (one undo). With
 *  `review`, the "(Review)" commands: each change of each definition has its checkbox. */
export async function refactorEach(
  client: LanguageClient | undefined,
  targets: EachTargets,
  review = false,
): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") {
    void vscode.window.showWarningMessage("Refactor with Prediction: open a file first.");
    return;
  }
  if (targets === "selection" && editor.selection.isEmpty) {
    void vscode.window.showWarningMessage(
      "Refactor with Prediction: select the definitions to rewrite (or use Each Definition in This File).",
    );
    return;
  }
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage("Refactor with Prediction: the refactor-lsp server is not running.");
    return;
  }
  const instruction = await askInstruction(
    targets === "file"
      ? "How should each definition in this file change?"
      : "How should each definition in the selection change?",
    review,
  );
  if (!instruction) return;
  const c2p = client.code2ProtocolConverter;
  await vscode.commands.executeCommand(REFACTOR_EACH, {
    uri: c2p.asUri(editor.document.uri),
    ...(targets === "selection" ? { range: c2p.asRange(editor.selection) } : {}),
    instruction,
    targets,
    ...reviewArgument(review),
  });
}

/** "Apply Clipboard with Prediction": the code on the clipboard (from a chat, an agent) merged into the
 *  definitions it names, each with its current text as the prediction; the selection (or the cursor)
 *  says where it goes when it names none. The server reports every outcome itself. With `review`,
 *  "Apply Clipboard with Prediction (Review)". */
export async function applyClipboard(client: LanguageClient | undefined, review = false): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") {
    void vscode.window.showWarningMessage("Apply Clipboard with Prediction: open the file to merge the code into.");
    return;
  }
  const snippet = clipboardCode(await vscode.env.clipboard.readText());
  if (snippet === undefined) {
    void vscode.window.showWarningMessage("Apply Clipboard with Prediction: the clipboard holds no code; copy the snippet first.");
    return;
  }
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage("Refactor with Prediction: the refactor-lsp server is not running.");
    return;
  }
  const c2p = client.code2ProtocolConverter;
  await vscode.commands.executeCommand(APPLY_SNIPPET, {
    uri: c2p.asUri(editor.document.uri),
    range: c2p.asRange(editor.selection),
    snippet,
    ...reviewArgument(review),
  });
}

/** The code action "Apply Clipboard with Prediction", offered while the clipboard holds code (the
 *  server cannot see the clipboard: the extension offers it). Only when the menu is asked for (Ctrl+.,
 *  the context menu): the lightbulb asks on every cursor move, and in a browser (code-server, vscode.dev)
 *  each clipboard read without the site's permission shows an error. */
export class ApplyClipboardActions implements vscode.CodeActionProvider {
  static readonly kind = vscode.CodeActionKind.RefactorRewrite.append("prediction").append("apply");

  async provideCodeActions(
    document: vscode.TextDocument,
    _range: vscode.Range | vscode.Selection,
    context: vscode.CodeActionContext,
  ): Promise<vscode.CodeAction[]> {
    if (context.triggerKind !== vscode.CodeActionTriggerKind.Invoke || document.uri.scheme !== "file") return [];
    if (clipboardCode(await vscode.env.clipboard.readText()) === undefined) return [];
    const action = new vscode.CodeAction("Apply Clipboard with Prediction", ApplyClipboardActions.kind);
    action.command = { title: action.title, command: APPLY_CLIPBOARD };
    return [action];
  }
}

export const APPLY_CLIPBOARD = "refactorLsp.vscode.applyClipboard";

/** The extension's own commands that ask the server for a review in the Refactor Preview: ids of their
 *  own (vscode-languageclient registers the server's `refactorLsp.*` ids itself; the same id twice stops it). */
export const REVIEW_COMMANDS = {
  refactor: "refactorLsp.vscode.refactorWithPredictionReview",
  eachInFile: "refactorLsp.vscode.refactorEachInFileReview",
  eachInSelection: "refactorLsp.vscode.refactorEachInSelectionReview",
  applyClipboard: "refactorLsp.vscode.applyClipboardReview",
} as const;

/** The instruction input box (the last instruction pre-filled); undefined when dismissed or blank. */
async function askInstruction(prompt: string, review: boolean): Promise<string | undefined> {
  const instruction = await vscode.window.showInputBox({
    title: review ? "Refactor with Prediction (Review)" : "Refactor with Prediction",
    prompt,
    placeHolder: "e.g. rename data to content",
    value: lastInstruction,
    ignoreFocusOut: true,
  });
  if (!instruction?.trim()) return undefined;
  lastInstruction = instruction;
  return instruction.trim();
}

/** How "Cancel Refactor" was invoked: Escape in the editor cancels only the active document's refactor. */
export interface CancelOptions {
  activeDocumentOnly?: boolean;
}

/** "Cancel Refactor": the active document's refactor; from the palette or the status bar, with none
 *  running there, every running one. */
export async function cancel(
  client: LanguageClient | undefined,
  status: RefactorStatus,
  options: CancelOptions = {},
): Promise<void> {
  if (!client?.isRunning()) return;
  const uri = vscode.window.activeTextEditor?.document.uri;
  const here = uri !== undefined && status.isRunning(uri.toString());
  if (!here && options.activeDocumentOnly) return;
  const target = here ? { uri: client.code2ProtocolConverter.asUri(uri) } : {};
  await vscode.commands.executeCommand("refactorLsp.cancel", target);
}

/** "Show Prediction Statistics": medians per backend, with and without the prediction. */
export async function showStats(client: LanguageClient | undefined): Promise<void> {
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage("Refactor with Prediction: the refactor-lsp server is not running.");
    return;
  }
  const reply = await vscode.commands.executeCommand<StatsReply>("refactorLsp.showStats");
  if (!reply || !reply.count) return; // the server has said "no refactors recorded yet"
  await vscode.window.showQuickPick(statsRows(reply), {
    title: `Prediction statistics: ${reply.count} refactor${reply.count === 1 ? "" : "s"} (medians)`,
    matchOnDescription: true,
  });
}
