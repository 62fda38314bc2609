import * as os from "os";
import * as vscode from "vscode";
import {
  CancellationToken,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  ResponseError,
  ServerOptions,
  State,
  TransportKind,
  WorkDoneProgressCancelNotification,
  WorkspaceEdit,
} from "vscode-languageclient/node";
import { RefactorProgress, RefactorStats } from "./format";
import { RefactorStatus } from "./status";
import { sectionForServer, userScopeValue } from "./trust";

export const SECTION = "refactorLsp";
export const REFACTOR = "refactorLsp.refactor";
/** One instruction for each definition of a selection or a file, at once (the batch). */
export const REFACTOR_EACH = "refactorLsp.refactorEach";

/** A setting as the user's own scopes give it, ignoring the workspace's values unless it is trusted. */
function setting<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  return vscode.workspace.isTrusted ? config.get<T>(key) : userScopeValue(config.inspect<T>(key));
}

/** The server program from the (machine-overridable) settings; `~` is the home directory. */
export function serverOptions(): ServerOptions {
  const config = vscode.workspace.getConfiguration(SECTION);
  const home = (s: string): string => (s === "~" || s.startsWith("~/") ? os.homedir() + s.slice(1) : s);
  const command = home(setting<string>(config, "server.command") || "refactor-lsp");
  const args = (setting<string[]>(config, "server.args") ?? []).map(home);
  return { command, args, transport: TransportKind.stdio, options: { env: process.env } };
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
export function createClient(output: vscode.LogOutputChannel, status: RefactorStatus): LanguageClient {
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
      handleApplyEdit: async (params, next) => {
        const result = await next(params, CancellationToken.None); // the client's own handler takes no token
        const outcome =
          result instanceof ResponseError ? `failed: ${result.message}` : result.applied ? "applied" : "not applied";
        output.info(`workspace/applyEdit "${params.label ?? ""}" (${editCount(params.edit)} changes): ${outcome}`);
        return result;
      },
    },
    // Every refactor and batch goes through here: the palette commands, code actions, other extensions.
    executeCommand: async (command, args, next) => {
      if (command !== REFACTOR && command !== REFACTOR_EACH) return next(command, args);
      const uri: string = args[0]?.uri ?? "";
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
          { location: vscode.ProgressLocation.Notification, title: params.title, cancellable: params.cancellable },
          (bar, cancel) =>
            new Promise<void>((resolve) => {
              let reported = 0;
              cancel.onCancellationRequested(() =>
                client?.sendNotification(WorkDoneProgressCancelNotification.type, { token }),
              );
              const report = (percentage?: number, message?: string): void => {
                const increment = percentage === undefined ? undefined : Math.max(0, percentage - reported);
                reported += increment ?? 0;
                bar.report({ message, increment }); // the status bar takes its figures from refactorLsp/progress
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
    synchronize: { configurationSection: SECTION },
    // The settings themselves arrive through workspace/configuration, per folder and always current.
    // configurationTrusted: those answers never carry a repository's routing values, nor raise what a
    // refactor may cost (see the middleware).
    initializationOptions: {
      workspaceTrusted: vscode.workspace.isTrusted,
      configurationTrusted: true,
      progressFields: true, // the status bar reads refactorLsp/progress (the server sends it only when asked)
      refactorLsp: {},
    },
    outputChannel: output,
    middleware,
  };
  client = new LanguageClient(SECTION, "Refactor LSP", serverOptions(), clientOptions);
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
