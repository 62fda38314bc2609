import * as vscode from "vscode";
import { progressText, RefactorProgress, RefactorStats, statusText, statusTooltip } from "./format";

export const SHOW_STATS = "refactorLsp.vscode.showStats";
export const CANCEL = "refactorLsp.vscode.cancel";
const RUNNING_CONTEXT = "refactorLsp.running";
/** A refactor runs on the active editor's document: Escape cancels it (package.json), nowhere else. */
const RUNNING_HERE_CONTEXT = "refactorLsp.runningHere";

/** The status bar item: the last refactor's speed and acceptance, or a spinner while one runs. */
export class RefactorStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly running = new Map<string, number>(); // document uri → refactors running on it
  private last: RefactorStats | undefined;
  private progress: RefactorProgress | undefined; // the latest `refactorLsp/progress` of a running refactor

  private readonly listeners: vscode.Disposable[];
  private here: boolean | undefined; // the last value of RUNNING_HERE_CONTEXT

  constructor() {
    this.item = vscode.window.createStatusBarItem("refactorLsp.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "Refactor with Prediction";
    this.listeners = [vscode.window.onDidChangeActiveTextEditor(() => this.renderHere())];
    this.render();
    this.item.show();
  }

  /** A `refactorLsp.refactor` command started on `uri`. */
  begin(uri: string): void {
    this.running.set(uri, (this.running.get(uri) ?? 0) + 1);
    this.progress = undefined;
    this.render();
  }

  end(uri: string): void {
    const count = (this.running.get(uri) ?? 1) - 1;
    if (count > 0) this.running.set(uri, count);
    else this.running.delete(uri);
    if (this.progress?.uri === uri) this.progress = undefined;
    this.render();
  }

  isRunning(uri: string): boolean {
    return this.running.has(uri);
  }

  /** The `refactorLsp/progress` notification: the live figures, read from its fields (never its message). */
  report(progress: RefactorProgress): void {
    if (this.running.size === 0) return; // late, for a refactor already over
    this.progress = progress;
    this.render();
  }

  /** The `refactorLsp/stats` notification. */
  stats(stats: RefactorStats): void {
    this.last = stats;
    this.render();
  }

  private renderHere(): void {
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    const here = uri !== undefined && this.running.has(uri);
    if (here !== this.here) void vscode.commands.executeCommand("setContext", RUNNING_HERE_CONTEXT, here);
    this.here = here;
  }

  private render(): void {
    const busy = this.running.size > 0;
    void vscode.commands.executeCommand("setContext", RUNNING_CONTEXT, busy);
    this.renderHere();
    if (busy) {
      this.item.text = `$(sync~spin) refactor…${this.progress ? " " + progressText(this.progress) : ""}`;
      this.item.tooltip = "A refactor is running. Click, or press Escape in the editor, to cancel it.";
      this.item.command = CANCEL;
      this.item.accessibilityInformation = { label: "refactor running" };
    } else if (this.last) {
      this.item.text = statusText(this.last);
      const tooltip = new vscode.MarkdownString(statusTooltip(this.last));
      tooltip.supportThemeIcons = true;
      this.item.tooltip = tooltip;
      this.item.command = SHOW_STATS;
      this.item.accessibilityInformation = { label: `last refactor: ${this.item.text.replace(/\$\([^)]*\) /, "")}` };
    } else {
      this.item.text = "$(zap) refactor";
      this.item.tooltip = "Refactor with Prediction: no refactor yet. Click for the statistics of past refactors.";
      this.item.command = SHOW_STATS;
      this.item.accessibilityInformation = { label: "refactor-lsp: no refactor yet" };
    }
  }

  dispose(): void {
    this.item.dispose();
    for (const listener of this.listeners) listener.dispose();
  }
}
