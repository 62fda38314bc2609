// What the server may make VS Code do (pure: no `vscode` import, unit-tested).
//
// Its texts quote what a repository, a backend or a model wrote (a key name, an action title, an
// instruction comment), and VS Code turns `[label](command:id?args)` in a notification or a progress
// title into a link that runs any command with its arguments: they are shown as plain text. Its
// edits are accepted for the documents being refactored only: text edits, no other file, no file
// created, renamed or deleted.

/** `text` with no link syntax left, as the server's own `text.neutralise_links` leaves it: `[a](b)`
 *  reads `[a] (b)`, `<b:c>` reads `< b:c>`, a `[a]: b` line reads `[a] : b`. */
export function plainText(text: string): string {
  return text
    .replaceAll("](", "] (")
    .replace(/<(?=[A-Za-z][A-Za-z0-9+.-]{1,31}:)/g, "< ")
    .replace(/^( {0,3}\[[^\]\n]*\]):/gm, "$1 :");
}

/** The parts of an LSP `WorkspaceEdit` this guard reads. */
export interface ServerEdit {
  changes?: Record<string, unknown[]>;
  documentChanges?: ({ textDocument: { uri: string } } | { kind: string; uri?: string; oldUri?: string })[];
}

/** Why a `workspace/applyEdit` from the server is refused, or undefined when it edits only the text of
 *  documents being refactored (`refactoring(uri)`: a refactor of that document is running). */
export function editRefusal(edit: ServerEdit, refactoring: (uri: string) => boolean): string | undefined {
  for (const change of edit.documentChanges ?? []) {
    if ("kind" in change) return `the server asked to ${change.kind} a file; refactors only edit text`;
    if (!refactoring(change.textDocument.uri)) return notRefactored(change.textDocument.uri);
  }
  for (const uri of Object.keys(edit.changes ?? {})) {
    if (!refactoring(uri)) return notRefactored(uri);
  }
  return undefined;
}

function notRefactored(uri: string): string {
  return `the server asked to edit ${uri}, which no refactor of yours is rewriting`;
}
