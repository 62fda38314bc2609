import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { applyClipboard, refactorEach, refactorWithPrediction, REVIEW_COMMANDS } from "../../src/commands";
import { LanguageClient } from "./languageclient-stub";
import { env, executed, window } from "./vscode-stub";

const URI = "file:///project/app.py";
const SELECTION = { start: { line: 3, character: 0 }, end: { line: 9, character: 0 } };
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

/** An editor on app.py with lines 4-9 selected, the input box answering `instruction`, and a client
 *  whose converter writes LSP as the real one does. */
function setUp(instruction: string | undefined): LanguageClient {
  window.activeTextEditor = {
    document: { uri: { scheme: "file", toString: () => URI } },
    selection: { isEmpty: false, ...SELECTION },
  } as never;
  window.inputBox.answer = instruction;
  window.inputBox.shown.length = 0;
  executed.length = 0;
  const client = new LanguageClient("refactorLsp", "Refactor LSP", {}, {});
  Object.assign(client, {
    code2ProtocolConverter: {
      asUri: (uri: { toString(): string }) => uri.toString(),
      asRange: (r: { start: unknown; end: unknown }) => ({ start: r.start, end: r.end }),
    },
  });
  return client;
}

test("a (Review) command asks the server for the Refactor Preview (review: preview); the plain one does not", async () => {
  const sent = async (run: (client: never) => Promise<void>) => {
    const client = setUp("rename data to content");
    await run(client as never);
    return { executed: [...executed], boxes: [...window.inputBox.shown] };
  };
  const ask = { uri: URI, range: SELECTION, instruction: "rename data to content" };
  const plain = await sent((client) => refactorWithPrediction(client));
  assert.deepEqual(plain.executed, [{ command: "refactorLsp.refactor", args: [ask] }]);
  assert.equal(plain.boxes[0].title, "Refactor with Prediction");
  const reviewed = await sent((client) => refactorWithPrediction(client, true));
  assert.deepEqual(reviewed.executed, [{ command: "refactorLsp.refactor", args: [{ ...ask, review: "preview" }] }]);
  assert.equal(reviewed.boxes[0].title, "Refactor with Prediction (Review)");

  const each = { uri: URI, instruction: "rename data to content" };
  assert.deepEqual((await sent((client) => refactorEach(client, "file", true))).executed, [
    { command: "refactorLsp.refactorEach", args: [{ ...each, targets: "file", review: "preview" }] },
  ]);
  assert.deepEqual((await sent((client) => refactorEach(client, "selection", true))).executed, [
    { command: "refactorLsp.refactorEach", args: [{ ...each, range: SELECTION, targets: "selection", review: "preview" }] },
  ]);
  assert.deepEqual((await sent((client) => refactorEach(client, "file"))).executed, [
    { command: "refactorLsp.refactorEach", args: [{ ...each, targets: "file" }] },
  ]);

  env.clipboard.text = "def load(path):\n    return open(path).read()\n";
  assert.deepEqual((await sent((client) => applyClipboard(client, true))).executed, [
    { command: "refactorLsp.applySnippet", args: [{ uri: URI, range: SELECTION, snippet: env.clipboard.text, review: "preview" }] },
  ]);
  assert.deepEqual((await sent((client) => applyClipboard(client))).executed, [
    { command: "refactorLsp.applySnippet", args: [{ uri: URI, range: SELECTION, snippet: env.clipboard.text }] },
  ]);
});

test("a (Review) command dismissed at its input box sends nothing", async () => {
  const client = setUp(undefined);
  await refactorWithPrediction(client as never, true);
  await refactorEach(client as never, "file", true);
  assert.deepEqual(executed, []);
});

test("the (Review) commands are declared with ids of the extension's own, never the server's", () => {
  const commands: { command: string; title: string; enablement?: string }[] = manifest.contributes.commands;
  const titles = {
    [REVIEW_COMMANDS.refactor]: "Refactor with Prediction (Review)...",
    [REVIEW_COMMANDS.eachInFile]: "Refactor with Prediction (Review): Each Definition in This File...",
    [REVIEW_COMMANDS.eachInSelection]: "Refactor with Prediction (Review): Each Definition in the Selection...",
    [REVIEW_COMMANDS.applyClipboard]: "Apply Clipboard with Prediction (Review)",
  };
  for (const [id, title] of Object.entries(titles)) {
    assert.equal(commands.find((c) => c.command === id)?.title, title, id);
  }
  assert.equal(commands.find((c) => c.command === REVIEW_COMMANDS.eachInSelection)?.enablement, "editorHasSelection");
  // vscode-languageclient registers the server's own command ids (refactorLsp.refactor, ...): the same id
  // registered by the extension too would stop the client.
  for (const { command } of commands) assert.match(command, /^refactorLsp\.vscode\./, command);
  assert.ok(manifest.contributes.menus["editor/context"].some((m: { command: string }) => m.command === REVIEW_COMMANDS.refactor));
});
