#!/usr/bin/env node
// Ground truth for benchmarks/scope.py: the definitions of JS/TS files, from the TypeScript compiler's own parser.
//
// Input (stdin): a JSON array of file paths. Output (stdout): one JSON line per file, in input order:
//   {"path", "lines", "parse_errors", "defs": [[kind, first, header, last, open, decorator], ...]}
// or {"path", "error"} when the file cannot be read. Lines are 0-based and counted at \r\n, \r and \n only (as LSP
// and the Python side count them; TypeScript also breaks at U+2028/U+2029, so its own line numbers are not used).
//   first: the first line of the span: node.getStart() (decorators included, leading trivia skipped), then up over
//          the contiguous comment-only lines directly above (no blank line between; a blank line inside a /* */
//          comment is part of it). Where the compiler attaches a JSDoc to the node across blank lines (node.jsDoc:
//          the last `/** */` of its leading trivia, as getJSDocCommentsAndTags takes it), the span starts at that
//          JSDoc instead, and again up over the comment-only lines directly above it; except a JSDoc about the
//          file (@license, @file, @module, a copyright, ...) or one that declares a type of its own (@typedef,
//          @callback), which is no part of the definition (as lsp_server/regions/leading.py rules);
//   header: the line of the keyword or name, after the decorators and comments (cursor position "signature");
//   last: the line of node.getEnd();
//   open: the line of the `{` that opens the body, or -1 (an arrow function with an expression body);
//   decorator: the first decorator's line, or -1.
// Usage: node ts_truth.js [path/to/typescript] < files.json

"use strict";

const fs = require("fs");
const path = require("path");

const tsPath = process.argv[2] || path.resolve(__dirname, "../../editors/vscode/node_modules/typescript");
const ts = require(tsPath);
const K = ts.SyntaxKind;

function scriptKind(file) {
  if (file.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (file.endsWith(".jsx")) return ts.ScriptKind.JSX;
  if (/\.[mc]?ts$/.test(file)) return ts.ScriptKind.TS;
  return ts.ScriptKind.JS;
}

// Where each line starts, breaking at \r\n, \r and \n only.
function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    } else if (c === 10) {
      starts.push(i + 1);
    }
  }
  return starts;
}

function lineOf(starts, pos) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// ts.SyntaxKind[kind] can answer an alias (VariableStatement is also FirstStatement): name the kinds we use.
const KIND_NAMES = Object.fromEntries(
  [
    "FunctionDeclaration",
    "MethodDeclaration",
    "Constructor",
    "GetAccessor",
    "SetAccessor",
    "ClassDeclaration",
    "InterfaceDeclaration",
    "EnumDeclaration",
    "ModuleDeclaration",
    "PropertyDeclaration",
    "PropertyAssignment",
    "VariableStatement",
    "ExpressionStatement",
  ].map((name) => [K[name], name]),
);

const isFunction = (n) => !!n && (n.kind === K.ArrowFunction || n.kind === K.FunctionExpression);

// The node whose `{` opens the definition's body, or undefined when there is none.
function bodyOwner(node) {
  switch (node.kind) {
    case K.FunctionDeclaration:
    case K.MethodDeclaration:
    case K.Constructor:
    case K.GetAccessor:
    case K.SetAccessor:
      return node.body;
    case K.ClassDeclaration:
    case K.ClassExpression:
    case K.InterfaceDeclaration:
    case K.EnumDeclaration:
      return node;
    case K.ModuleDeclaration: {
      let body = node.body;
      // `namespace A.B {`: the body of A is the declaration of B.
      while (body && body.kind === K.ModuleDeclaration) body = body.body;
      return body;
    }
    case K.PropertyDeclaration:
    case K.PropertyAssignment:
      return functionBody(node.initializer);
    case K.VariableStatement:
      return functionBody(node.declarationList.declarations[0].initializer);
    case K.ExpressionStatement:
      return functionBody(node.expression.right);
  }
  return undefined;
}

function functionBody(fn) {
  if (fn.kind === K.ClassExpression) return fn;
  return fn.body && fn.body.kind === K.Block ? fn.body : undefined;
}

function openBrace(owner, sf) {
  if (!owner) return -1;
  if (owner.kind === K.Block || owner.kind === K.ModuleBlock) return owner.getStart(sf);
  const brace = owner.getChildren(sf).find((c) => c.kind === K.OpenBraceToken);
  return brace ? brace.getStart(sf) : -1;
}

function isDefinition(node) {
  switch (node.kind) {
    case K.FunctionDeclaration:
    case K.MethodDeclaration:
    case K.Constructor:
    case K.GetAccessor:
    case K.SetAccessor:
      // Overload signatures, abstract and ambient declarations have no body to rewrite.
      return !!node.body;
    case K.ClassDeclaration:
    case K.InterfaceDeclaration:
    case K.EnumDeclaration:
      return true;
    case K.ModuleDeclaration:
      return !!node.body;
    case K.PropertyDeclaration:
    case K.PropertyAssignment:
      return isFunction(node.initializer);
    case K.VariableStatement: {
      const decls = node.declarationList.declarations;
      const init = decls.length === 1 ? decls[0].initializer : undefined;
      return isFunction(init) || (!!init && init.kind === K.ClassExpression);
    }
    case K.ExpressionStatement: {
      const e = node.expression;
      return e.kind === K.BinaryExpression && e.operatorToken.kind === K.EqualsToken && isFunction(e.right);
    }
  }
  return false;
}

// Lines wholly made of comments and whitespace, found from the comment ranges of the node's leading trivia: a line
// joins the block when it lies inside that trivia, every non-blank character is in a comment, and it is not blank
// (unless it lies inside a block comment).
function firstLineWithComments(text, starts, node, sf) {
  const fullStart = node.getFullStart();
  let line = lineOf(starts, node.getStart(sf));
  const doc = attachedJSDoc(node, text);
  if (doc) line = Math.min(line, lineOf(starts, doc.pos));
  // Trailing ranges too: the rest of a block comment that starts after the previous token can fill whole lines.
  const ranges = (ts.getTrailingCommentRanges(text, fullStart) || []).concat(
    ts.getLeadingCommentRanges(text, fullStart) || [],
  );
  const inComment = (pos) => ranges.some((r) => r.pos <= pos && pos < r.end);
  while (line > 0) {
    const a = starts[line - 1];
    const b = starts[line];
    if (a < fullStart) break; // the line holds code before the node's trivia
    let nonBlank = false;
    let allComment = true;
    for (let i = a; i < b; i++) {
      const c = text[i];
      if (c === " " || c === "\t" || c === "\r" || c === "\n" || c === "\v" || c === "\f" || c === "\uFEFF") continue;
      nonBlank = true;
      if (!inComment(i)) {
        allComment = false;
        break;
      }
    }
    // A blank line inside a block comment belongs to the comment: it is no gap between comment and definition.
    if (!allComment || (!nonBlank && !inComment(a))) break;
    line--;
  }
  return line;
}

// JSDoc tags that make a comment about the file, not the definition that happens to come first, or the
// declaration of a type of its own: such a comment is no part of the definition (lsp_server/regions/leading.py).
const NOT_THE_DEFINITIONS = new Set([
  "license",
  "preserve",
  "file",
  "fileoverview",
  "overview",
  "module",
  "packageDocumentation",
  "copyright",
  "typedef",
  "callback",
]);

// The JSDoc the compiler attaches to the node (the last of node.jsDoc, as getJSDocCommentsAndTags takes it), or
// undefined when there is none or it is about the file or declares a type of its own.
function attachedJSDoc(node, text) {
  const docs = node.jsDoc;
  if (!docs || !docs.length) return undefined;
  const doc = docs[docs.length - 1];
  if ((doc.tags || []).some((tag) => NOT_THE_DEFINITIONS.has(tag.tagName.escapedText || tag.tagName.text))) {
    return undefined;
  }
  if (/\bcopyright\b|SPDX-License-Identifier/i.test(text.slice(doc.pos, doc.end))) return undefined;
  return doc;
}

function headerPos(node, text, sf) {
  const decorators = ts.canHaveDecorators(node) ? ts.getDecorators(node) : undefined;
  if (decorators && decorators.length) return ts.skipTrivia(text, decorators[decorators.length - 1].end);
  return node.getStart(sf);
}

function truth(file) {
  const text = fs.readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  const starts = lineStarts(text);
  const defs = [];
  const visit = (node) => {
    if (isDefinition(node)) {
      const decorators = ts.canHaveDecorators(node) ? ts.getDecorators(node) : undefined;
      const open = openBrace(bodyOwner(node), sf);
      defs.push([
        KIND_NAMES[node.kind],
        firstLineWithComments(text, starts, node, sf),
        lineOf(starts, headerPos(node, text, sf)),
        lineOf(starts, node.getEnd()),
        open < 0 ? -1 : lineOf(starts, open),
        decorators && decorators.length ? lineOf(starts, decorators[0].getStart(sf)) : -1,
      ]);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { path: file, lines: starts.length, parse_errors: sf.parseDiagnostics.length, defs };
}

const files = JSON.parse(fs.readFileSync(0, "utf8"));
for (const file of files) {
  let result;
  try {
    result = truth(file);
  } catch (err) {
    result = { path: file, error: String(err && err.message ? err.message : err) };
  }
  fs.writeSync(1, JSON.stringify(result) + "\n");
}
