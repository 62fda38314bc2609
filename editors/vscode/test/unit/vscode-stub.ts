// The little of the `vscode` API that src/ uses, for unit tests outside an editor (esbuild.mjs aliases
// `vscode` to this file when it bundles test/unit/). Tests read what the user would see from it: the
// status bar item, context keys, messages shown, progress notifications.

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

/** A status bar item is plain data: tests read what the user would see from `created`. */
export class StubStatusBarItem {
  text = "";
  name: string | undefined;
  tooltip: string | MarkdownString | undefined;
  command: string | undefined;
  accessibilityInformation: { label: string } | undefined;
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  dispose(): void {
    this.disposed = true;
  }
}

export const created: StubStatusBarItem[] = [];

/** What `vscode.Uri` is to src/: a parsed URI that prints as VS Code prints it. */
export class Uri {
  private constructor(private readonly text: string) {}
  static parse(value: string): Uri {
    return new Uri(new URL(value).href);
  }
  toString(): string {
    return this.text;
  }
}

/** Messages shown (`showInformationMessage` and co.), and progress notifications with their reports. */
export const shown: { level: "info" | "warning" | "error"; message: string }[] = [];
export const progressShown: { title?: string; reports: { message?: string; increment?: number }[] }[] = [];

const listeners: ((editor: unknown) => void)[] = [];

export const window = {
  activeTextEditor: undefined as { document: { uri: Uri } } | undefined,
  /** Tests switch the active editor with this: listeners hear of it as VS Code's would. */
  setActive(uri: string | undefined): void {
    this.activeTextEditor = uri === undefined ? undefined : { document: { uri: Uri.parse(uri) } };
    for (const listener of listeners) listener(this.activeTextEditor);
  },
  onDidChangeActiveTextEditor(listener: (editor: unknown) => void): { dispose(): void } {
    listeners.push(listener);
    return { dispose: () => listeners.splice(listeners.indexOf(listener), 1) };
  },
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): StubStatusBarItem {
    const item = new StubStatusBarItem(id, alignment, priority);
    created.push(item);
    return item;
  },
  async showInformationMessage(message: string): Promise<undefined> {
    shown.push({ level: "info", message });
    return undefined;
  },
  async showWarningMessage(message: string): Promise<undefined> {
    shown.push({ level: "warning", message });
    return undefined;
  },
  async showErrorMessage(message: string): Promise<undefined> {
    shown.push({ level: "error", message });
    return undefined;
  },
  /** The instruction input box: tests set `answer` (undefined: dismissed) and read what it showed. */
  inputBox: { answer: undefined as string | undefined, shown: [] as { title?: string; prompt?: string }[] },
  async showInputBox(options: { title?: string; prompt?: string }): Promise<string | undefined> {
    this.inputBox.shown.push({ title: options.title, prompt: options.prompt });
    return this.inputBox.answer;
  },
  async withProgress<R>(
    options: { title?: string },
    task: (bar: { report: (value: { message?: string; increment?: number }) => void }, cancel: unknown) => Promise<R>,
  ): Promise<R> {
    const entry = { title: options.title, reports: [] as { message?: string; increment?: number }[] };
    progressShown.push(entry);
    const cancel = { onCancellationRequested: () => ({ dispose() {} }) };
    return task({ report: (value) => entry.reports.push(value) }, cancel);
  },
};

/** Settings by scope, as `inspect()` reports them: tests fill `settings`. */
export const settings: Record<string, { globalValue?: unknown; workspaceValue?: unknown; defaultValue?: unknown }> = {};

export const workspace = {
  isTrusted: true,
  getConfiguration(section: string) {
    const full = (key: string) => `${section}.${key}`;
    return {
      inspect: (key: string) => settings[full(key)],
      get: (key: string) => {
        const s = settings[full(key)] ?? {};
        return s.workspaceValue ?? s.globalValue ?? s.defaultValue;
      },
    };
  },
};

/** Context keys set with `setContext`, and every other command executed. */
export const context = new Map<string, unknown>();
export const executed: { command: string; args: unknown[] }[] = [];

export const commands = {
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    if (command === "setContext") context.set(String(args[0]), args[1]);
    else executed.push({ command, args });
    return undefined;
  },
};

export class MarkdownString {
  supportThemeIcons = false;
  constructor(readonly value = "") {}
}

/** The clipboard: tests put text on it. */
export const env = {
  clipboard: {
    text: "",
    async readText(): Promise<string> {
      return this.text;
    },
  },
};

/** Code action kinds as VS Code composes them (`refactor.rewrite` + `.prediction`). */
export class CodeActionKind {
  static readonly RefactorRewrite = new CodeActionKind("refactor.rewrite");
  constructor(readonly value: string) {}
  append(part: string): CodeActionKind {
    return new CodeActionKind(`${this.value}.${part}`);
  }
}

export class CodeAction {
  command: { title: string; command: string; arguments?: unknown[] } | undefined;
  constructor(
    readonly title: string,
    readonly kind?: CodeActionKind,
  ) {}
}

export enum CodeActionTriggerKind {
  Invoke = 1,
  Automatic = 2,
}
