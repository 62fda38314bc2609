import * as fs from "fs";
import * as os from "os";
import * as vscode from "vscode";
import {
  CancellationToken,
  LanguageClient,
  LanguageClientOptions,
  MessageType,
  Middleware,
  ResponseError,
  ServerOptions,
  ShowMessageNotification,
  State,
  TransportKind,
  WorkDoneProgressCancelNotification,
  WorkspaceEdit,
} from "vscode-languageclient/node";
import { RefactorProgress, RefactorStats } from "./format";
import { editRefusal, plainText } from "./guard";
import { Launch, serverLaunch } from "./launch";
import { RefactorStatus } from "./status";
import { sectionForServer, userScopeValue } from "./trust";

export const SECTION = "refactorLsp";
export const REFACTOR = "refactorLsp.refactor";
/** One instruction for each definition of a selection or a file, at once (the batch). */
export const REFACTOR_EACH = "refactorLsp.refactorEach";
/** Code from a chat or an agent merged into the definitions it names (lsp_server/server/wire.py `ApplyArguments`). */
export const APPLY_SNIPPET = "refactorLsp.applySnippet";
/** The server's commands that rewrite a document: the status follows them, and only their document may be edited. */
const REWRITES = new Set([REFACTOR, REFACTOR_EACH, APPLY_SNIPPET]);

/** How the server starts (src/launch.ts): the program from your own settings only, never the
 *  workspace's, started in `folder` (the extension's own); or why it cannot start. */
export function launch(folder: string): Launch | { missing: string } {
  const config = vscode.workspace.getConfiguration(SECTION);
  const setting = {
    command: userScopeValue<string>(config.inspect<string>("server.command")),
    args: userScopeValue<string[]>(config.inspect<string[]>("server.args")),
  };
  const isExecutable = (file: string): boolean => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  };
  return serverLaunch(setting, { home: os.homedir(), folder, env: process.env, platform: process.platform, isExecutable });
}

function serverOptions(started: Launch): ServerOptions {
  const { command, args, cwd, env } = started;
  return { command, args, transport: TransportKind.stdio, options: { cwd, env } };
}

/** A document's URI as VS Code writes it, whoever wrote it (the server echoes ours, but may encode otherwise). */
export function documentKey(uri: string): string {
  return vscode.Uri.parse(uri).toString();
}

/** The text changes of a workspace edit, over all its documents. */
function editCount(edit: WorkspaceEdit): number {
  const inChanges = Object.values(edit.changes ?? {}).reduce((n, edits) => n + edits.length, 0);
  const inDocuments = (edit.documentChanges ?? []).reduce(
    (n, change) => n + ("edits" in change ? change.edits.length : 0),
    0,
  );
  return inChanges + inDocuments;
}

/** The client; `status` follows its refactors (commands, progress, stats). */
export function createClient(output: vscode.LogOutputChannel, status: RefactorStatus, started: Launch): LanguageClient {
  let client: LanguageClient | undefined = undefined;
  const progress = new Map<string, { report: (percentage?: number, message?: string) => void; done: () => void }>();

  const middleware: Middleware = {
    // The server's settings, without the ones only this extension reads; in an untrusted workspace,
    // where code and keys go comes from the user's settings only, and what a refactor may cost is at
    // most what they allow (src/trust.ts says why).
    workspace: {
      configuration: async (params, token, next) => {
        const result = await next(params, token);
        if (!Array.isArray(result)) return result;
        return result.map((value, i) => {
          const item = params.items[i];
          if (item?.section !== SECTION || value === null || typeof value !== "object") return value;
          const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
          const config = vscode.workspace.getConfiguration(SECTION, scope);
          return sectionForServer(value as Record<string, unknown>, vscode.workspace.isTrusted, (key) =>
            userScopeValue(config.inspect(key)),
          );
        });
      },
      // Each edit the server sends, in the log: a batch of refactors arrives as ONE edit (one undo).
      // Only the text of a document being refactored: no other file, none created, renamed or deleted.
      handleApplyEdit: async (params, next) => {
        const refused = editRefusal(params.edit, (uri) => status.isRunning(documentKey(uri)));
        if (refused) {
          output.warn(`workspace/applyEdit "${params.label ?? ""}" refused: ${refused}`);
          return { applied: false, failureReason: refused };
        }
        const result = await next(params, CancellationToken.None); // the client's own handler takes no token
        const outcome =
          result instanceof ResponseError ? `failed: ${result.message}` : result.applied ? "applied" : "not applied";
        output.info(`workspace/applyEdit "${params.label ?? ""}" (${editCount(params.edit)} changes): ${outcome}`);
        return result;
      },
    },
    // Every refactor, batch and apply goes through here: the palette commands, code actions, other extensions.
    executeCommand: async (command, args, next) => {
      if (!REWRITES.has(command)) return next(command, args);
      const uri = documentKey(String(args[0]?.uri ?? ""));
      status.begin(uri);
      try {
        const result = await next(command, args);
        output.info(`${command} → ${JSON.stringify(result)}`);
        return result;
      } finally {
        status.end(uri);
      }
    },
    // A refactor's progress is a cancellable notification (the client alone shows a silent status bar spinner).
    handleWorkDoneProgress: (token, params, next) => {
      const key = String(token);
      if (!key.startsWith("refactor-lsp/")) return next(token, params);
      if (params.kind === "begin") {
        void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: plainText(params.title), cancellable: params.cancellable },
          (bar, cancel) =>
            new Promise<void>((resolve) => {
              let reported = 0;
              cancel.onCancellationRequested(() =>
                client?.sendNotification(WorkDoneProgressCancelNotification.type, { token }),
              );
              const report = (percentage?: number, message?: string): void => {
                const increment = percentage === undefined ? undefined : Math.max(0, percentage - reported);
                reported += increment ?? 0;
                // The status bar takes its figures from refactorLsp/progress.
                bar.report({ message: message === undefined ? undefined : plainText(message), increment });
              };
              progress.set(key, { report, done: resolve });
              report(params.percentage, params.message);
            }),
        );
      } else if (params.kind === "report") {
        progress.get(key)?.report(params.percentage, params.message);
      } else {
        progress.get(key)?.done();
        progress.delete(key);
        next(token, params); // lets the client drop its own listener for the token
      }
    },
  };

  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    // The settings arrive through workspace/configuration only, per folder, filtered by the middleware
    // above (no `synchronize.configurationSection`: it would push the raw section, workspace values
    // included). configurationTrusted: those answers never carry a repository's routing values, nor
    // raise what a refactor may cost. A change is announced by extension.ts with `settings: null`.
    initializationOptions: {
      workspaceTrusted: vscode.workspace.isTrusted,
      configurationTrusted: true,
      progressFields: true, // the status bar reads refactorLsp/progress (the server sends it only when asked)
      refactorLsp: {},
    },
    outputChannel: output,
    middleware,
  };
  client = new LanguageClient(SECTION, "Refactor LSP", serverOptions(started), clientOptions);
  // The server's messages, as plain text: in place of the client's own handler, which would show a
  // `[label](command:...)` they quote as a link that runs the command.
  client.onNotification(ShowMessageNotification.type, ({ type, message }) => {
    const show =
      type === MessageType.Error
        ? vscode.window.showErrorMessage
        : type === MessageType.Warning
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    void show(plainText(message));
  });
  // The wire contract (lsp_server/server/wire.py): figures as fields, texts ready-made by the server.
  client.onNotification("refactorLsp/progress", (params: RefactorProgress) => status.report(params));
  client.onNotification("refactorLsp/stats", (stats: RefactorStats) => status.stats(stats));
  client.onDidChangeState(({ newState }) => {
    if (newState !== State.Stopped) return;
    for (const bar of progress.values()) bar.done(); // the server is gone: no end will come
    progress.clear();
  });
  return client;
}
