#!/usr/bin/env node
// Ground truth for benchmarks/check_corpus.py: whether a JS/TS/JSX/TSX source parses, by the TypeScript
// compiler's own parser (its syntax diagnostics only: no type checking, no module resolution).
// Protocol (stdin, stdout): a line "LENGTH KIND" (KIND: js, jsx, ts, tsx; LENGTH in UTF-8 bytes), then the source;
// the answer is one line: "ok", or "error LINE MESSAGE" (LINE 1-based).
// Usage: node parse_ts.js path/to/typescript
"use strict";

const ts = require(process.argv[2]);
const KINDS = { js: ts.ScriptKind.JS, jsx: ts.ScriptKind.JSX, ts: ts.ScriptKind.TS, tsx: ts.ScriptKind.TSX };
let buffer = Buffer.alloc(0);

function answer(kind, source) {
  const file = ts.createSourceFile(`x.${kind}`, source, ts.ScriptTarget.Latest, true, KINDS[kind]);
  const found = file.parseDiagnostics;
  if (!found.length) return "ok";
  const line = file.getLineAndCharacterOfPosition(found[0].start).line + 1;
  return `error ${line} ${ts.flattenDiagnosticMessageText(found[0].messageText, " ").replace(/\n/g, " ")}`;
}

process.stdin.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (;;) {
    const newline = buffer.indexOf(10);
    if (newline < 0) return;
    const [length, kind] = buffer.subarray(0, newline).toString().split(" ");
    const end = newline + 1 + Number(length);
    if (buffer.length < end) return;
    const source = buffer.subarray(newline + 1, end).toString("utf8");
    buffer = buffer.subarray(end);
    process.stdout.write(answer(kind, source) + "\n");
  }
});
