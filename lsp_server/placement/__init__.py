"""Placement: where a snippet written elsewhere (a chat, an agent) goes in a document.

- `snippet`: a snippet read as the scope lexers read a file: its definitions, how they nest, its markers;
- `lazy`: lazy markers (`# ... existing code ...`), comments where the snippet leaves code out;
- `literals`: where a text's strings and comments are, as the language's lexer reads them (a marker is
  never inside one);
- `where`: each definition the snippet names found in the document, one region each (`place_snippet`),
  in linear time, refused past MAX_TARGETS parts before any is looked for, stopped by a cancel;
- `complete`: a complete snippet (no marker, each definition whole) spliced as written, no model asked.
"""
