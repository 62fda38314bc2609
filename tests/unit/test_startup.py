"""Start-up: the attrs code cache is used only with the attrs versions it was verified with, and the
lsprotocol classes come out the same with it (cold and warm) as without it.

To verify a new attrs version, run this file against it: every test but the first patches whatever
attrs is installed, so when only the first fails, add the version to `startup.VERIFIED_ATTRS`.
"""

from __future__ import annotations

import gc
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import attr
import attr._make
import pytest

from lsp_server.server import startup
from lsp_server.server.startup import cache_file, fast_imports, freeze_after_start

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: here lsprotocol is imported already, so nothing would be compiled.
# argv: "patched" (the patch forced on, whatever attrs is installed) or "fallback" (forced off), the cache file.
CHILD = r"""
import hashlib, json, sys, types as pytypes
from pathlib import Path

from lsp_server.server import startup
from lsp_server.server.startup import cache_file, fast_imports, freeze_after_start

mode, cache = sys.argv[1], Path(sys.argv[2])
startup.VERIFIED_ATTRS = frozenset({startup.attrs_version()}) if mode == "patched" else frozenset()
with startup.fast_imports(cache) as cached:
    import attr._make
    patched_inside = "compile" in vars(attr._make)
    from lsprotocol import converters, types
import attrs

def code_digest(code):
    # Everything that makes the method what it is, future flags (co_flags) included; nested code too.
    parts = [code.co_code, code.co_flags, code.co_names, code.co_varnames, code.co_filename]
    for const in code.co_consts:
        parts.append(code_digest(const) if isinstance(const, pytypes.CodeType) else repr(const))
    return hashlib.sha1(repr(parts).encode()).hexdigest()

methods = {}
for name in sorted(dir(types)):
    cls = getattr(types, name)
    if not (isinstance(cls, type) and attrs.has(cls)):
        continue
    for method, value in sorted(vars(cls).items()):
        code = getattr(value, "__code__", None)
        if code is not None and code.co_filename.startswith("<attrs generated"):
            methods[f"{name}.{method}"] = code_digest(code)

converter = converters.get_converter()
p = types.Position(line=1, character=2)
try:
    types.Position(line=-1, character=0)
    validated = "no error"
except ValueError as exc:
    validated = str(exc)
params = converter.structure(
    {
        "processId": 1,
        "rootUri": "file:///w",
        "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
        "initializationOptions": {"a": [1, 2]},
    },
    types.InitializeParams,
)
edit = types.TextEdit(range=types.Range(p, attrs.evolve(p, character=5)), new_text="x")
print(json.dumps({
    "cached": cached,
    "patched_inside": patched_inside,
    "patched_after": "compile" in vars(attr._make),
    "methods": methods,
    "position": [repr(p), p == types.Position(1, 2), p != types.Position(1, 3), validated],
    "initialize": [params.process_id, params.root_uri, params.capabilities.general.position_encodings],
    "edit": converter.unstructure(edit),
    "annotations": repr(types.Position.__init__.__annotations__),
}))
"""


@pytest.fixture
def any_attrs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The patch applies to the installed attrs, verified or not (what these tests verify)."""
    monkeypatch.setattr(startup, "VERIFIED_ATTRS", frozenset({startup.attrs_version()}))


def run_child(mode: str, cache: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # a frozen class's __hash__ holds a string hash
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(cache)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_installed_attrs_is_one_the_start_up_patch_knows() -> None:
    installed = importlib.metadata.version("attrs")
    assert startup.attrs_version() == installed, "the cheap version reading disagrees with the package metadata"
    if installed not in startup.VERIFIED_ATTRS:
        # A new attrs release changes nothing here: the server starts without its code cache (it says so
        # on stderr), and CI must not fail for it. The skip says what to do.
        pytest.skip(
            f"attrs {installed} is installed, but lsp_server/server/startup.py patches the private attr._make and was "
            f"verified only with attrs {', '.join(sorted(startup.VERIFIED_ATTRS))}: the server now starts without "
            "its code cache (slower start-up). When the other tests in tests/unit/test_startup.py pass with this "
            "version, add it to VERIFIED_ATTRS; otherwise fix or drop the patch."
        )


def test_the_patched_path_and_the_fallback_build_the_same_working_classes(tmp_path: Path) -> None:
    cache = tmp_path / "attrs-code.marshal"
    cold = run_child("patched", cache)  # compiles, then writes the cache
    written = cache.stat().st_ino, cache.stat().st_mtime_ns  # the file is replaced whole when written
    warm = run_child("patched", cache)  # loads the compiled code from it
    assert (cache.stat().st_ino, cache.stat().st_mtime_ns) == written, "a warm start should not write the cache"
    fallback = run_child("fallback", tmp_path / "unused.marshal")
    assert not (tmp_path / "unused.marshal").exists()

    for result in (cold, warm):
        assert result["cached"] is True
        assert result["patched_inside"] is True
    assert fallback["cached"] is False
    assert fallback["patched_inside"] is False
    for result in (cold, warm, fallback):
        assert result["patched_after"] is False  # the builtin is back in attr._make
        assert result["position"] == ["1:2", True, True, "Position.line should be in range [0:2147483647], but was -1."]
        assert result["initialize"] == [1, "file:///w", ["utf-8", "utf-16"]]
        assert result["edit"] == {
            "range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 5}},
            "newText": "x",
        }
    methods = fallback["methods"]
    assert isinstance(methods, dict) and len(methods) > 1000  # lsprotocol's 500+ classes, a few methods each
    assert cold["methods"] == methods  # the same code, future flags included
    assert warm["methods"] == methods
    assert cold["annotations"] == warm["annotations"] == fallback["annotations"]


def test_an_unknown_attrs_version_compiles_as_usual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(startup, "VERIFIED_ATTRS", frozenset({"0.0.0"}))
    cache = tmp_path / "cache.marshal"
    with startup.fast_imports(cache) as cached:
        assert cached is False
        assert "compile" not in vars(attr._make)

        @attr.define
        class Point:
            x: int
            y: int = 0

    assert Point(1) == Point(1, 0)
    assert not cache.exists()


@pytest.mark.usefixtures("any_attrs")
def test_a_frozen_class_from_the_cache_hashes_and_stays_frozen(tmp_path: Path) -> None:
    cache = tmp_path / "cache.marshal"
    written: list[tuple[int, int]] = []  # (inode, mtime): the cache file is replaced whole when written
    for _ in range(2):  # the second time from the cache, which is then not written again
        with startup.fast_imports(cache) as cached:
            assert cached is True
            assert "compile" in vars(attr._make)

            @attr.frozen
            class Point:
                x: int
                y: int = 0

        assert "compile" not in vars(attr._make)
        assert Point(1) == Point(1, 0) and hash(Point(1)) == hash(Point(1, 0))
        assert repr(Point(2, 3)) == "Point(x=2, y=3)"
        with pytest.raises(attr.exceptions.FrozenInstanceError):
            Point(1).x = 2  # type: ignore[misc]
        written.append((cache.stat().st_ino, cache.stat().st_mtime_ns))
    assert written[0] == written[1]


def test_attrs_version_needs_exactly_one_dist_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "attr"
    package.mkdir()
    monkeypatch.setattr(attr, "__file__", str(package / "__init__.py"))
    assert startup.attrs_version() is None
    (tmp_path / "attrs-26.1.0.dist-info").mkdir()
    assert startup.attrs_version() == "26.1.0"
    (tmp_path / "attrs-25.4.0.dist-info").mkdir()  # a stale copy: which one is imported is unknown
    assert startup.attrs_version() is None


# -- the cache file, and after start-up ----------------------------------------------------------------


def _define(name: str) -> type:
    return attr.define(
        type(name, (), {"__annotations__": {"x": "int", "y": "list[str]"}, "y": attr.field(factory=list)})
    )


@pytest.mark.usefixtures("any_attrs")
def test_fast_imports_caches_attrs_code_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    with fast_imports(path):
        first = _define("CachedThing")
    assert "compile" not in vars(__import__("attr._make", fromlist=["_make"]))
    assert path.is_file() and b"CachedThing" in path.read_bytes()
    stamp = path.stat().st_mtime_ns
    with fast_imports(path):  # the same class again: from the cache, and no need to write the file
        second = _define("CachedThing")
    assert path.stat().st_mtime_ns == stamp
    for cls in (first, second):
        thing = cls(x=1)
        assert thing.x == 1 and thing.y == [] and thing == cls(x=1) and repr(thing).endswith("(x=1, y=[])")
        assert cls.__init__.__annotations__["x"] == "int"  # compiled with attrs' own future flags


@pytest.mark.usefixtures("any_attrs")
@pytest.mark.parametrize("content", [b"", b"garbage", b"refactor-lsp attrs code cache 1 other-python\n\x00"])
def test_a_damaged_cache_file_only_means_compiling(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cache.marshal"
    path.write_bytes(content)
    with fast_imports(path):
        cls = _define("AfterDamage")
    assert cls(x=2).x == 2
    assert path.read_bytes().startswith(b"refactor-lsp attrs code cache ")
    assert b"AfterDamage" in path.read_bytes()


def test_freezing_after_start_leaves_the_collector_on_and_everything_alive_frozen() -> None:
    freeze_after_start()
    assert gc.isenabled() and gc.get_freeze_count() > 0
    gc.unfreeze()


def test_the_cache_lives_under_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_file().parent == tmp_path / "refactor-lsp"


@pytest.mark.parametrize("collecting", [True, False])
def test_the_collector_pauses_inside_the_imports_and_comes_back_as_it_was(tmp_path: Path, collecting: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if collecting else gc.disable)()
        with startup.fast_imports(tmp_path / "cache.marshal"):
            assert not gc.isenabled()
        assert gc.isenabled() is collecting
        with pytest.raises(RuntimeError), startup.fast_imports(tmp_path / "cache.marshal"):
            raise RuntimeError("an import failed")
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()
