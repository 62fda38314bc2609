"""The check before an edit: an answer must not bring an error the code did not have (one home).

- `verify`: `verify_answer`, the check an answer (or a kept subset of its changes) passes before any
  edit, in a thread; the `Problem` a repair mends and the repair's words;
- `syntax`: the first syntax error a region's new text brings (Python's parser, the brace languages'
  brackets, Ruby's and Lua's blocks), errors the document had already not counted;
- `python_newer`: Python newer than the server's, told from code no grammar reads;
- `brackets`: brackets a rewrite breaks, by the same lexers as the scan;
- `command`: your own checker, a command from your user file, run bounded in time, output and children.
"""
