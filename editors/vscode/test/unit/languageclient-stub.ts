// The little of `vscode-languageclient/node` that src/client.ts uses, for unit tests outside an editor
// (esbuild.mjs aliases it to this file when it bundles test/unit/): a client that records how it was
// made, so tests can drive its middleware and its notification handlers as the server would.

export enum TransportKind {
  stdio = 0,
}

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}

export enum MessageType {
  Error = 1,
  Warning = 2,
  Info = 3,
  Log = 4,
}

export const CancellationToken = { None: { isCancellationRequested: false } };
export const ShowMessageNotification = { type: { method: "window/showMessage" } };
export const WorkDoneProgressCancelNotification = { type: { method: "window/workDoneProgress/cancel" } };
export const DidChangeConfigurationNotification = { type: { method: "workspace/didChangeConfiguration" } };

export class ResponseError extends Error {}

type Handler = (params: never) => unknown;

export class LanguageClient {
  static made: LanguageClient[] = [];
  readonly handlers = new Map<string, Handler>();
  readonly sent: { method: string; params: unknown }[] = [];

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: unknown,
    readonly clientOptions: { middleware?: unknown; synchronize?: unknown; [key: string]: unknown },
  ) {
    LanguageClient.made.push(this);
  }

  onNotification(type: string | { method: string }, handler: Handler): { dispose(): void } {
    this.handlers.set(typeof type === "string" ? type : type.method, handler);
    return { dispose() {} };
  }

  onDidChangeState(): { dispose(): void } {
    return { dispose() {} };
  }

  async sendNotification(type: { method: string }, params: unknown): Promise<void> {
    this.sent.push({ method: type.method, params });
  }

  isRunning(): boolean {
    return true;
  }
}
