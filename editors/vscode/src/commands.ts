import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { REFACTOR } from "./client";
import { StatsReply, statsRows } from "./format";
import { RefactorStatus } from "./status";

let lastInstruction = "";

/** "Refactor with Prediction...": ask for an instruction, rewrite the selection (or the block at the cursor). */
export async function refactorWithPrediction(client: LanguageClient | undefined): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") {
    void vscode.window.showWarningMessage("Refactor with Prediction: open a file, and select what to rewrite.");
    return;
  }
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage("Refactor with Prediction: the refactor-lsp server is not running.");
    return;
  }
  const instruction = await vscode.window.showInputBox({
    title: "Refactor with Prediction",
    prompt: editor.selection.isEmpty
      ? "How should the code around the cursor change?"
      : "How should the selected code change?",
    placeHolder: "e.g. rename data to content",
    value: lastInstruction,
    ignoreFocusOut: true,
  });
  if (!instruction?.trim()) return;
  lastInstruction = instruction;
  const c2p = client.code2ProtocolConverter;
  // The server reports every outcome itself (a message, progress, the stats notification).
  await vscode.commands.executeCommand(REFACTOR, {
    uri: c2p.asUri(editor.document.uri),
    range: c2p.asRange(editor.selection),
    instruction: instruction.trim(),
  });
}

/** "Cancel Refactor": the active document's refactor, or every running one. */
export async function cancel(client: LanguageClient | undefined, status: RefactorStatus): Promise<void> {
  if (!client?.isRunning()) return;
  const uri = vscode.window.activeTextEditor?.document.uri;
  const target = uri && status.isRunning(uri.toString()) ? { uri: client.code2ProtocolConverter.asUri(uri) } : {};
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
