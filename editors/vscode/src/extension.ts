import * as vscode from "vscode";
import { DidChangeConfigurationNotification, LanguageClient } from "vscode-languageclient/node";
import { createClient, launch, SECTION } from "./client";
import {
  APPLY_CLIPBOARD,
  applyClipboard,
  ApplyClipboardActions,
  cancel,
  CancelOptions,
  refactorEach,
  refactorWithPrediction,
  REVIEW_COMMANDS,
  showStats,
} from "./commands";
import { CANCEL, RefactorStatus, SHOW_STATS } from "./status";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let status: RefactorStatus;
let starting: Promise<void> = Promise.resolve();
let folder = ""; // the extension's own: where the server starts, never the workspace

export function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Refactor LSP", { log: true });
  status = new RefactorStatus();
  folder = context.extensionPath;
  const command = <A extends unknown[]>(id: string, run: (...args: A) => Promise<void>) =>
    vscode.commands.registerCommand(id, (...args: A) =>
      run(...args).catch((error: unknown) => {
        output.error(`${id} failed: ${String(error)}`);
        void vscode.window.showErrorMessage(`Refactor with Prediction: ${errorText(error)}`);
      }),
    );
  context.subscriptions.push(
    output,
    status,
    command("refactorLsp.vscode.refactorWithPrediction", async () => refactorWithPrediction(await ready())),
    command("refactorLsp.vscode.refactorEachInFile", async () => refactorEach(await ready(), "file")),
    command("refactorLsp.vscode.refactorEachInSelection", async () => refactorEach(await ready(), "selection")),
    command(APPLY_CLIPBOARD, async () => applyClipboard(await ready())),
    // The same, each change of the answer to keep or drop in the Refactor Preview.
    command(REVIEW_COMMANDS.refactor, async () => refactorWithPrediction(await ready(), true)),
    command(REVIEW_COMMANDS.eachInFile, async () => refactorEach(await ready(), "file", true)),
    command(REVIEW_COMMANDS.eachInSelection, async () => refactorEach(await ready(), "selection", true)),
    command(REVIEW_COMMANDS.applyClipboard, async () => applyClipboard(await ready(), true)),
    vscode.languages.registerCodeActionsProvider({ scheme: "file" }, new ApplyClipboardActions(), {
      providedCodeActionKinds: [ApplyClipboardActions.kind],
    }),
    // Escape passes `{ activeDocumentOnly: true }` (package.json): it never cancels another document's refactor.
    command(CANCEL, async (options?: CancelOptions) => cancel(await ready(), status, options)),
    command(SHOW_STATS, async () => showStats(await ready())),
    command("refactorLsp.vscode.restartServer", () => restart("restart requested")),
    command("refactorLsp.vscode.showLog", async () => output.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) void restart("the server settings changed");
      // Only the news: the server asks again through workspace/configuration, which the middleware filters.
      else if (event.affectsConfiguration(SECTION) && client?.isRunning()) {
        void client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
      }
    }),
    // The server lets a trusted folder's .refactor-lsp.toml choose backends: tell it the news.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart("the workspace is now trusted")),
  );
  return restart();
}

export function deactivate(): Promise<void> {
  return stop();
}

/** The client once a pending (re)start is over. */
async function ready(): Promise<LanguageClient | undefined> {
  await starting;
  return client;
}

/** (Re)start the server; serialised, so quick setting changes cannot start two. */
function restart(reason?: string): Promise<void> {
  starting = starting.then(async () => {
    if (reason) output.info(`restarting the server: ${reason}`);
    await stop();
    const started = launch(folder);
    if ("missing" in started) {
      output.error(started.missing);
      void vscode.window.showErrorMessage(`Refactor with Prediction: ${started.missing}`, "Open Settings").then((choice) => {
        if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.server`);
      });
      return;
    }
    client = createClient(output, status, started);
    try {
      await client.start(); // on failure the client itself shows the error, with a link to this log
      output.info(`server started: ${[started.command, ...started.args].join(" ")} (in ${started.cwd})`);
    } catch (error) {
      output.error(`the server did not start: ${errorText(error)}`);
    }
  });
  return starting;
}

async function stop(): Promise<void> {
  const old = client;
  client = undefined;
  if (!old) return;
  try {
    if (old.isRunning()) await old.stop(5000);
    await old.dispose();
  } catch (error) {
    output.warn(`stopping the server: ${errorText(error)}`);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
