import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import type { LogOutputChannel } from "vscode";
import type { Middleware } from "vscode-languageclient/node";
import { createClient } from "../../src/client";
import { clipboardCode, MAX_SNIPPET_CHARS } from "../../src/clipboard";
import { APPLY_CLIPBOARD, applyClipboard, ApplyClipboardActions } from "../../src/commands";
import { RefactorStatus } from "../../src/status";
import { LanguageClient } from "./languageclient-stub";
import { CodeActionTriggerKind, env, executed, shown, window } from "./vscode-stub";

const URI = "file:///project/app.py";
const SNIPPET = "class Store:\n    # ... existing code ...\n\n    def get(self, key):\n        return self.items.get(key)\n";

test("the clipboard holds code: several lines, or code's punctuation; not a word, a link or a path", () => {
  assert.equal(clipboardCode(SNIPPET), SNIPPET);
  assert.equal(clipboardCode("return total * 2;"), "return total * 2;");
  for (const text of ["", "   \n", "hello", "https://example.com/a?b=c", "/home/me/notes.txt", "a\u0000b\nc"]) {
    assert.equal(clipboardCode(text), undefined, JSON.stringify(text));
  }
  assert.equal(clipboardCode(`x = 1\n${"#".repeat(MAX_SNIPPET_CHARS)}`), undefined);
});

/** An editor on app.py with a cursor, and a client whose converter writes LSP as the real one does. */
function setUp(clipboard: string): { client: LanguageClient } {
  window.activeTextEditor = {
    document: { uri: { scheme: "file", toString: () => URI } },
    selection: { isEmpty: true, start: { line: 3, character: 4 }, end: { line: 3, character: 4 } },
  } as never;
  env.clipboard.text = clipboard;
  executed.length = 0;
  shown.length = 0;
  const client = new LanguageClient("refactorLsp", "Refactor LSP", {}, {});
  Object.assign(client, {
    code2ProtocolConverter: {
      asUri: (uri: { toString(): string }) => uri.toString(),
      asRange: (r: { start: unknown; end: unknown }) => ({ start: r.start, end: r.end }),
    },
  });
  return { client };
}

test("Apply Clipboard with Prediction sends the clipboard's code, the document and the cursor to the server", async () => {
  const { client } = setUp(SNIPPET);
  await applyClipboard(client as never);
  assert.deepEqual(executed, [
    {
      command: "refactorLsp.applySnippet",
      args: [{ uri: URI, range: { start: { line: 3, character: 4 }, end: { line: 3, character: 4 } }, snippet: SNIPPET }],
    },
  ]);
});

test("with no code on the clipboard it says so and sends nothing", async () => {
  const { client } = setUp("hello");
  await applyClipboard(client as never);
  assert.deepEqual(executed, []);
  assert.deepEqual(shown, [
    { level: "warning", message: "Apply Clipboard with Prediction: the clipboard holds no code; copy the snippet first." },
  ]);
});

test("the code action is offered, when the menu is asked for, while the clipboard holds code", async () => {
  const provider = new ApplyClipboardActions();
  const document = { uri: { scheme: "file" } } as never;
  const invoked = { triggerKind: CodeActionTriggerKind.Invoke } as never;
  const offer = (doc: unknown, context: unknown) => provider.provideCodeActions(doc as never, undefined as never, context as never);
  env.clipboard.text = SNIPPET;
  const [action] = await offer(document, invoked);
  assert.equal(action.title, "Apply Clipboard with Prediction");
  assert.equal(action.kind?.value, "refactor.rewrite.prediction.apply");
  assert.deepEqual(action.command, { title: "Apply Clipboard with Prediction", command: APPLY_CLIPBOARD });
  env.clipboard.text = "https://example.com";
  assert.deepEqual(await offer(document, invoked), []);
  env.clipboard.text = SNIPPET;
  assert.deepEqual(await offer({ uri: { scheme: "untitled" } }, invoked), []);
  // The lightbulb asks on every cursor move: the clipboard is not read for it (a browser shows an error each time).
  let reads = 0;
  const read = env.clipboard.readText;
  env.clipboard.readText = async function () {
    reads++;
    return read.call(this);
  };
  assert.deepEqual(await offer(document, { triggerKind: CodeActionTriggerKind.Automatic }), []);
  assert.equal(reads, 0);
  env.clipboard.readText = read;
});

test("while an apply runs on a document, the server may edit that document (and only then)", async () => {
  const status = new RefactorStatus();
  const output = { info() {}, warn() {}, error() {} } as unknown as LogOutputChannel;
  createClient(output, status, { command: process.execPath, args: [], cwd: "/", env: {} });
  const made = LanguageClient.made[LanguageClient.made.length - 1];
  const middleware = made.clientOptions.middleware as Middleware;
  const edit = { edit: { documentChanges: [{ textDocument: { uri: URI, version: 1 }, edits: [] }] } };
  const apply = async () => ({ applied: true });
  const handleApplyEdit = middleware.workspace!.handleApplyEdit!;
  assert.equal(((await handleApplyEdit(edit, apply as never)) as { applied: boolean }).applied, false);
  let finish = (): void => {};
  const running = middleware.executeCommand!("refactorLsp.applySnippet", [{ uri: URI, snippet: SNIPPET }], () => new Promise<void>((resolve) => (finish = resolve)));
  assert.equal(status.isRunning(URI), true);
  assert.equal(((await handleApplyEdit(edit, apply as never)) as { applied: boolean }).applied, true);
  finish();
  await running;
  assert.equal(status.isRunning(URI), false);
});

test("the command has a title, a keybinding and a place in the editor's menu", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
  const { commands, keybindings, menus } = manifest.contributes;
  assert.ok(commands.some((c: { command: string; title: string }) => c.command === APPLY_CLIPBOARD && c.title === "Apply Clipboard with Prediction"));
  assert.ok(keybindings.some((k: { command: string; key: string }) => k.command === APPLY_CLIPBOARD && k.key === "ctrl+alt+v"));
  assert.ok(menus["editor/context"].some((m: { command: string }) => m.command === APPLY_CLIPBOARD));
  // No other binding of ours takes the same key.
  assert.equal(keybindings.filter((k: { key: string }) => k.key === "ctrl+alt+v").length, 1);
});
