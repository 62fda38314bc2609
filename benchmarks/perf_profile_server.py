"""Run the language server under cProfile: `benchmarks/perf.py --profile-server DIR` uses it.

Writes DIR/server-<pid>.prof when the server exits; read it with
`python -m pstats DIR/server-<pid>.prof` (then `sort tottime`, `stats 30`).
"""

from __future__ import annotations

import cProfile
import os
import sys


def main() -> None:
    out = sys.argv[1]
    sys.argv = ["refactor-lsp", *sys.argv[2:]]
    from lsp_server.cli.main import main as serve

    profile = cProfile.Profile()
    try:
        profile.runcall(serve)
    finally:
        profile.dump_stats(os.path.join(out, f"server-{os.getpid()}.prof"))


if __name__ == "__main__":
    main()
