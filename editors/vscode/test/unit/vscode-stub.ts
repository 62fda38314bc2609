// The little of the `vscode` API that src/status.ts uses, for unit tests outside an editor
// (esbuild.mjs aliases `vscode` to this file when it bundles test/unit/).

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
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

export const window = {
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): StubStatusBarItem {
    const item = new StubStatusBarItem(id, alignment, priority);
    created.push(item);
    return item;
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
