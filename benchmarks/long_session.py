#!/usr/bin/env python3
"""Memory over a long editing session: the server's RSS as a typing session goes on.

    python benchmarks/long_session.py [--changes 30000] [--every 5000] [--tree PATH]

The real `python -m lsp_server` on pipes (lsp_server/testing/lsp_pipe.py) gets a document opened,
then keystrokes (a letter typed and deleted, so the document keeps its size) with a code action
every 50, and, between checkpoints, 100 documents opened and closed and 100 whole-text changes to
a document never opened. At each checkpoint, once the server has answered everything sent, its RSS
(/proc/PID/status). At the end, the server's own count of what it keeps (its debug line at
`shutdown`). `--tree` runs the server from another checkout (e.g. main) for a before/after.
Linux only (RSS from /proc). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from lsp_server.testing.lsp_pipe import ServerPipe, frame, open_session_document, other_documents, typing  # noqa: E402

WARM_UP = 2_000  # changes before the first checkpoint: what a fresh server grows by anyway is done
PING = "refactorLsp/noSuchMethod"  # answered once every message before it is handled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=30_000)
    parser.add_argument("--every", type=int, default=5_000, help="changes between checkpoints")
    parser.add_argument("--tree", type=Path, help="run the server from this checkout (PYTHONPATH)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="refactor-lsp-long-session-"))
    env = {
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    tree = (args.tree or ROOT).resolve()
    env["PYTHONPATH"] = str(tree)
    server = ServerPipe(["-vv"], env, cwd=tree)
    rows: list[tuple[int, int, float]] = []
    try:
        server.send(frame("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, 1))
        assert server.reply(1) is not None, server.stderr_text()
        server.send(frame("initialized", {}) + open_session_document())
        sent, ping = 0, 2
        started = time.monotonic()
        for batch in [WARM_UP] + [args.every] * (args.changes // args.every):
            extra = other_documents(100) if sent else b""
            server.send(typing(batch, sent + 1) + extra + frame(PING, None, ping))
            assert server.reply(ping, timeout=600) is not None, "the server stopped answering"
            sent, ping = sent + batch, ping + 1
            rows.append((sent, server.rss_kib(), time.monotonic() - started))
        server.send(frame("shutdown", None, ping))
        assert server.reply(ping) is not None
        kept = server.kept_at_shutdown(timeout=10)
    finally:
        server.close()
    base = rows[0][1]
    print(f"server from {tree}, Python {sys.version.split()[0]}\n")
    print("| changes | RSS (MB) | since the warm-up (MB) | per change since (bytes) | seconds |")
    print("|---:|---:|---:|---:|---:|")
    for changes, rss, seconds in rows:
        grown = rss - base
        per = f"{grown * 1024 / (changes - WARM_UP):.0f}" if changes > WARM_UP else "-"
        print(f"| {changes:,} | {rss / 1024:.1f} | {grown / 1024:+.1f} | {per} | {seconds:.1f} |")
    print()
    print("kept at shutdown:", ", ".join(f"{n} {name}" for name, n in kept.items()) if kept else "(not said)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
