"""Tests by layer (each folder marks its tests, so `pytest -m unit` and the like select one layer):

- `tests/unit`: modules on their own: no backend, no LSP session;
- `tests/backends`: the pipeline against backends over real HTTP on 127.0.0.1 (the loopback fake,
  recorded streams), and the CLI;
- `tests/lsp`: the server end to end over real LSP (pytest-lsp);
- `tests/editors`: real editors (Neovim, Emacs + eglot, Vim + ALE) driving the server.

Shared here: an isolated home for every test; the loopback fake backend (`fake_backend` for the session,
`fake_fixture(...)` for a module's own, `make_fake(...)` within a test); its settings, for a config file
(`backend_table`, `write_config`) or an editor (`backend_settings`, `editor_settings`); a vLLM fake's
requests less the proposer probe's (`without_probes`). LSP sessions start in tests/lsp_harness.py."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from lsp_server.pipeline.engine import Engine
from lsp_server.proposer import PROBE_KEY
from lsp_server.testing.fake_backend import FakeBackend
from tests.cli_harness import package_logging_kept

LAYERS = ("unit", "backends", "lsp", "editors")
STEP_S = 0.001  # one simulated forward pass: small, so the suite stays fast


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Nothing a test does touches the real home: config and state live in a fresh temporary folder."""
    home = tmp_path_factory.mktemp("home")
    dirs = {"XDG_CONFIG_HOME": home / "config", "XDG_STATE_HOME": home / "state"}
    for name, path in dirs.items():
        path.mkdir()
        monkeypatch.setenv(name, str(path))
    for name in ("REFACTOR_LSP_CONFIG", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return dirs


@pytest.fixture(autouse=True)
def _package_logging_kept() -> Iterator[None]:
    """A test that calls the CLI's `main` in this process (`-v`, `--log-file`) leaves the package's
    logger as it found it: no handler of one test writes to a stream the next one closed."""
    with package_logging_kept():
        yield


@pytest.fixture
async def engine() -> AsyncIterator[Engine]:
    """A fresh engine per test: its own HTTP clients (whose connections belong to the test's event
    loop), its own memory of refused predictions and of the metrics probes."""
    fresh = Engine()
    yield fresh
    await fresh.close()


def fake_fixture(kind: str = "openai", *, scope: str = "module", **settings: Any) -> Any:
    """A fixture of a fake with settings of its own, started once per `scope` and stopped after it:
    `backend = fake_fixture("vllm", context_window=4096)` in a test module. A forward pass costs
    STEP_S unless `step_s` says otherwise."""

    @pytest.fixture(scope=scope)
    def fixture() -> Iterator[FakeBackend]:
        with FakeBackend(kind, **{"step_s": STEP_S, **settings}) as fake:
            yield fake

    return fixture


def without_probes(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests a vLLM fake received less the proposer probe's two (backend/proposer_probe.py): a
    process asks a speculating vLLM server once, before its first refactor there."""
    return [r for r in requests if PROBE_KEY not in (r.get("vllm_xargs") or {})]


# One OpenAI-kind fake for the whole session; it is reset before every test that uses it.
fake_backend = fake_fixture(scope="session")


@pytest.fixture(autouse=True)
def _reset_fake_backend(request: pytest.FixtureRequest) -> None:
    if "fake_backend" in request.fixturenames:
        request.getfixturevalue("fake_backend").reset()


@pytest.fixture
def make_fake() -> Iterator[Any]:
    """A factory for fakes of other kinds or settings: `make_fake("vllm", models=(...))`; stopped after the test."""
    started: list[FakeBackend] = []

    def make(kind: str = "openai", **kwargs: Any) -> FakeBackend:
        kwargs.setdefault("step_s", STEP_S)
        fake = FakeBackend(kind, **kwargs).start()
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.stop()


def closed_port_url() -> str:
    """A loopback URL nobody listens on: a port we opened and closed again."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def backend_table(fake: FakeBackend | None = None, **keys: Any) -> dict[str, Any]:
    """A `[backends.NAME]` table for a fake (its kind, URL and first model), with overrides."""
    table: dict[str, Any] = {}
    if fake is not None:
        table = {"type": fake.kind, "base_url": fake.url, "model": fake.models[0]}
    table.update(keys)
    return table


def backend_settings(fake: FakeBackend, **keys: Any) -> dict[str, Any]:
    """The same table as editor settings, camelCase as editors send them (`keys` snake_case, as in TOML)."""
    return {_camel(key): value for key, value in backend_table(fake, **keys).items()}


def editor_settings(
    fake: FakeBackend,
    *,
    name: str = "fake",
    keys: Mapping[str, Any] | None = None,
    others: Mapping[str, Mapping[str, Any]] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """Editor settings (`initializationOptions`, a `workspace/configuration` answer) whose default backend
    `name` is `fake`: `keys` adds to its table, `others` are more backends, `top` more settings
    (`refactor={"concurrency": 4}`)."""
    backends = {name: backend_settings(fake, **(keys or {})), **(others or {})}
    return {"defaultBackend": name, "backends": backends, **top}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def toml_text(data: Mapping[str, Any]) -> str:
    """A small TOML writer for config files: top-level keys, then tables, then nested tables."""
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []

    def walk(prefix: str, table: Mapping[str, Any]) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping) or k == "headers"}
        if prefix:
            tables.append((prefix, scalars))
        else:
            lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars.items())
        for key, value in table.items():
            if isinstance(value, Mapping) and key != "headers":
                walk(f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key), value)

    walk("", data)
    for name, scalars in tables:
        lines += ["", f"[{name}]", *(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars.items())]
    return "\n".join(lines) + "\n"


def write_config(
    tmp_path: Path,
    *,
    default: str | None = None,
    refactor: Mapping[str, Any] | None = None,
    name: str = "config.toml",
    extra: Mapping[str, Any] | None = None,
    **backends_: FakeBackend | Mapping[str, Any],
) -> Path:
    """Write a user config whose backends are the given fakes (or tables); the first is the default.

    `write_config(tmp_path, fake=fake_backend)` gives one backend named "fake".
    """
    tables = {k: backend_table(v) if isinstance(v, FakeBackend) else dict(v) for k, v in backends_.items()}
    data: dict[str, Any] = {}
    if default or tables:
        data["default_backend"] = default or next(iter(tables))
    data.update(extra or {})
    if tables:
        data["backends"] = tables
    if refactor:
        data["refactor"] = dict(refactor)
    path = tmp_path / name
    path.write_text(toml_text(data), encoding="utf-8")
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its layer, from the folder it lives in."""
    for item in items:
        layer = Path(str(item.fspath)).parent.name
        if layer in LAYERS:
            item.add_marker(getattr(pytest.mark, layer))
