// Whether the clipboard holds code worth offering to apply: the code action "Apply Clipboard with
// Prediction" shows only then. A cheap, pure test (it runs on every code-action request): some text,
// not too much, on several lines or with code's punctuation, and not a lone word, path or link.

/** The server takes a snippet up to refactor.maxRegionChars (100,000 by default); past it, no offer. */
export const MAX_SNIPPET_CHARS = 100_000;

const CODE_PUNCTUATION = /[(){}[\];=:]|=>|->/;
const LONE_WORD = /^[\w$.-]+$/;
const LINK_OR_PATH = /^(?:[a-z][a-z0-9+.-]*:\/\/|\/|~\/|[A-Za-z]:\\)\S*$/i;

/** The clipboard's text when it looks like code, else undefined. */
export function clipboardCode(text: string | undefined): string | undefined {
  if (!text || text.length > MAX_SNIPPET_CHARS || text.includes("\u0000")) return undefined;
  const trimmed = text.trim();
  if (!trimmed || LONE_WORD.test(trimmed) || LINK_OR_PATH.test(trimmed)) return undefined;
  const lines = trimmed.split(/\r\n|\r|\n/).filter((line) => line.trim());
  if (lines.length >= 2 || CODE_PUNCTUATION.test(trimmed)) return text;
  return undefined;
}
