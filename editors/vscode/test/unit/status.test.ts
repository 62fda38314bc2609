import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { cancel } from "../../src/commands";
import { RefactorProgress, RefactorStats } from "../../src/format";
import { RefactorStatus } from "../../src/status";
import { context, created, executed, MarkdownString, StubStatusBarItem, window } from "./vscode-stub"; // `vscode` in src/

const URI = "file:///project/app.py";
const OTHER = "file:///project/other.py";
// out/test/status.test.cjs → the extension's package.json
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

function statusBar(): { status: RefactorStatus; item: StubStatusBarItem } {
  const status = new RefactorStatus();
  return { status, item: created[created.length - 1] };
}

// The message says other figures than the fields: the status bar must show the fields.
const progress: RefactorProgress = {
  token: "refactor-lsp/1",
  uri: URI,
  percentage: 42,
  generated_chars: 120,
  predicted_chars: 285,
  elapsed_s: 0.6,
  tokens_per_s: 180.4,
  message: "7/9 chars · 999 tok/s on fake (fake-model)",
};

const stats: RefactorStats = {
  uri: URI,
  backend: "fake",
  model: "fake-model",
  prediction: true,
  latency_ms: 2100,
  tokens_per_s: 196.4,
  acceptance_rate: 0.88,
  accepted_prediction_tokens: 362,
  rejected_prediction_tokens: 50,
  applied: true,
  // The server's texts, deliberately unlike the fields: the status bar must show these as they are.
  summary: "refactor 2.1 s · 412 tok · 196 tok/s · prediction 88% accepted (362 accepted, 50 rejected)",
  status_text: "123 tok/s · 45% accepted",
};

test("before any refactor: an idle item that opens the statistics", () => {
  const { item } = statusBar();
  assert.equal(item.text, "$(zap) refactor");
  assert.equal(item.command, "refactorLsp.vscode.showStats");
  assert.ok(item.visible);
});

test("while running: the percentage and speed come from refactorLsp/progress's fields, not its message", () => {
  const { status, item } = statusBar();
  status.begin(URI);
  assert.equal(item.text, "$(sync~spin) refactor…");
  assert.equal(context.get("refactorLsp.running"), true);
  assert.equal(item.command, "refactorLsp.vscode.cancel");
  status.report(progress);
  assert.equal(item.text, "$(sync~spin) refactor… 42% · 180 tok/s");
  status.report({ ...progress, percentage: 50, tokens_per_s: null, message: "8/9 chars · 321 tok/s on fake" });
  assert.equal(item.text, "$(sync~spin) refactor… 50%"); // no rate yet: none shown, whatever the message says
  status.end(URI);
  assert.equal(context.get("refactorLsp.running"), false);
  status.report(progress); // late, after the refactor: ignored
  assert.equal(item.text, "$(zap) refactor");
});

test("after: the server's status_text with the icon, and its figures in the tooltip", () => {
  const { status, item } = statusBar();
  status.begin(URI);
  status.report(progress);
  status.stats(stats);
  status.end(URI);
  assert.equal(item.text, "$(zap) 123 tok/s · 45% accepted");
  assert.equal(item.accessibilityInformation?.label, "last refactor: 123 tok/s · 45% accepted");
  assert.equal(item.command, "refactorLsp.vscode.showStats");
  assert.ok(item.tooltip instanceof MarkdownString);
  assert.ok(item.tooltip.value.includes("| Speed | 196 tok/s |"), item.tooltip.value);
  status.stats({ ...stats, applied: false });
  assert.equal(item.text, "$(circle-slash) 123 tok/s · 45% accepted");
});

test("a batch: the spinner shows the definitions done, and after, its status_text", () => {
  const { status, item } = statusBar();
  status.begin(URI);
  status.report({ ...progress, percentage: 40, tokens_per_s: 310.2, done: 3, total: 12 });
  assert.equal(item.text, "$(sync~spin) refactor… 3/12 · 40% · 310 tok/s");
  status.stats({ ...stats, applied: null, status_text: "11/12 · 310 tok/s together · 88% accepted" });
  status.end(URI);
  assert.equal(item.text, "$(zap) 11/12 · 310 tok/s together · 88% accepted");
});

test("a new refactor starts without the previous one's figures", () => {
  const { status, item } = statusBar();
  status.begin(URI);
  status.report(progress);
  status.end(URI);
  status.begin(URI);
  assert.equal(item.text, "$(sync~spin) refactor…");
  status.end(URI);
  status.dispose();
  assert.ok(item.disposed);
});

test("Escape is bound only while a refactor runs on the active document, and cancels only that one", async () => {
  const binding = manifest.contributes.keybindings.find((k: { key: string }) => k.key === "escape");
  assert.match(binding.when, /(^|&& )refactorLsp\.runningHere( &&|$)/);
  assert.doesNotMatch(binding.when, /refactorLsp\.running( |$)/); // running somewhere is not enough
  assert.deepEqual(binding.args, { activeDocumentOnly: true });
  const { status } = statusBar();
  window.setActive(OTHER);
  status.begin(URI);
  assert.equal(context.get("refactorLsp.runningHere"), false); // running, but in another editor
  const client = { isRunning: () => true, code2ProtocolConverter: { asUri: (u: { toString(): string }) => u.toString() } };
  executed.length = 0;
  await cancel(client as never, status, binding.args);
  assert.deepEqual(executed, []); // Escape here leaves app.py's refactor running
  await cancel(client as never, status); // the palette's Cancel Refactor: the one running
  assert.deepEqual(executed, [{ command: "refactorLsp.cancel", args: [{}] }]);
  window.setActive(URI);
  assert.equal(context.get("refactorLsp.runningHere"), true);
  executed.length = 0;
  await cancel(client as never, status, binding.args);
  assert.deepEqual(executed, [{ command: "refactorLsp.cancel", args: [{ uri: URI }] }]);
  status.end(URI);
  assert.equal(context.get("refactorLsp.runningHere"), false);
  window.setActive(undefined);
  status.dispose();
});
