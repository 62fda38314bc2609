"""Languages: how each language's text is read, below any idea of a region.

- `identify`: a file's languageId (the editor's, else a guess from its extension);
- `lexers`: the strings and comments of the brace languages, one compiled pattern per language;
- `headers`: the text before a block's `{`, made flat enough for one pattern per language to read;
- `js`, `c_like`: which blocks are definitions, and of what kind, in JavaScript/TypeScript and in the
  other brace languages.
"""
