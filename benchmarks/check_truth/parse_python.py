"""Ground truth for benchmarks/check_corpus.py: whether a Python source parses, by the `ast` of the Python
that runs this (a newer one than the server's, for the code that targets it).

Protocol (stdin, stdout): a line "LENGTH" (UTF-8 bytes), then the source; the answer is one line: "ok", or
"error LINE MESSAGE". Usage: python3.13 parse_python.py
"""

import ast
import sys
import warnings

warnings.simplefilter("ignore")  # an invalid escape is a warning, not an error
stdin, stdout = sys.stdin.buffer, sys.stdout
while header := stdin.readline():
    source = stdin.read(int(header)).decode("utf-8", "surrogatepass")
    try:
        ast.parse(source)
        stdout.write("ok\n")
    except (SyntaxError, ValueError) as exc:
        stdout.write(f"error {getattr(exc, 'lineno', 0) or 0} {str(getattr(exc, 'msg', exc)).replace(chr(10), ' ')}\n")
    stdout.flush()
