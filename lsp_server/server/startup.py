"""Start-up: get to `initialize` fast.

Most of the server's start-up is importing lsprotocol: attrs builds its 500+ classes and compiles
each one's generated methods from source, every time the process starts. `fast_imports()` keeps
those compiled methods in a cache file (like Python's own .pyc files), keyed by the exact source
and file name attrs generates, so a later start loads them instead of compiling them again. Once
`initialize` is answered, `freeze_after_start()` collects what the import left behind and freezes the rest, so
the collections during refactors do not walk it again.

The cache works by shadowing the builtin `compile` inside the private module `attr._make`, so it is
used only with the attrs versions it was verified with (`VERIFIED_ATTRS`). Any other version starts
without it, says so on stderr, and tests/unit/test_startup.py skips with what to do (a new attrs
release never fails CI; benchmarks/perf.py then reports start-up unjudged). Any problem with the cache
(missing, unreadable, too large, from another Python) only means compiling as usual.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import marshal
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

# attrs versions the patch was verified with (tests/unit/test_startup.py, against the wheel of each): their
# attr._make builds every class's methods with `compile(source, filename, "exec")` called from that
# module, under its `from __future__ import annotations`. Add a version only after running those tests.
VERIFIED_ATTRS = frozenset({"24.3.0", "25.1.0", "25.3.0", "25.4.0", "26.1.0"})

MAX_CACHE_BYTES = 64 << 20  # the cache is a few MB; a larger file is not ours to load
# The marshal format and code objects belong to one Python build.
_HEADER = f"refactor-lsp attrs code cache 2 {sys.implementation.cache_tag} {sys.version}".replace("\n", " ").encode()


def cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "refactor-lsp" / f"attrs-code-{sys.implementation.cache_tag}.marshal"


def _load(path: Path) -> dict[str, bytes]:
    """key → the marshalled code: each is unmarshalled only when attrs asks for it, so the whole
    cache never sits in memory as code objects at once (which would leave the process bigger)."""
    from ..files.safe_read import ReadRefused, read_regular_file

    try:
        data = read_regular_file(path, MAX_CACHE_BYTES)
    except ReadRefused:
        return {}
    header, _, body = data.partition(b"\n")
    if header != _HEADER:
        return {}
    try:
        cache = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    return cache if isinstance(cache, dict) else {}


def _save(path: Path, cache: dict[str, bytes]) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.urandom(8).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(_HEADER + b"\n" + marshal.dumps(cache))
        os.replace(tmp, path)


def attrs_version() -> str | None:
    """The installed attrs' version, from its wheel's `attrs-<version>.dist-info` folder beside the
    `attr` package; None without attrs or without exactly one such folder. Not through
    importlib.metadata: importing that alone takes ~45 ms of the 300 ms start-up budget."""
    try:
        import attr
    except ImportError:  # pragma: no cover - attrs comes with lsprotocol
        return None
    site = os.path.dirname(os.path.dirname(attr.__file__ or ""))
    try:
        with os.scandir(site) as entries:
            found = [e.name for e in entries if e.name.startswith("attrs-") and e.name.endswith(".dist-info")]
    except OSError:
        return None
    return found[0][len("attrs-") : -len(".dist-info")] if len(found) == 1 else None


@contextlib.contextmanager
def fast_imports(path: Path | None = None) -> Iterator[bool]:
    """Import the server's dependencies inside this block. It yields whether attrs' compiled code
    is cached in it (False: an attrs version the patch does not know, or no attrs).

    The cyclic collector is paused inside: building lsprotocol's classes allocates enough to start
    many full collections that find nothing to free (about 80 ms of a 2-core machine's start-up);
    `freeze_after_start()` collects once after `initialize` is answered."""
    make: ModuleType | None
    try:
        import __future__

        import attr._make as make
    except ImportError:  # pragma: no cover - attrs comes with lsprotocol
        make = None
    if make is not None and attrs_version() not in VERIFIED_ATTRS:
        # A version the patch does not know: compile as usual, and say why start-up is slower (stderr:
        # the editor's server log; stdout is the protocol).
        print(
            f"refactor-lsp: attrs {attrs_version()} is not a version the start-up code cache was verified with "
            f"({', '.join(sorted(VERIFIED_ATTRS))}); starting without it",
            file=sys.stderr,
        )
        make = None
    path = path or cache_file()
    cache = _load(path) if make is not None else {}
    used: dict[str, bytes] = {}  # what this start needed: the next cache file (stale entries drop out)
    known = {key.partition("\0")[0] for key in cache}
    missed = False
    if make is not None:
        # compile() inherits the caller's future flags: attrs compiles with those of attr/_make.py.
        annotations = getattr(make, "annotations", None) is __future__.annotations
        flags = __future__.annotations.compiler_flag if annotations else 0

        def compile_cached(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
            if args or kwargs or mode != "exec" or not isinstance(source, str) or not isinstance(filename, str):
                return compile(source, filename, mode, *args, **kwargs)  # not the call attrs makes
            key = f"{filename}\0{hashlib.sha1(source.encode('utf-8', 'surrogatepass')).hexdigest()}"
            nonlocal missed
            data = cache.get(key)
            code: CodeType | None = None
            if data is not None:
                with contextlib.suppress(EOFError, ValueError, TypeError):
                    code = marshal.loads(data)
            if code is None or data is None:
                code = compile(source, filename, mode, flags, dont_inherit=True)
                data = marshal.dumps(code)
                # A class whose code differs at every start (a frozen class's hash seed) is no reason
                # to write the file again.
                missed = missed or filename not in known
            used[key] = data
            return code

        make.compile = compile_cached  # type: ignore[attr-defined]  # shadows the builtin in attr._make only
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield make is not None
    finally:
        if collecting:
            gc.enable()
        if make is not None:
            with contextlib.suppress(AttributeError):
                del make.compile
            if missed:
                _save(path, used)


def freeze_after_start() -> None:
    """After start-up (not before `initialize` is answered: a full collection takes tens of ms):
    collect the import's garbage, then move everything alive to the permanent generation."""
    gc.collect()
    gc.freeze()
