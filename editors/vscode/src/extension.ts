import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { createClient, SECTION, serverOptions } from "./client";
import { cancel, refactorEach, refactorWithPrediction, showStats } from "./commands";
import { CANCEL, RefactorStatus, SHOW_STATS } from "./status";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let status: RefactorStatus;
let starting: Promise<void> = Promise.resolve();

export function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Refactor LSP", { log: true });
  status = new RefactorStatus();
  const command = (id: string, run: () => Promise<void>) =>
    vscode.commands.registerCommand(id, () =>
      run().catch((error: unknown) => {
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
    command(CANCEL, async () => cancel(await ready(), status)),
    command(SHOW_STATS, async () => showStats(await ready())),
    command("refactorLsp.vscode.restartServer", () => restart("restart requested")),
    command("refactorLsp.vscode.showLog", async () => output.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) void restart("the server settings changed");
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
    const missing = missingProgram();
    if (missing) {
      output.error(missing);
      void vscode.window.showErrorMessage(`Refactor with Prediction: ${missing}`, "Open Settings").then((choice) => {
        if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.server`);
      });
      return;
    }
    client = createClient(output, status);
    try {
      await client.start(); // on failure the client itself shows the error, with a link to this log
      output.info(`server started: ${describe()}`);
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

/** Why the server program cannot be started (not found), or undefined. */
function missingProgram(): string | undefined {
  const { command } = serverOptions() as { command: string };
  const hasDir = /[\\/]/.test(command);
  const suffixes = process.platform === "win32" ? ["", ...(process.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  const dirs = hasDir ? [""] : (process.env.PATH ?? "").split(path.delimiter).filter(Boolean);
  if (dirs.some((dir) => suffixes.some((ext) => isExecutable(path.join(dir, command + ext))))) return undefined;
  return (
    `cannot find the language server \`${command}\`${hasDir ? "" : " on PATH"}. ` +
    "Install it from a checkout of refactor-lsp (`pip install -e /path/to/refactor-lsp`; it is not on PyPI), or set `refactorLsp.server.command` to its absolute path."
  );
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function describe(): string {
  const { command, args } = serverOptions() as { command: string; args?: string[] };
  return [command, ...(args ?? [])].join(" ");
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
